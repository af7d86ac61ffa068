/**
 * The .et encoder against ASTRA-sim's own files and docs/astra-sim-formats.md's byte vectors (B.6, B.10):
 * the shipped microbenchmark traces are reproduced byte for byte from a one-layer MICRO workload.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeEtFile, encodeEtFile, type EtAttr, type EtNode } from '../../src/writers/chakra-encoding.js';
import { ET_DEF_PROTO } from '../../src/writers/chakra-et-def.js';
import { converterGraph } from '../../src/schedule/converter-graph.js';
import { microLayerTable } from '../../src/schedule/layer-table.js';
import { writeChakra } from '../../src/writers/chakra.js';
import { fixturePath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const ascii = (s: string): string => Buffer.from(s, 'ascii').toString('hex');

/** Bytes of one node message (without the metadata and length prefixes). */
function nodeBytes(node: Partial<EtNode>): string {
  const full: EtNode = { id: 0, name: '', type: 'COMP_NODE', dataDeps: [], durationMicros: 0, attrs: [], ...node };
  const file = encodeEtFile([full], '');
  // File = 00 (empty metadata) + varint length + node.
  const bytes = file.subarray(1);
  const len = present(bytes[0], 'length prefix') < 0x80 ? 1 : 2;
  return hex(bytes.subarray(len));
}

describe('Chakra schema', () => {
  it('is et_def.proto verbatim', () => {
    expect(ET_DEF_PROTO.trim()).toBe(readFileSync(fixturePath('astra-sim/et_def.proto'), 'utf8').trim());
  });
});

describe('ASTRA-sim microbenchmark traces (8 NPUs, 1 MiB)', () => {
  const cases = [
    ['all_reduce', 'ALLREDUCE'],
    ['all_gather', 'ALLGATHER'],
    ['reduce_scatter', 'REDUCESCATTER'],
    ['all_to_all', 'ALLTOALL'],
  ] as const;
  for (const [folder, type] of cases) {
    it(`${folder}: all 8 ranks byte for byte`, () => {
      const workload = microLayerTable({ type, bytes: 1_048_576 }, 8);
      const { files } = writeChakra(converterGraph(workload, { passes: 1, micro: true }), `out/${folder}`, { commNodeName: `${folder}_8npus_1MB` });
      expect(files.map((f) => f.path)).toEqual(Array.from({ length: 8 }, (_, r) => `out/${folder}.${r}.et`));
      files.forEach((f, rank) => {
        const reference = readFileSync(fixturePath(`astra-sim/et_examples/microbenchmarks/${folder}/8npus_1MB/${folder}.${rank}.et`));
        expect(hex(f.bytes)).toBe(hex(reference));
      });
    });
  }

  it('decodes the reference files to the documented content', () => {
    const d = decodeEtFile(readFileSync(fixturePath('astra-sim/et_examples/microbenchmarks/all_reduce/8npus_1MB/all_reduce.3.et')));
    expect(d.version).toBe('0.0.4');
    expect(d.nodes).toHaveLength(1);
    expect(d.nodes[0]).toMatchObject({ id: 3, name: 'all_reduce_8npus_1MB', type: 'COMM_COLL_NODE' });
  });
});

describe('byte vectors of docs/astra-sim-formats.md B.6 and B.10', () => {
  const attr = (name: string, value: EtAttr['value']): EtAttr => ({ name, value });

  it('writes zero-valued oneof members: is_cpu_op = false and comm_type = ALL_REDUCE', () => {
    const bytes = nodeBytes({ type: 'COMM_COLL_NODE', attrs: [attr('is_cpu_op', { kind: 'bool_val', value: false }), attr('comm_type', { kind: 'int64_val', value: 0 })] });
    expect(bytes).toBe(`1807` + `520e0a09${ascii('is_cpu_op')}d80100` + `520d0a09${ascii('comm_type')}4800`);
  });

  it('omits id 0 and duration 0 but writes them when non-zero', () => {
    expect(nodeBytes({})).toBe('1804');
    expect(nodeBytes({ id: 3, durationMicros: 1000 })).toBe('0803' + '1804' + '38e807');
  });

  it('packs data_deps', () => {
    expect(nodeBytes({ dataDeps: [0, 300] })).toBe('1804' + '2a0300ac02');
  });

  it('encodes num_ops as int64_val, tensor_size as uint64_val, involved_dim as bool_list, pg_name as string_val', () => {
    const numOps = nodeBytes({ attrs: [attr('num_ops', { kind: 'int64_val', value: 1e12 })] });
    expect(numOps).toContain(`${ascii('num_ops')}4880a094a58d1d`);
    const tensor = nodeBytes({ attrs: [attr('tensor_size', { kind: 'uint64_val', value: 1e9 })] });
    expect(tensor).toContain(`${ascii('tensor_size')}688094ebdc03`);
    const dims = nodeBytes({ attrs: [attr('involved_dim', { kind: 'bool_list', value: [true, false] })] });
    expect(dims).toBe('1804' + `52150a0c${ascii('involved_dim')}e201040a020100`);
    const pg = nodeBytes({ attrs: [attr('pg_name', { kind: 'string_val', value: '1' })] });
    expect(pg).toContain('ea010131');
  });

  it('prefixes a 226-byte message with e2 01', () => {
    const name = 'x'.repeat(226 - 2 - 3); // 12 e0 01 <name> + 18 04 = 226 bytes
    const file = encodeEtFile([{ id: 0, name, type: 'COMP_NODE', dataDeps: [], durationMicros: 0, attrs: [] }], '');
    expect(hex(file.subarray(1, 3))).toBe('e201');
  });
});
