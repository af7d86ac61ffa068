/**
 * Chakra traces of real workloads: decoded with the schema, attribute kinds of docs/astra-sim-formats.md B.5,
 * one file per rank, unique ids, in-file dependencies, the converter's graph shapes (Part D) and
 * compute that adds up to the text workload's through the clock.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../src/cost/hardware.js';
import { analyseModel, createCostModel, workloadOf, type AnalysedModel } from '../../src/pipeline.js';
import type { Collective, ParallelConfig, Parallelism } from '../../src/plan/legacy.js';
import type { LayerTable as Workload, LayerTableRow as WorkloadLayer } from '../../src/schedule/types.js';
import { writeAstraText } from '../../src/writers/astra-text.js';
import { decodedAttr, decodeEtFile, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { involvedDims } from '../../src/writers/chakra-graph.js';
import { converterGraph } from '../../src/schedule/converter-graph.js';
import { buildChakraTraces as tracesOfGraph, type ChakraOptions, chakraToJson, writeChakra as writeGraph } from '../../src/writers/chakra.js';

/** The table's converter graph (schedule/) serialized by the writer, as translate --chakra-dims does. */
type GraphAndTraceOptions = ChakraOptions & { passes?: number; micro?: boolean };
const graphOf = (w: Workload, o: GraphAndTraceOptions) => converterGraph(w, { passes: o.passes ?? 1, micro: o.micro ?? false });
const buildChakraTraces = (w: Workload, o: GraphAndTraceOptions = {}) => tracesOfGraph(graphOf(w, o), o);
const writeChakra = (w: Workload, prefix: string, o: GraphAndTraceOptions = {}) => writeGraph(graphOf(w, o), prefix, o);
import { fixturePath, modelPath } from '../helpers/models.js';
import { present } from '../helpers/present.js';

const NONE: Collective = { type: 'NONE', bytes: 0, group: 'all' };

function layer(name: string, ns: [number, number, number], comms: Partial<Pick<WorkloadLayer, 'fwdComm' | 'igComm' | 'wgComm'>> = {}): WorkloadLayer {
  return { name, fwdCycles: ns[0], igCycles: ns[1], wgCycles: ns[2], updateCycles: 0, fwdComm: NONE, igComm: NONE, wgComm: NONE, ...comms };
}

function handWorkload(parallelism: Parallelism, layers: WorkloadLayer[], npus = 2): Workload {
  const mpGroup = parallelism === 'DATA' ? 1 : parallelism === 'MODEL' ? npus : 2;
  return {
    config: { parallelism, npus, mpGroup, dtype: 'fp32', params: 'all' },
    split: { dataWays: npus / mpGroup, modelWays: mpGroup },
    clockMHz: 1000, // 1 cycle = 1 ns
    hardware: 'test',
    costModel: 'test',
    layers,
  };
}

const decodeAll = (w: Workload, opts = {}): DecodedNode[][] => writeChakra(w, 'x', opts).files.map((f) => decodeEtFile(f.bytes).nodes);
const byName = (nodes: DecodedNode[]): Map<string, DecodedNode> => new Map(nodes.map((n) => [n.name, n]));
/** The decoded nodes of one rank's file. */
const rankNodes = (w: Workload, r: number, opts = {}): DecodedNode[] => present(decodeAll(w, opts)[r], `rank ${r}`);
/** The node of that name, or a failed test naming it. */
const named = (m: Map<string, DecodedNode>, name: string): DecodedNode => present(m.get(name), name);
const found = (ns: DecodedNode[], name: string): DecodedNode => present(ns.find((n) => n.name === name), name);
/** A numeric attribute's value, or a failed test naming it. */
const attrValue = (n: DecodedNode, key: string): number => present(decodedAttr(n, key), `${key} of ${n.name}`).value as number;

