/**
 * One deliberately broken trace set per defect ASTRA-sim 2.x crashes, hangs or mis-times on
 * (docs/astra-sim-formats.md Parts B and F); each expects exactly the findings the defect causes, so a false
 * positive fails as surely as a miss.
 */
import { describe, expect, it } from 'vitest';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { formatFinding } from '../../src/check/findings.js';
import { etSchema, type EtNode } from '../../src/writers/chakra-encoding.js';
import { attr, check, coll, comp, recv, send, where, writeTraces } from './traces.js';
import { present } from '../helpers/present.js';

/** The same nodes on every rank of an n-rank set. */
const same = (n: number, nodes: (rank: number) => EtNode[]): EtNode[][] => Array.from({ length: n }, (_, r) => nodes(r));

describe('a clean set', () => {
  it('has no findings: compute, world and group collectives, a send/recv pair, ctrl and data deps', () => {
    const ranks = same(4, (r) => [
      comp(10),
      coll(11, [10]),
      coll(12, [11], { pg: r < 2 ? '1' : '2', type: 7 }),
      ...(r === 0 ? [send(13, 0, 1, 7, 4096, [12])] : r === 1 ? [recv(13, 0, 1, 7, 4096, [12])] : []),
    ]);
    expect(check(ranks, { '1': [0, 1], '2': [2, 3] })).toEqual([]);
  });
});

describe('many findings', () => {
  it('beyond maxFindings are counted by effect, not kept', () => {
    const prefix = writeTraces([[coll(0, [], { size: 0 }), coll(1, [0], { size: 0 }), coll(2, [1], { type: 1 })]]);
    const result = checkTraceSet(findTraceFiles(prefix), undefined, { maxFindings: 1 });
    expect(where(result.findings)).toEqual(['comm-size@0:0']);
    expect(result.omitted).toBe(2);
    expect(result.effects).toEqual({ crash: 1, hang: 0, 'mis-time': 2, misread: 0, 'mixed-set': 0 });
  });
});

describe('dependencies (B.2, B.9)', () => {
  it('a dependency on an id not in the file', () => {
    const findings = check([[comp(0), comp(1, [0, 7])]]);
    expect(where(findings)).toEqual(['unknown-dependency@0:1']);
    expect(findings[0]?.message).toMatch(/id 7/);
  });

  it('a dependency on an id that exists only in another rank file', () => {
    expect(where(check([[comp(0)], [comp(1, [0])]]))).toEqual(['unknown-dependency@1:1']);
  });

  it('duplicate node ids', () => {
    expect(where(check([[comp(4), comp(5, [4]), comp(4)]]))).toEqual(['duplicate-id@0:4']);
  });

  it('a cycle, reported once at its lowest id, and a self-dependency', () => {
    const findings = check([[comp(0), comp(1, [0, 3]), comp(2, [1]), comp(3, [2]), comp(4, [3])], [comp(9, [9])]]);
    expect(where(findings)).toEqual(['dependency-cycle@0:1', 'dependency-cycle@1:9']);
    expect(findings[0]?.message).toMatch(/3 node\(s\): ids 1, 2, 3; 4 node\(s\) of this file never run/);
  });

  it('a cycle hidden in ctrl_deps', () => {
    const { node, metadata } = etSchema();
    const writer = metadata.encodeDelimited(metadata.create({ version: '0.0.4' }));
    node.encodeDelimited(node.create({ id: 1, name: 'a', type: 4, ctrl_deps: [2], duration_micros: 1 }), writer);
    node.encodeDelimited(node.create({ id: 2, name: 'b', type: 4, data_deps: [1], duration_micros: 1 }), writer);
    expect(where(check([writer.finish()]))).toEqual(['dependency-cycle@0:1']);
  });
});

describe('files', () => {
  it('a gap in the rank numbering', () => {
    const findings = check([[coll(0)], undefined, [coll(2)]]);
    expect(where(findings)).toEqual(['missing-file@1']);
  });

  it('a file that is not a trace', () => {
    const good = [coll(0)];
    const findings = check([good, new Uint8Array([0x05, 0x0a, 0x03, 0x30])]);
    expect(where(findings)).toEqual(['unreadable-file@1']);
  });
});

