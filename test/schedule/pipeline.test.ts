/**
 * Pipeline step graphs: point-to-point transfers (counts per stage, sizes seq x micro-batch x
 * hidden x bytes, / T under sequence parallelism, tags matched across ranks' files), the 1F1B
 * order held by dependencies, the tied embedding's all-reduce, recomputation, and clean traces.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { runCheckTrace } from '../../src/cli/check-trace-command.js';
import { loadProfile } from '../../src/cli/options.js';
import { runTranslate } from '../../src/cli/translate.js';
import { analyseModel, createCostModel, planOf, scheduleOf } from '../../src/pipeline.js';
import { at } from '../../src/errors.js';
import type { PlanOptions } from '../../src/plan/build.js';
import { peerStageOf, type StepGraph, type StepNode, type StepSchedule } from '../../src/schedule/types.js';
import { commGroupsJson, scheduleTraceFiles } from '../../src/writers/chakra-schedule.js';
import { decodeEtFile, decodedAttr, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { truth } from '../helpers/models.js';
import { BARE_GPT, writeGptModel, type GptOptions } from '../../bench/models/gpt-graph.js';
import { present } from '../helpers/present.js';

const cost = await createCostModel(await loadProfile('tpu-256'), 'ideal');
const microBatch = 2;
const spec: GptOptions = { ...BARE_GPT, layers: 4, hidden: 64, heads: 4, seq: 32, batch: microBatch, vocab: 256, ffn: 256, tiedHead: true };
const file = writeGptModel(spec);
const analysed = analyseModel(file, {}, {}, { vectorOps: true });
const dir = mkdtempSync(join(tmpdir(), 'modtrans-pipeline-'));

function schedule(pp: number, extra: Partial<PlanOptions> = {}, m = 4, tp = 1, dp = 1, model = analysed): StepSchedule {
  const plan = planOf(model, {
    // Cut by costed time: these schedules run 3 stages over 4 blocks, which Megatron's even split refuses.
    world: { tp, dp, pp }, batch: { globalBatch: m * microBatch * dp, microBatch, microBatches: m }, sequenceParallel: false, zero: 0, dtype: 'fp32', dpBucketMiB: 25, pipelineSplit: 'balanced', ...extra,
  }, cost);
  return scheduleOf(plan, cost);
}

const transfers = (g: StepGraph, kind: 'send' | 'recv') => g.nodes.filter((n): n is Extract<StepNode, { kind: 'send' | 'recv' }> => n.kind === kind);
/** seq x micro-batch x hidden x 4 bytes (fp32). */
const activationBytes = spec.seq * microBatch * spec.hidden * 4;

/** Unit sequence of a graph: F/B + micro-batch (+ chunk), from the compute nodes in order. */
function unitsOf(g: StepGraph, withChunk = false): string[] {
  const out: string[] = [];
  for (const n of g.nodes) {
    if (n.kind !== 'compute' || n.unit === undefined || n.unit.phase === 'step' || n.unit.phase === 'recompute') continue;
    const key = `${n.unit.phase === 'fwd' ? 'F' : 'B'}${n.unit.microBatch}${withChunk ? `c${n.unit.chunk}` : ''}`;
    if (out[out.length - 1] !== key) out.push(key);
  }
  return out;
}

describe('point-to-point transfers', () => {
  it('1F1B on 3 stages, m = 4: the middle stage sends m activations and m gradients and receives as many; the ends half of that', () => {
    const s = schedule(3);
    const count = (g: StepGraph, kind: 'send' | 'recv', what: string) => transfers(g, kind).filter((n) => n.name.includes(`.${what}.`)).length;
    expect(s.graphs.map((g) => [count(g, 'send', 'act'), count(g, 'recv', 'act'), count(g, 'send', 'grad'), count(g, 'recv', 'grad')])).toEqual([[4, 0, 0, 4], [4, 4, 4, 4], [0, 4, 4, 0]]);
    for (const g of s.graphs) for (const t of [...transfers(g, 'send'), ...transfers(g, 'recv')]) expect(t.bytes).toBe(activationBytes);
    expect(s.graphs.map((g) => [...new Set(transfers(g, 'send').map((t) => peerStageOf(t.peer, -1)))])).toEqual([[1], [2, 0], [1]]);
  });

  it('GPipe moves the same m transfers per stage; interleaved (V = 2) crosses PV - 1 boundaries, each m times each way', () => {
    const gpipe = schedule(2, { pipelineSchedule: 'gpipe' });
    expect(gpipe.graphs.map((g) => transfers(g, 'send').length)).toEqual([4, 4]);
    const inter = schedule(2, { pipelineSchedule: 'interleaved', virtualStages: 2 });
    // 4 chunks, 3 boundaries, each crossed by m activations and m gradients.
    expect(inter.graphs.reduce((a, g) => a + transfers(g, 'send').length, 0)).toBe(2 * 3 * 4);
    expect(inter.graphs.reduce((a, g) => a + transfers(g, 'recv').length, 0)).toBe(2 * 3 * 4);
  });

  it('--sp divides the transfer by T', () => {
    const s = schedule(2, { sequenceParallel: true }, 4, 2);
    for (const g of s.graphs) for (const t of transfers(g, 'send')) expect(t.bytes).toBe(activationBytes / 2);
  });

  it('sends depend on the compute that produced their data; recvs are dependencies of the next compute', () => {
    const g = present(schedule(2).graphs[1], 'stage 1 graph');
    g.nodes.forEach((n, id) => {
      if (n.kind === 'send') expect(n.deps.some((d) => g.nodes[d]?.kind === 'compute' || g.nodes[d]?.kind === 'collective')).toBe(true);
      if (n.kind === 'recv') expect(g.nodes.some((c, j) => j > id && c.kind === 'compute' && c.deps.includes(id))).toBe(true);
    });
  });
});

