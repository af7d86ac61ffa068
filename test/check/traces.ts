/** Small trace sets for the checker's tests, written with the project's own .et encoder. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkTraces, findTraceFiles, type CheckOptions } from '../../src/check/check-traces.js';
import type { Finding } from '../../src/check/findings.js';
import { encodeEtFile, type EtAttr, type EtNode } from '../../src/writers/chakra-encoding.js';

const root = mkdtempSync(join(tmpdir(), 'modtrans-check-'));
let sets = 0;

export const attr = {
  cpu: (value = false): EtAttr => ({ name: 'is_cpu_op', value: { kind: 'bool_val', value } }),
  i64: (name: string, value: number): EtAttr => ({ name, value: { kind: 'int64_val', value } }),
  i32: (name: string, value: number): EtAttr => ({ name, value: { kind: 'int32_val', value } }),
  u64: (name: string, value: number): EtAttr => ({ name, value: { kind: 'uint64_val', value } }),
  str: (name: string, value: string): EtAttr => ({ name, value: { kind: 'string_val', value } }),
  dims: (...value: boolean[]): EtAttr => ({ name: 'involved_dim', value: { kind: 'bool_list', value } }),
};

/** A compute node that does work in both timing modes (B.7). */
export function comp(id: number, deps: number[] = [], name = `comp${id}`): EtNode {
  return { id, name, type: 'COMP_NODE', dataDeps: deps, durationMicros: 5, attrs: [attr.cpu(), attr.i64('num_ops', 1000), attr.u64('tensor_size', 64)] };
}

/** A collective: ALL_REDUCE (0) of 1 MiB on every NPU unless told otherwise. */
export function coll(id: number, deps: number[] = [], o: { type?: number; size?: number; pg?: string; extra?: EtAttr[] } = {}): EtNode {
  const attrs = [attr.cpu(), attr.i64('comm_type', o.type ?? 0), attr.i64('comm_size', o.size ?? 1 << 20)];
  if (o.pg !== undefined) attrs.push(attr.str('pg_name', o.pg));
  return { id, name: `coll${id}`, type: 'COMM_COLL_NODE', dataDeps: deps, durationMicros: 0, attrs: [...attrs, ...(o.extra ?? [])] };
}

export function send(id: number, src: number, dst: number, tag: number, size = 4096, deps: number[] = []): EtNode {
  return { id, name: `send${id}`, type: 'COMM_SEND_NODE', dataDeps: deps, durationMicros: 0, attrs: [attr.cpu(), attr.i32('comm_src', src), attr.i32('comm_dst', dst), attr.i32('comm_tag', tag), attr.i64('comm_size', size)] };
}

export function recv(id: number, src: number, dst: number, tag: number, size = 4096, deps: number[] = []): EtNode {
  return { ...send(id, src, dst, tag, size, deps), name: `recv${id}`, type: 'COMM_RECV_NODE' };
}

/** Writes PREFIX.<rank>.et for each given rank (undefined = no file) into a fresh folder. */
export function writeTraces(ranks: (EtNode[] | Uint8Array | undefined)[], groups?: unknown, groupsName = 'set.comm-groups.json'): string {
  const dir = join(root, `set${sets++}`);
  mkdirSync(dir);
  const prefix = join(dir, 'set');
  ranks.forEach((nodes, rank) => {
    if (nodes !== undefined) writeFileSync(`${prefix}.${rank}.et`, nodes instanceof Uint8Array ? nodes : encodeEtFile(nodes));
  });
  if (groups !== undefined) writeFileSync(join(dir, groupsName), JSON.stringify(groups));
  return prefix;
}

/** Writes the set and checks it in-process. */
export function check(ranks: (EtNode[] | Uint8Array | undefined)[], groups?: unknown, options: CheckOptions = {}): Finding[] {
  return checkTraces(findTraceFiles(writeTraces(ranks)), groups, options);
}

/** `kind@rank:node` of each finding, for compact expectations. */
export const where = (findings: Finding[]): string[] => findings.map((f) => `${f.kind}@${f.rank ?? '-'}${f.node ? `:${f.node.id}` : ''}`);