describe('send and receive (B.4, F.1)', () => {
  it('a send without its receive, and a receive without its send', () => {
    const findings = check([[send(0, 0, 1, 5)], [recv(0, 0, 1, 6)]]);
    expect(where(findings)).toEqual(['unmatched-send@0:0', 'unmatched-recv@1:0']);
  });

  it('sizes that differ: both ends unmatched, with the near miss named', () => {
    const findings = check([[send(0, 0, 1, 5, 4096)], [recv(0, 0, 1, 5, 2048)]]);
    expect(where(findings)).toEqual(['unmatched-send@0:0', 'unmatched-recv@1:0']);
    expect(findings[0]?.message).toMatch(/same tag but comm_size 2048/);
  });

  it('a second send on the same key with one receive', () => {
    expect(where(check([[send(0, 0, 1, 5), send(1, 0, 1, 5, 4096, [0])], [recv(0, 0, 1, 5)]]))).toEqual(['unmatched-send@0:1']);
  });

  it("comm_src of a send and comm_dst of a receive must be the file's own rank", () => {
    const findings = check([[send(0, 1, 1, 5)], [recv(0, 0, 0, 5)]]);
    expect(where(findings)).toEqual(['send-src@0:0', 'recv-dst@1:0']);
  });

  it('tags outside 0 .. 499,999,999', () => {
    const findings = check([[send(0, 0, 1, 500_000_000), send(1, 0, 1, -1)], [recv(0, 0, 1, 500_000_000), recv(1, 0, 1, -1)]]);
    expect(where(findings)).toEqual(['comm-tag@0:0', 'comm-tag@0:1', 'comm-tag@1:0', 'comm-tag@1:1']);
  });

  it('a peer rank without a trace file', () => {
    expect(where(check([[send(0, 0, 3, 1)]]))).toEqual(['peer-rank@0:0']);
  });

  it('missing comm_tag, and a zero-byte send', () => {
    const noTag = { ...send(0, 0, 1, 1), attrs: send(0, 0, 1, 1).attrs.filter((a) => a.name !== 'comm_tag') };
    const findings = check([[noTag, send(1, 0, 1, 2, 0)], [recv(1, 0, 1, 2, 0)]]);
    expect(where(findings)).toEqual(['missing-attribute@0:0', 'comm-size@0:1', 'comm-size@1:1']);
  });
});

describe('collectives and comm groups (B.8, F.2)', () => {
  it('pg_name naming a group the file does not have, or with no file at all', () => {
    const ranks = same(2, () => [coll(0, [], { pg: '3' })]);
    expect(where(check(ranks, { '1': [0, 1] }))).toEqual(['unknown-group@0:0', 'unknown-group@1:0']);
    expect(check(ranks)[0]?.message).toMatch(/no comm-groups file was given/);
  });

  it('pg_name naming a group without the rank', () => {
    const findings = check(same(3, () => [coll(0, [], { pg: '1' })]), { '1': [0, 1] });
    expect(where(findings)).toEqual(['not-in-group@2:0']);
  });

  it('pg_name that is not a decimal id', () => {
    expect(where(check([[coll(0, [], { pg: 'tp' })]], { '1': [0] }))).toEqual(['pg-name@0:0']);
  });

  it('a member that lacks a collective of its group hangs the others', () => {
    const ranks = same(4, (r) => [comp(0), coll(1, [0], { pg: '1' }), ...(r === 2 ? [] : [coll(2, [1], { pg: '1' })])]);
    const findings = check(ranks, { '1': [0, 1, 2, 3] });
    expect(where(findings)).toEqual(['collective-missing@2']);
    expect(findings[0]?.message).toMatch(/issues 1 collective\(s\) on group 1, and rank\(s\) 0, 1, 3 issue ALL_REDUCE of 1048576 B \(rank 0 node 2\) as the 2nd/);
  });

  it('a member whose k-th collective differs in type or in size', () => {
    const ranks = same(4, (r) => [coll(0), coll(1, [0], { type: r === 1 ? 2 : 0 }), coll(2, [1], { size: r === 3 ? 512 : 1024 })]);
    const findings = check(ranks);
    expect(where(findings)).toEqual(['collective-mismatch@1:1', 'collective-mismatch@3:2']);
    expect(formatFinding(present(findings[0], 'a finding'))).toMatch(/^rank 1 node 1 \(coll1\): 2nd collective on all NPUs \(no pg_name\) is ALL_GATHER of 1048576 B, but rank\(s\) 0, 2, 3 issue ALL_REDUCE/);
  });

  it('involved_dim takes part in matching only without a group (F.2)', () => {
    const ranks = same(2, (r) => [coll(0, [], { extra: [attr.dims(r === 0, true)] }), coll(1, [0], { pg: '1', extra: [attr.dims(r === 0, true)] })]);
    // A tie: the sequence of the lowest rank is the reference. The group collective (node 1) matches.
    expect(where(check(ranks, { '1': [0, 1] }))).toEqual(['collective-mismatch@1:0']);
  });

  it('collectives are matched in dependency order, not file order', () => {
    // Rank 1 lists the same two collectives in the other order, with dependencies that issue them alike.
    const a = coll(1, [], { size: 100 });
    const b = coll(2, [1], { size: 200 });
    expect(check([[a, b], [b, a]])).toEqual([]);
  });

  it('a member of a group with no collective on it at all', () => {
    const findings = check([[coll(0, [], { pg: '1' })], [comp(0)]], { '1': [0, 1] });
    expect(where(findings)).toEqual(['collective-missing@1']);
  });

  it('group ids must be decimal integers >= 1; listed ranks need trace files', () => {
    const findings = check(same(2, () => [comp(0)]), { '0': [0], x: [1], '2': [0, 5], '3': [1, 1] });
    // JSON object order: integer-like keys first.
    expect(where(findings)).toEqual(['group-id@-', 'group-ranks@-', 'group-ranks@-', 'group-id@-']);
    expect(findings.map((f) => f.message).join('\n')).toMatch(/rank\(s\) 5 have no trace file/);
  });

  it('a groups file whose path contains "empty" is ignored by ASTRA-sim', () => {
    const findings = check(same(1, () => [comp(0)]), { '1': [0] }, { groupsSource: 'traces/empty-groups.json' });
    expect(where(findings)).toEqual(['groups-file@-']);
  });
});