describe('schedule order held by dependencies', () => {
  it('1F1B on 4 stages, m = 6: stage i warms up with P - i - 1 forwards, then alternates', () => {
    const s = schedule(4, {}, 6);
    s.graphs.forEach((g, i) => {
      const warm = Math.min(4 - i - 1, 6);
      const expected = [...Array.from({ length: warm }, (_, k) => `F${k}`)];
      for (let k = 0; k < 6 - warm; k++) expected.push(`F${k + warm}`, `B${k}`);
      for (let k = 6 - warm; k < 6; k++) expected.push(`B${k}`);
      expect(unitsOf(g)).toEqual(expected);
    });
  });

  it('every unit waits for the previous unit of its stage (a path of dependencies)', () => {
    const g = present(schedule(3, {}, 4).graphs[0], 'stage 0 graph');
    const reach = (to: number): Set<number> => {
      const seen = new Set<number>();
      const stack = [to];
      for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
        for (const d of at(g.nodes, top).deps) {
          if (seen.has(d)) continue;
          seen.add(d);
          stack.push(d);
        }
      }
      return seen;
    };
    const computes = g.nodes.map((n, i) => ({ n, i })).filter(({ n }) => n.kind === 'compute' && n.unit?.phase !== 'step');
    for (let k = 1; k < computes.length; k++) {
      const [a, b] = [at(computes, k - 1), at(computes, k)];
      const [ua, ub] = [present(a.n.unit, `unit of node ${a.i}`), present(b.n.unit, `unit of node ${b.i}`)];
      if (ua.phase !== ub.phase || ua.microBatch !== ub.microBatch) expect(reach(b.i).has(a.i)).toBe(true);
    }
  });

  it('interleaved V = 2 on 2 stages, m = 4: the stage-0 order of Megatron-LM', () => {
    const s = schedule(2, { pipelineSchedule: 'interleaved', virtualStages: 2 });
    expect(unitsOf(present(s.graphs[0], 'stage 0 graph'), true).join(' ')).toBe('F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0');
  });
});

/**
 * Replays one pipeline (stages 0..P-1 of a (t, d) position) with every node taking no time: a node
 * runs once its dependencies ran; a recv also needs its peer's send with the same tag to have run;
 * collectives and sends never wait (their peers are symmetric). Returns the nodes that never ran.
 */
function stuckNodes(s: StepSchedule): number {
  const done = s.graphs.map((g) => g.nodes.map(() => false));
  const sent = new Set<string>();
  for (let progress = true; progress; ) {
    progress = false;
    for (const [p, g] of s.graphs.entries()) {
      const doneHere = at(done, p);
      for (const [i, n] of g.nodes.entries()) {
        if (doneHere[i] || !n.deps.every((d) => doneHere[d])) continue;
        if (n.kind === 'recv' && !sent.has(`${peerStageOf(n.peer, p)}>${p}#${n.tag}`)) continue;
        if (n.kind === 'send') sent.add(`${p}>${peerStageOf(n.peer, p)}#${n.tag}`);
        doneHere[i] = true;
        progress = true;
      }
    }
  }
  return done.flat().filter((x) => !x).length;
}

