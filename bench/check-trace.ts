/**
 * Speed of `check-trace` on a large synthetic trace set: RANKS files of about NODES nodes each
 * (compute chains, world all-reduces, a ring of send/recv pairs, one comm group per 8 ranks).
 * Run: `node --import tsx bench/check-trace.ts [RANKS] [NODES]` (defaults 1024, 10000). The files
 * are written once to $TMPDIR/modtrans-check-bench-RANKS-NODES/ and reused.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkTraceSet, findTraceFiles } from '../src/check/check-traces.js';
import { encodeEtFile, type EtAttr, type EtNode } from '../src/writers/chakra-encoding.js';

const ranks = Number(process.argv[2] ?? 1024);
const nodesPerRank = Number(process.argv[3] ?? 10_000);
const dir = join(tmpdir(), `modtrans-check-bench-${ranks}-${nodesPerRank}`);
const prefix = join(dir, 'synthetic');
const groupSize = 8;

const i64 = (name: string, value: number): EtAttr => ({ name, value: { kind: 'int64_val', value } });
const i32 = (name: string, value: number): EtAttr => ({ name, value: { kind: 'int32_val', value } });
const cpu: EtAttr = { name: 'is_cpu_op', value: { kind: 'bool_val', value: false } };

function rankNodes(rank: number): EtNode[] {
  const nodes: EtNode[] = [];
  const add = (n: Omit<EtNode, 'id' | 'dataDeps'>, deps: number[]): number => {
    nodes.push({ ...n, id: nodes.length, dataDeps: deps });
    return nodes.length - 1;
  };
  let last = -1;
  for (let layer = 0; nodes.length < nodesPerRank; layer++) {
    const deps = last < 0 ? [] : [last];
    const comp = add({ name: `COMP_NODE_l${layer}`, type: 'COMP_NODE', durationMicros: 5, attrs: [cpu, i64('num_ops', 1000 + layer), { name: 'tensor_size', value: { kind: 'uint64_val', value: 4096 } }] }, deps);
    const group = layer % 4 === 0 ? [{ name: 'pg_name', value: { kind: 'string_val' as const, value: String(1 + Math.floor(rank / groupSize)) } }] : [];
    add({ name: `COMM_COLL_NODE_l${layer}`, type: 'COMM_COLL_NODE', durationMicros: 0, attrs: [cpu, i64('comm_type', 0), i64('comm_size', 1 << 20), ...group] }, [comp]);
    last = comp;
    if (layer % 25 === 0) {
      const next = (rank + 1) % ranks;
      const prev = (rank + ranks - 1) % ranks;
      add({ name: `COMM_SEND_NODE_l${layer}`, type: 'COMM_SEND_NODE', durationMicros: 0, attrs: [cpu, i32('comm_src', rank), i32('comm_dst', next), i32('comm_tag', layer), i64('comm_size', 65536)] }, [comp]);
      last = add({ name: `COMM_RECV_NODE_l${layer}`, type: 'COMM_RECV_NODE', durationMicros: 0, attrs: [cpu, i32('comm_src', prev), i32('comm_dst', rank), i32('comm_tag', layer), i64('comm_size', 65536)] }, [comp]);
    }
  }
  return nodes;
}

if (!existsSync(`${prefix}.${ranks - 1}.et`)) {
  mkdirSync(dir, { recursive: true });
  const started = performance.now();
  const groups: Record<string, number[]> = {};
  for (let g = 0; g < ranks / groupSize; g++) groups[String(g + 1)] = Array.from({ length: groupSize }, (_, k) => g * groupSize + k);
  writeFileSync(`${prefix}.comm-groups.json`, JSON.stringify(groups));
  for (let r = 0; r < ranks; r++) writeFileSync(`${prefix}.${r}.et`, encodeEtFile(rankNodes(r)));
  process.stderr.write(`wrote ${ranks} files to ${dir} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

const { readFileSync } = await import('node:fs');
const cpuBefore = process.cpuUsage();
const started = performance.now();
const result = checkTraceSet(findTraceFiles(prefix), JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8')), { groupsSource: `${prefix}.comm-groups.json` });
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpuBefore);
const cpuSeconds = (used.user + used.system) / 1e6;
const { stats } = result;
process.stdout.write(
  `check-trace: ${stats.files} files, ${stats.nodes} nodes, ${stats.collectives} collectives, ${stats.sends} sends / ${stats.recvs} recvs, ` +
    `${result.findings.length} findings in ${seconds.toFixed(1)} s wall, ${cpuSeconds.toFixed(1)} s CPU (${((stats.nodes / seconds) / 1e6).toFixed(2)} M nodes/s), ` +
    `heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB\n`,
);