describe('sizes, types and compute nodes (B.7, B.8, F.1)', () => {
  it('zero and negative collective sizes', () => {
    const findings = check([[coll(0, [], { size: 0 }), coll(1, [0], { size: -8 })]]);
    expect(where(findings)).toEqual(['comm-size@0:0', 'comm-size@0:1']);
    expect(findings.map((f) => f.effect)).toEqual(['mis-time', 'crash']);
  });

  it('comm types other than the four simulated ones; BROADCAST is only replayed', () => {
    const findings = check([[coll(0, [], { type: 1 }), coll(1, [0], { type: 5 }), coll(2, [1], { type: 9 })]]);
    expect(where(findings)).toEqual(['comm-type@0:0', 'comm-type@0:1', 'comm-type@0:2']);
    expect(findings.map((f) => f.effect)).toEqual(['crash', 'mis-time', 'crash']);
    expect(findings[0]?.message).toMatch(/REDUCE/);
  });

  it('compute nodes that do no work: num_ops 0, tensor_size 0, 0 us without num_ops; CPU ops are replayed', () => {
    const base = comp(0);
    const noOps = { ...base, id: 1, attrs: [attr.cpu(), attr.i64('num_ops', 0), attr.u64('tensor_size', 64)] };
    const noBytes = { ...base, id: 2, attrs: [attr.cpu(), attr.i64('num_ops', 10), attr.u64('tensor_size', 0)] };
    const nothing = { ...base, id: 3, durationMicros: 0, attrs: [attr.cpu()] };
    const cpuOp = { ...base, id: 4, attrs: [attr.cpu(true), attr.i64('num_ops', 0), attr.u64('tensor_size', 0)] };
    const findings = check([[base, noOps, noBytes, nothing, cpuOp]]);
    expect(where(findings)).toEqual(['no-work@0:1', 'no-work@0:2', 'no-work@0:3']);
    expect(findings.map((f) => f.effect)).toEqual(['crash', 'hang', 'mis-time']);
  });
});