describe('no deadlock', () => {
  it('every schedule runs to the end when replayed across its stages', () => {
    expect(stuckNodes(schedule(4, {}, 6))).toBe(0);
    expect(stuckNodes(schedule(4, { pipelineSchedule: 'gpipe' }, 3))).toBe(0);
    expect(stuckNodes(schedule(2, { pipelineSchedule: 'interleaved', virtualStages: 2 }, 4))).toBe(0);
    expect(stuckNodes(schedule(2, { pipelineSchedule: 'interleaved', virtualStages: 2, recompute: 'selective' }, 6))).toBe(0);
    expect(stuckNodes(schedule(3, { recompute: 'full' }, 5))).toBe(0);
  });

  it('interleaved on 4 stages x 2 chunks (8 blocks), m = 8 and m = 4 (all warm-up)', () => {
    const eight = analyseModel(writeGptModel({ ...spec, layers: 8, ffn: 128 }), {}, {}, { vectorOps: true });
    for (const m of [8, 4]) expect(stuckNodes(schedule(4, { pipelineSchedule: 'interleaved', virtualStages: 2 }, m, 1, 1, eight))).toBe(0);
  });

  it('the replay can fail: a recv whose send never comes is stuck', () => {
    const s = schedule(2);
    const recv = present(s.graphs[1]?.nodes.find((n) => n.kind === 'recv'), 'a recv on stage 1');
    (recv as { tag: number }).tag += 1_000_000;
    expect(stuckNodes(s)).toBeGreaterThan(0);
  });
});

describe('tied embedding and recomputation', () => {
  it('the first and last stage all-reduce the word embedding gradient (vocab x hidden / T x 4 B) over the embedding group; a middle stage does not', () => {
    const s = schedule(3, {}, 4, 2);
    const emb = (g: StepGraph) => g.nodes.filter((n) => n.kind === 'collective' && n.group === 'embedding');
    expect(s.graphs.map((g) => emb(g).length)).toEqual([1, 0, 1]);
    for (const g of [s.graphs[0], s.graphs[2]].map((x, k) => present(x, `end stage graph ${k}`))) {
      const n = present(emb(g)[0], 'embedding all-reduce');
      expect(n).toMatchObject({ type: 'ALLREDUCE', bytes: (spec.vocab * spec.hidden / 2) * 4 });
      const step = g.nodes.findIndex((x) => x.kind === 'compute' && x.pass === 'update');
      expect(g.nodes[step]?.deps).toContain(g.nodes.indexOf(n));
    }
    expect(s.groups.filter((g) => g.kind === 'embedding').map((g) => g.ranks)).toEqual([[0, 4], [1, 5]]);
  });

  it('full: one extra forward per transformer layer and micro-batch (not the head); selective: one per attention-core layer (2 products + softmax per block)', () => {
    const recomputes = (s: StepSchedule) => s.graphs.reduce((a, g) => a + g.nodes.filter((n) => n.kind === 'compute' && n.unit?.phase === 'recompute').length, 0);
    const forwards = (s: StepSchedule) => s.graphs.reduce((a, g) => a + g.nodes.filter((n) => n.kind === 'compute' && n.unit?.phase === 'fwd').length, 0);
    const full = schedule(2, { recompute: 'full' });
    // Megatron-LM checkpoints the transformer layers only: not the embeddings, the final norm, the head.
    const notRecomputed = (s: StepSchedule) => [...new Set(s.graphs.flatMap((g) => g.nodes.filter((n) => n.kind === 'compute' && n.unit?.phase === 'fwd' && !g.nodes.some((r) => r.kind === 'compute' && r.unit?.phase === 'recompute' && r.name === n.name.replace('.fwd.', '.recompute.'))).map((n) => n.name.replace(/\.fwd\.mb\d+$/, ''))))];
    // (Without vector layers the embeddings and the final norm have no compute node; the head does, once per micro-batch.)
    expect(notRecomputed(full)).toEqual(['lm_head']);
    expect(recomputes(full)).toBe(forwards(full) - 4);
    expect(recomputes(schedule(2, { recompute: 'selective' }))).toBe(3 * spec.layers * 4);
    expect(recomputes(schedule(2))).toBe(0);
  });

  it('a recomputed forward is its own pass, never a forward: the forward units hold every fwd node, the backward units every recompute', () => {
    for (const s of [schedule(2, { recompute: 'full' }), schedule(2, { recompute: 'selective', pipelineSchedule: 'interleaved', virtualStages: 2 })]) {
      const compute = s.graphs.flatMap((g) => g.nodes.filter((n) => n.kind === 'compute'));
      const recomputed = compute.filter((n) => n.unit?.phase === 'recompute');
      expect(recomputed.length).toBeGreaterThan(0);
      expect(recomputed.every((n) => n.pass === 'recompute')).toBe(true);
      expect(compute.filter((n) => n.pass === 'fwd').every((n) => n.unit?.phase === 'fwd')).toBe(true);
    }
  });
});