describe('ResNet-50, DATA on 8 NPUs', () => {
  let analysed: AnalysedModel;
  let workload: Workload;
  const config: ParallelConfig = { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' };

  beforeAll(async () => {
    analysed = analyseModel(modelPath('resnet50'));
    const profile = await loadHardwareProfile('tpu-256');
    workload = workloadOf(analysed, await createCostModel(profile, 'ideal'), config);
  });

  it('has one decodable file per rank, unique ids and only in-file, earlier dependencies', () => {
    const { files } = writeChakra(workload, 'out/resnet50');
    expect(files.map((f) => f.path)).toEqual(Array.from({ length: 8 }, (_, r) => `out/resnet50.${r}.et`));
    const allIds = new Set<number>();
    for (const f of files) {
      const { version, nodes } = decodeEtFile(f.bytes);
      expect(version).toBe('0.0.4');
      const ids = new Set(nodes.map((n) => n.id));
      expect(ids.size).toBe(nodes.length);
      const seen = new Set<number>();
      for (const n of nodes) {
        expect(n.ctrl_deps).toEqual([]);
        for (const d of n.data_deps) expect(seen.has(d)).toBe(true); // in this file, emitted before
        seen.add(n.id);
        allIds.add(n.id);
      }
      // 54 FWD + 54 BWD_WG + 53 BWD_IG + 54 weight-gradient all-reduces (every layer has weights).
      expect(nodes).toHaveLength(54 * 4 - 1);
    }
    expect(allIds.size).toBe(8 * (54 * 4 - 1));
  });

  it('uses the attribute kinds ASTRA-sim reads (B.5)', () => {
    const nodes = rankNodes(workload, 3);
    for (const n of nodes) {
      expect(decodedAttr(n, 'is_cpu_op')).toEqual({ kind: 'bool_val', value: false });
      if (n.type === 'COMP_NODE') {
        expect(decodedAttr(n, 'num_ops')?.kind).toBe('int64_val');
        expect(decodedAttr(n, 'tensor_size')?.kind).toBe('uint64_val');
      } else {
        expect(n.type).toBe('COMM_COLL_NODE');
        expect(decodedAttr(n, 'comm_type')).toEqual({ kind: 'int64_val', value: 0 });
        expect(decodedAttr(n, 'comm_size')?.kind).toBe('int64_val');
        expect(decodedAttr(n, 'involved_dim')).toBeUndefined(); // DATA spans every dimension
      }
    }
    const sizes = nodes.filter((n) => n.type === 'COMM_COLL_NODE').map((n) => attrValue(n, 'comm_size'));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(workload.layers.reduce((a, l) => a + l.wgComm.bytes, 0));
  });

  it('num_ops is 2 x the MACs of the pass on one replica (each runs its own sample)', () => {
    const nodes = byName(rankNodes(workload, 0));
    const conv1 = present(analysed.layers[0], 'layer 0');
    // conv1 at batch 1: 112 x 112 output positions, 64 filters of 3 x 7 x 7.
    expect(decodedAttr(named(nodes, `COMP_NODE_${conv1.name}_FWD`), 'num_ops')?.value).toBe(2 * 112 * 112 * 64 * 3 * 7 * 7);
  });

  it('compute durations add up to the text workload compute time through the clock', () => {
    // Text workload in ns; DATA mode has no BWD_IG node for layer 0 (as Chakra's converter).
    const rows = writeAstraText(workload, 'ns').trim().split('\n').slice(2).map((l) => l.split('\t'));
    const textNs = rows.reduce((a, c, i) => a + Number(c[2]) + (i > 0 ? Number(c[5]) : 0) + Number(c[8]), 0);
    const nodes = rankNodes(workload, 0).filter((n) => n.type === 'COMP_NODE');
    expect(nodes).toHaveLength(54 * 3 - 1);
    const replayMicros = nodes.reduce((a, n) => a + n.duration_micros, 0);
    // Each node rounds to the nearest µs: at most 0.5 µs off each.
    expect(Math.abs(replayMicros * 1000 - textNs)).toBeLessThanOrEqual(500 * nodes.length);
    const traces = buildChakraTraces(workload);
    expect(traces.rounding.exactNs).toBe(textNs);
    expect(traces.rounding.computeNodes).toBe(nodes.length);
    // Roofline timing reproduces every node's ns exactly: floor(num_ops / 1000) with peak-perf 1 TFLOPS.
    const roofline = rankNodes(workload, 0, { timing: 'roofline' }).filter((n) => n.type === 'COMP_NODE');
    const rooflineNs = roofline.reduce((a, n) => {
      const ops = attrValue(n, 'num_ops');
      const bytes = attrValue(n, 'tensor_size');
      const perf = Math.min(2 * 1e9 * (ops / bytes), 1 * 1e12); // local-mem-bw 2 GB/s: still compute-bound
      return a + Math.floor((ops / perf) * 1e9);
    }, 0);
    expect(rooflineNs).toBe(textNs);
  });

  it('the JSON dump lists the same nodes per rank', () => {
    const traces = buildChakraTraces(workload);
    const doc = JSON.parse(chakraToJson(traces)) as { ranks: { rank: number; nodes: { id: number; attr: Record<string, Record<string, unknown>> }[] }[] };
    expect(doc.ranks).toHaveLength(8);
    expect(doc.ranks[2]?.nodes.map((n) => n.id)).toEqual(present(traces.ranks[2], 'rank 2').map((n) => n.id));
    expect(doc.ranks[0]?.nodes[0]?.attr['is_cpu_op']).toEqual({ bool_val: false });
  });
});

describe('graph shapes of Chakra\'s text converter (docs/astra-sim-formats.md Part D)', () => {
  it('DATA: the worked example D.7 (ids, order, deps)', () => {
    const w = handWorkload('DATA', [
      layer('L0', [100_000, 200_000, 300_000], { wgComm: { type: 'ALLREDUCE', bytes: 1_048_576, group: 'all' } }),
      layer('L1', [1_000_000, 2_000_000, 3_000_000], { wgComm: { type: 'ALLREDUCE', bytes: 2_097_152, group: 'all' } }),
    ]);
    const nodes = rankNodes(w, 0);
    expect(nodes.map((n) => [n.id, n.name, n.duration_micros, n.data_deps])).toEqual([
      [0, 'COMP_NODE_L0_FWD', 100, []],
      [1, 'COMP_NODE_L1_FWD', 1000, [0]],
      [2, 'COMP_NODE_L1_BWD_WG', 3000, [1]],
      [3, 'COMM_COLL_NODE_L1_WG_ALLREDUCE', 0, [2]],
      [4, 'COMP_NODE_L1_BWD_IG', 2000, [2]],
      [5, 'COMP_NODE_L0_BWD_WG', 300, [4]],
      [6, 'COMM_COLL_NODE_L0_WG_ALLREDUCE', 0, [5]],
    ]);
    // The next file continues the id counter (7 nodes per file).
    expect(rankNodes(w, 1).map((n) => n.id)).toEqual([7, 8, 9, 10, 11, 12, 13]);
  });

  it('DATA with two passes: each forward waits for its layer\'s all-reduce of the previous pass', () => {
    const w = handWorkload('DATA', [
      layer('L0', [1000, 1000, 1000], { wgComm: { type: 'ALLREDUCE', bytes: 64, group: 'all' } }),
      layer('L1', [1000, 1000, 1000], { wgComm: NONE }), // skipped: falls back to BWD_WG
    ]);
    const nodes = rankNodes(w, 0, { passes: 2 });
    expect(nodes).toHaveLength(12);
    const pass1 = nodes.slice(6);
    const first = nodes.slice(0, 6);
    const id = (ns: DecodedNode[], name: string): number => found(ns, name).id;
    expect(pass1[0]?.data_deps).toEqual([id(first, 'COMM_COLL_NODE_L0_WG_ALLREDUCE')]);
    expect(pass1[1]?.data_deps).toEqual([id(pass1, 'COMP_NODE_L0_FWD'), id(first, 'COMP_NODE_L1_BWD_WG')]);
  });

  it('MODEL: 29 nodes for a 6-layer MLP with deps as D.4', () => {
    const ag: Collective = { type: 'ALLGATHER', bytes: 1000, group: 'all' };
    const rs: Collective = { type: 'REDUCESCATTER', bytes: 2000, group: 'all' };
    const w = handWorkload('MODEL', Array.from({ length: 6 }, (_, i) => layer(`L${i}`, [1000, 1000, 1000], { fwdComm: ag, igComm: i > 0 ? rs : NONE })), 4);
    const nodes = rankNodes(w, 0);
    expect(nodes).toHaveLength(29);
    const m = byName(nodes);
    const id = (name: string): number => named(m, name).id;
    expect(named(m, 'COMP_NODE_L1_FWD').data_deps).toEqual([id('COMM_COLL_NODE_L0_FWD_ALLGATHER')]);
    expect(named(m, 'COMP_NODE_L5_BWD_IG').data_deps).toEqual([id('COMM_COLL_NODE_L5_FWD_ALLGATHER')]);
    expect(named(m, 'COMP_NODE_L4_BWD_IG').data_deps).toEqual([id('COMP_NODE_L5_BWD_WG'), id('COMM_COLL_NODE_L5_IG_REDUCESCATTER')]);
    expect(named(m, 'COMP_NODE_L0_BWD_WG').data_deps).toEqual([id('COMP_NODE_L0_BWD_IG')]);
    expect(decodedAttr(named(m, 'COMM_COLL_NODE_L3_IG_REDUCESCATTER'), 'comm_type')?.value).toBe(7);
  });

  it('DATA from ASTRA-sim\'s Resnet50_DataParallel.txt: 161 compute nodes, 1,082.45 µs exact, 1,083 µs replayed (C.3)', () => {
    const rows = readFileSync(fixturePath('astra-sim/Resnet50_DataParallel.txt'), 'utf8').trim().split(/\r?\n/).slice(2).map((l) => l.trim().split(/\s+/));
    const layers = rows.map((c) => layer(present(c[0], 'layer name'), [Number(c[2]), Number(c[5]), Number(c[8])], { wgComm: { type: 'ALLREDUCE', bytes: Number(c[10]), group: 'all' } }));
    const traces = buildChakraTraces(handWorkload('DATA', layers, 8));
    expect(traces.rounding).toMatchObject({ computeNodes: 161, exactNs: 1_082_450, replayNs: 1_083_000 });
    expect(traces.nodesPerFile).toBe(3 * 54 + 53); // D.3: 3n + (n - 1), every all-reduce non-empty
  });

  it('MODEL from ASTRA-sim\'s MLP_ModelParallel.txt: 29 nodes per file, NPU 1 starting at id 29 (D.1, D.4)', () => {
    // Text columns 3-11 (A.2) as cycles at 1 GHz, so each compute integer is ns (A.6).
    const rows = readFileSync(fixturePath('astra-sim/MLP_ModelParallel.txt'), 'utf8').trim().split('\n').slice(2).map((l) => l.trim().split(/\s+/));
    // Columns `i` (type) and `i + 1` (bytes) of a row.
    const comm = (c: string[], i: number): Collective => ({ type: present(c[i], `column ${i + 1}`) as Collective['type'], bytes: Number(c[i + 1]), group: 'all' });
    const layers = rows.map((c) => layer(present(c[0], 'layer name'), [Number(c[2]), Number(c[5]), Number(c[8])], { fwdComm: comm(c, 3), igComm: comm(c, 6), wgComm: comm(c, 9) }));
    const ranks = decodeAll(handWorkload('MODEL', layers, 2));
    const rank0 = present(ranks[0], 'rank 0');
    expect(rank0).toHaveLength(29);
    expect(ranks[1]?.[0]?.id).toBe(29);
    const m = byName(rank0);
    // Layer 0: 32,291 ns forward, its all-gather of 37,632 bytes; layer 5's input-gradient all-reduce of 65,536 bytes.
    expect(named(m, 'COMP_NODE_layer_64_1_mlp0_FWD').duration_micros).toBe(32);
    expect(decodedAttr(named(m, 'COMM_COLL_NODE_layer_64_1_mlp0_FWD_ALLGATHER'), 'comm_size')?.value).toBe(37_632);
    const ig5 = named(m, 'COMM_COLL_NODE_layer_64_2_mlp5_IG_ALLREDUCE');
    expect([decodedAttr(ig5, 'comm_type')?.value, decodedAttr(ig5, 'comm_size')?.value]).toEqual([0, 65_536]);
    expect(m.has('COMM_COLL_NODE_layer_64_1_mlp0_IG_ALLREDUCE')).toBe(false); // IGCOMM only for i > 0
    // Emission order of D.4: FWD, FWDCOMM per layer; then BWD_IG, IGCOMM, BWD_WG from the last layer.
    expect(rank0.slice(12, 15).map((n) => n.name)).toEqual(['COMP_NODE_layer_64_2_mlp5_BWD_IG', 'COMM_COLL_NODE_layer_64_2_mlp5_IG_ALLREDUCE', 'COMP_NODE_layer_64_2_mlp5_BWD_WG']);
  });

  it('hybrids: complementary involved_dim masks for model and data collectives', () => {
    const ag: Collective = { type: 'ALLGATHER', bytes: 1000, group: 'model' };
    const ar: Collective = { type: 'ALLREDUCE', bytes: 3000, group: 'data' };
    for (const [parallelism, model, data] of [
      ['HYBRID_DATA_MODEL', [true, false], [false, true]],
      ['HYBRID_MODEL_DATA', [false, true], [true, false]],
    ] as const) {
      const w = handWorkload(parallelism, [layer('L0', [1000, 1000, 1000], { fwdComm: ag, wgComm: ar }), layer('L1', [1000, 1000, 1000], { fwdComm: ag, wgComm: ar })], 4);
      const m = byName(rankNodes(w, 0));
      expect(decodedAttr(named(m, 'COMM_COLL_NODE_L1_FWD_ALLGATHER'), 'involved_dim')).toEqual({ kind: 'bool_list', value: model });
      expect(decodedAttr(named(m, 'COMM_COLL_NODE_L1_WG_ALLREDUCE'), 'involved_dim')).toEqual({ kind: 'bool_list', value: data });
      // FWD(i) deps: last pass's WGCOMM (none in pass 0), then FWDCOMM(i-1).
      expect(named(m, 'COMP_NODE_L1_FWD').data_deps).toEqual([named(m, 'COMM_COLL_NODE_L0_FWD_ALLGATHER').id]);
    }
    expect(involvedDims('HYBRID_DATA_MODEL', 'data', 3)).toEqual([false, true, true]);
    expect(involvedDims('HYBRID_MODEL_DATA', 'model', 3)).toEqual([false, true, true]);
    expect(involvedDims('MODEL', 'all', 2)).toBeUndefined();
  });

  it('one-layer models: DATA has no BWD_IG (D.3), MODEL keeps BWD_IG(0) but no IGCOMM (D.4)', () => {
    const ar: Collective = { type: 'ALLREDUCE', bytes: 64, group: 'all' };
    const ag: Collective = { type: 'ALLGATHER', bytes: 64, group: 'all' };
    const shape = (nodes: DecodedNode[]): [string, number[]][] => nodes.map((n) => [n.name, n.data_deps]);
    expect(shape(rankNodes(handWorkload('DATA', [layer('L0', [1000, 1000, 1000], { wgComm: ar })]), 0))).toEqual([
      ['COMP_NODE_L0_FWD', []],
      ['COMP_NODE_L0_BWD_WG', [0]],
      ['COMM_COLL_NODE_L0_WG_ALLREDUCE', [1]],
    ]);
    expect(shape(rankNodes(handWorkload('MODEL', [layer('L0', [1000, 1000, 1000], { fwdComm: ag })]), 0))).toEqual([
      ['COMP_NODE_L0_FWD', []],
      ['COMM_COLL_NODE_L0_FWD_ALLGATHER', [0]],
      ['COMP_NODE_L0_BWD_IG', [1]],
      ['COMP_NODE_L0_BWD_WG', [2]],
    ]);
  });

  it('MODEL with two passes: FWD(i) waits for FWDCOMM(i-1), then last pass\'s BWD_WG(i) (D.4 order)', () => {
    const ag: Collective = { type: 'ALLGATHER', bytes: 64, group: 'all' };
    const rs: Collective = { type: 'REDUCESCATTER', bytes: 64, group: 'all' };
    const w = handWorkload('MODEL', [layer('L0', [1000, 1000, 1000], { fwdComm: ag }), layer('L1', [1000, 1000, 1000], { fwdComm: ag, igComm: rs })], 4);
    const nodes = rankNodes(w, 0, { passes: 2 });
    expect(nodes).toHaveLength(2 * 9);
    const [first, second] = [nodes.slice(0, 9), nodes.slice(9)];
    const id = (ns: DecodedNode[], name: string): number => found(ns, name).id;
    expect(second[0]?.data_deps).toEqual([id(first, 'COMP_NODE_L0_BWD_WG')]);
    expect(found(second, 'COMP_NODE_L1_FWD').data_deps).toEqual([id(second, 'COMM_COLL_NODE_L0_FWD_ALLGATHER'), id(first, 'COMP_NODE_L1_BWD_WG')]);
  });

  it('hybrid with two passes: FWD(i) waits for last pass\'s WGCOMM(i), then FWDCOMM(i-1) (D.5 order)', () => {
    const ag: Collective = { type: 'ALLGATHER', bytes: 64, group: 'model' };
    const ar: Collective = { type: 'ALLREDUCE', bytes: 64, group: 'data' };
    const w = handWorkload('HYBRID_MODEL_DATA', [layer('L0', [1000, 1000, 1000], { fwdComm: ag, wgComm: ar }), layer('L1', [1000, 1000, 1000], { fwdComm: ag, wgComm: ar })], 4);
    const nodes = rankNodes(w, 0, { passes: 2 });
    const [first, second] = [nodes.slice(0, nodes.length / 2), nodes.slice(nodes.length / 2)];
    const id = (ns: DecodedNode[], name: string): number => found(ns, name).id;
    expect(second[0]?.data_deps).toEqual([id(first, 'COMM_COLL_NODE_L0_WG_ALLREDUCE')]);
    expect(found(second, 'COMP_NODE_L1_FWD').data_deps).toEqual([id(first, 'COMM_COLL_NODE_L1_WG_ALLREDUCE'), id(second, 'COMM_COLL_NODE_L0_FWD_ALLGATHER')]);
  });

  it('an embedding first (zero compute): its compute nodes are not written, dependents inherit their deps (F.1)', () => {
    const ar: Collective = { type: 'ALLREDUCE', bytes: 4096, group: 'all' };
    const w = handWorkload('DATA', [layer('embed', [0, 0, 0], { wgComm: ar }), layer('fc', [2000, 2000, 2000], { wgComm: ar })]);
    const nodes = byName(rankNodes(w, 0));
    expect(nodes.has('COMP_NODE_embed_FWD')).toBe(false);
    expect(nodes.has('COMP_NODE_embed_BWD_WG')).toBe(false);
    // fc's forward is the first node; embed's gradient all-reduce follows fc's input gradient directly.
    expect(named(nodes, 'COMP_NODE_fc_FWD').data_deps).toEqual([]);
    expect(named(nodes, 'COMM_COLL_NODE_embed_WG_ALLREDUCE').data_deps).toEqual([named(nodes, 'COMP_NODE_fc_BWD_IG').id]);
    expect(buildChakraTraces(w).rounding).toMatchObject({ computeNodes: 3, exactNs: 3 * 2000, replayNs: 3 * 2000, subHalfMicroNodes: 0 });
  });

  it('refuses passes and network dims that are not positive integers', () => {
    const w = handWorkload('DATA', [layer('L0', [1, 1, 1])]);
    expect(() => buildChakraTraces(w, { passes: 0 })).toThrow(RangeError);
    expect(() => buildChakraTraces(w, { networkDims: 1.5 })).toThrow(RangeError);
  });

  it('skips NONE and zero-byte collectives', () => {
    const w = handWorkload('DATA', [layer('L0', [1, 1, 1], { wgComm: { type: 'ALLREDUCE', bytes: 0, group: 'all' } }), layer('L1', [1, 1, 1])]);
    expect(rankNodes(w, 0).filter((n) => n.type === 'COMM_COLL_NODE')).toEqual([]);
  });

  it('reports whole-µs rounding: sub-µs layers replay as 1 ns', () => {
    const w = handWorkload('DATA', [layer('L0', [400, 400, 400]), layer('L1', [1600, 1600, 1600])]);
    const r = buildChakraTraces(w).rounding;
    expect(r).toEqual({ computeNodes: 5, exactNs: 400 * 2 + 1600 * 3, replayNs: 1 * 2 + 2000 * 3, subHalfMicroNodes: 2 });
  });
});