describe('roofline timing (B.7, F.1)', () => {
  // F.1's example: num_ops 500 at peak-perf 1 TFLOPS is 0.5 ns, truncated to a 0 ns event.
  const node = (id: number, ops: number, bytes: number): EtNode => ({ ...comp(id, id > 0 ? [id - 1] : []), attrs: [attr.cpu(), attr.i64('num_ops', ops), attr.u64('tensor_size', bytes)] });
  const nodes = [node(0, 500, 1), node(1, 1000, 1), node(2, 500, 1e6)];

  it('compute nodes that last 0 ns at the given peak-perf', () => {
    expect(check([nodes])).toEqual([]);
    const findings = check([nodes], undefined, { roofline: { peakTflops: 1 } });
    expect(where(findings)).toEqual(['no-work@0:0', 'no-work@0:2']);
    expect(findings[0]?.effect).toBe('crash');
  });

  it('a memory-bound node lasts longer: 500 ops over 10^6 B at 1600 GB/s is 625 ns', () => {
    expect(where(check([nodes], undefined, { roofline: { peakTflops: 1, localMemGBps: 1600 } }))).toEqual(['no-work@0:0']);
  });
});

describe('attributes (B.4, B.5)', () => {
  const wrongKinds: [string, EtNode][] = [
    ['is_cpu_op', { ...comp(0), attrs: [attr.i64('is_cpu_op', 0), attr.i64('num_ops', 1), attr.u64('tensor_size', 1)] }],
    ['num_ops', { ...comp(0), attrs: [attr.cpu(), attr.u64('num_ops', 1), attr.u64('tensor_size', 1)] }],
    ['tensor_size', { ...comp(0), attrs: [attr.cpu(), attr.i64('num_ops', 1), attr.i64('tensor_size', 1)] }],
    ['comm_type', { ...coll(0), attrs: [attr.cpu(), attr.i32('comm_type', 0), attr.i64('comm_size', 8)] }],
    ['comm_size', { ...coll(0), attrs: [attr.cpu(), attr.i64('comm_type', 0), attr.u64('comm_size', 8)] }],
    ['comm_priority', coll(0, [], { extra: [attr.i64('comm_priority', 1)] })],
    ['pg_name', coll(0, [], { extra: [attr.i64('pg_name', 0)] })],
    ['involved_dim', coll(0, [], { extra: [attr.i64('involved_dim', 1)] })],
  ];
  for (const [name, node] of wrongKinds) {
    it(`${name} stored in another oneof member`, () => {
      const findings = check([[node]]);
      expect(where(findings)).toEqual(['attribute-kind@0:0']);
      expect(findings[0]?.message).toContain(name);
      expect(findings[0]?.effect).toBe(name === 'involved_dim' ? 'crash' : 'misread');
    });
  }

  it('comm_src, comm_dst and comm_tag stored as int64_val', () => {
    const s = send(0, 0, 1, 5);
    const wide = { ...s, attrs: s.attrs.map((a) => (a.name.startsWith('comm_') && a.name !== 'comm_size' ? attr.i64(a.name, a.value.value as number) : a)) };
    const findings = check([[wide], [recv(0, 0, 1, 5)]]);
    expect(where(findings)).toEqual(['attribute-kind@0:0', 'attribute-kind@0:0', 'attribute-kind@0:0']);
  });

  it('is_cpu_op true on a communication node', () => {
    const node = { ...coll(0), attrs: [attr.cpu(true), attr.i64('comm_type', 0), attr.i64('comm_size', 8)] };
    expect(where(check([[node]]))).toEqual(['cpu-op-comm@0:0']);
  });

  it('collectives without comm_type or comm_size', () => {
    const noType = { ...coll(0), attrs: [attr.cpu(), attr.i64('comm_size', 8)] };
    const noSize = { ...coll(1, [0]), attrs: [attr.cpu(), attr.i64('comm_type', 0)] };
    const findings = check([[noType, noSize]]);
    expect(where(findings)).toEqual(['missing-attribute@0:0', 'missing-attribute@0:1']);
    expect(findings[0]?.message).toMatch(/without comm_type$/);
  });

  it('involved_dim longer or shorter than the network has dimensions; unused with a pg_name', () => {
    const ranks = same(2, () => [coll(0, [], { extra: [attr.dims(true, false)] }), coll(1, [0], { extra: [attr.dims(true)] }), coll(2, [1], { pg: '1', extra: [attr.dims(true, true, true)] })]);
    expect(check(ranks, { '1': [0, 1] })).toEqual([]);
    const findings = check(ranks, { '1': [0, 1] }, { networkDims: 2 });
    expect(where(findings)).toEqual(['involved-dim@0:1', 'involved-dim@1:1']);
    expect(findings[0]?.message).toMatch(/1 entries for a 2-dimension network/);
  });
});