describe('traces', () => {
  afterEach(() => vi.restoreAllMocks());
  const write = (s: StepSchedule, name: string): string => {
    const prefix = join(dir, name);
    for (const f of scheduleTraceFiles(s, prefix, { timing: 'replay' })) writeFileSync(f.path, f.bytes);
    writeFileSync(`${prefix}.comm-groups.json`, commGroupsJson(s));
    return prefix;
  };
  const decoded = (prefix: string): DecodedNode[][] => findTraceFiles(prefix).map((f) => decodeEtFile(readFileSync('path' in f ? f.path : '')).nodes);
  const attr = (n: DecodedNode, name: string): number => Number(present(decodedAttr(n, name), `attribute ${name}`).value);

  const cases: [string, () => StepSchedule][] = [
    ['1f1b-tp2-dp2-pp2', () => schedule(2, {}, 4, 2, 2)],
    ['gpipe-pp3', () => schedule(3, { pipelineSchedule: 'gpipe' })],
    ['interleaved-pp2-v2', () => schedule(2, { pipelineSchedule: 'interleaved', virtualStages: 2 }, 4, 2)],
    ['full-recompute-sp-zero1', () => schedule(2, { recompute: 'full', sequenceParallel: true, zero: 1 }, 4, 2, 2)],
    ['selective-pp4', () => schedule(4, { recompute: 'selective' }, 8)],
  ];
  for (const [name, make] of cases) {
    it(`${name}: clean, and every send has a recv on its peer with the same tag and size`, () => {
      const prefix = write(make(), name);
      const groups = JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8'));
      expect(checkTraceSet(findTraceFiles(prefix), groups, { networkDims: 1 }).findings).toEqual([]);
      const key = (src: number, dst: number, tag: number, size: number): string => `${src}>${dst}#${tag}:${size}`;
      const sends: string[] = [];
      const recvs: string[] = [];
      decoded(prefix).forEach((nodes) => {
        for (const n of nodes) {
          if (n.type === 'COMM_SEND_NODE') sends.push(key(attr(n, 'comm_src'), attr(n, 'comm_dst'), attr(n, 'comm_tag'), attr(n, 'comm_size')));
          if (n.type === 'COMM_RECV_NODE') recvs.push(key(attr(n, 'comm_src'), attr(n, 'comm_dst'), attr(n, 'comm_tag'), attr(n, 'comm_size')));
        }
      });
      expect(sends.length).toBeGreaterThan(0);
      expect(new Set(sends).size).toBe(sends.length);
      expect([...recvs].sort()).toEqual([...sends].sort());
      for (const s of sends) expect(Number(s.split('#')[1]?.split(':')[0])).toBeLessThan(500_000_000);
    });
  }

  it('gpt2_small_like --tp 2 --pp 2 --dp 2 --global-batch 16 --micro-batch 2: 8 traces check-trace passes; activations of 128 x 2 x 768 x 4 B', async () => {
    let err = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
      err += String(s);
      return true;
    });
    const prefix = join(dir, 'gpt2', 'gpt');
    await runTranslate('gpt2_small_like', { tp: 2, pp: 2, dp: 2, globalBatch: 16, microBatch: 2, dtype: 'fp32', params: 'all', hardware: 'tpu-256', format: 'chakra', output: prefix, stageTable: true });
    expect(findTraceFiles(prefix).length).toBe(8);
    // GEMM-only lowering: the cut follows a block's MLP output. Megatron-LM's even split: 6 of the
    // 12 blocks per stage (the LM head, ~5.4 blocks of work, stays with the last; --pp-split
    // balanced would give stage 0 more).
    const line = /modtrans: +0 +\d+ +[\d,.]+ +wte \.\. blocks\.(\d+)\.proj\nmodtrans: +1 +\d+ +[\d,.]+ +blocks\.(\d+)\.attn\.q \.\. lm_head\n/.exec(err);
    expect(line).not.toBeNull();
    expect([Number(line?.[1]), Number(line?.[2])]).toEqual([5, 6]);
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      out += String(s);
      return true;
    });
    await runCheckTrace(prefix, { format: 'text' });
    expect(out).toMatch(/^clean: 8 files/);
    const t = truth('gpt2_small_like');
    const [seq, hidden] = [present(t.inputs['input_ids']?.[1], 'sequence of input_ids') as number, present(t.initializers['wpe.weight']?.dims[1], 'hidden size of wpe.weight')];
    const sizes = decoded(prefix).flat().filter((n) => n.type === 'COMM_SEND_NODE').map((n) => attr(n, 'comm_size'));
    // 4 micro-batches per replica: stage 0 sends 4 activations, stage 1 4 gradients, on each of 4 (t, d) positions.
    expect(sizes).toEqual(Array(32).fill(seq * 2 * hidden * 4));
  });
});
