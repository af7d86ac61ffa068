/**
 * Context parallelism (--cp C) end to end: Chakra traces of a GPT (learned positions, LayerNorm,
 * GELU MLP, biases) at TP 2 x CP 2 x DP 2 x PP 2 and of a LLaMA-style GQA model (RMSNorm,
 * SwiGLU, rotary, 8 heads over 4 K/V heads) at TP 2 x CP 2 x DP 2, both --cp-comm-type values.
 * Every expected count and size is derived here from the models' initializer dims and the rules
 * of Megatron-LM and TransformerEngine (src/plan/context-parallel.ts cites them):
 * - every token-wise tensor is of T = b x S / C tokens on a rank;
 * - TP (no SP): per micro-batch the word embedding's all-reduce, per block the attention output's
 *   and the MLP output's forward all-reduce and the two column groups' input-gradient all-reduce,
 *   the LM head's input-gradient all-reduce, the vocab-parallel loss's three fp32 all-reduces of T x 4;
 * - p2p: per attention and micro-batch C - 1 forward ring steps of b x S/C x (KV heads / TP) x
 *   head dim x 2 x dtype, C backward ones (K/V, then K/V + dK/dV, then dK/dV: 1, 2, ..., 2, 1 chunks);
 * - a2a: per attention and micro-batch all-to-alls of Q, K, V and the context forward, of the
 *   output gradient and dQ, dK, dV backward; Q-sized: T x (heads / TP) x head dim x dtype,
 *   K-sized: T x (KV heads / TP) x head dim x dtype;
 * - dense gradients: one all-reduce of the stage's parameters per TP rank in fp32 over Megatron's
 *   data-parallel group with context parallelism (D x C ranks), after the schedule;
 * - pipeline: the stage's activation forward and its gradient backward, T x hidden x dtype.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { writeGptModel, gptParameterCount, type GptOptions } from '../../bench/models/gpt-graph.js';
import { checkTraceSet, findTraceFiles } from '../../src/check/check-traces.js';
import { runTranslate, type TranslateOptions } from '../../src/cli/translate.js';
import { decodeEtFile, decodedAttr, type DecodedNode } from '../../src/writers/chakra-encoding.js';
import { llamaModel, type LlamaOptions } from '../helpers/arch/llama.js';
import { ROOT } from '../helpers/models.js';
import { runFirstAsProcess } from '../helpers/cli-batch.js';
import { present } from '../helpers/present.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-cp-'));
const FP32 = 4;

const GPT: GptOptions = { layers: 2, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 128 };
const gptFile = writeGptModel(GPT);
const LLAMA: LlamaOptions = { layers: 2, hidden: 128, heads: 8, kvHeads: 4, seq: 16, batch: 2, vocab: 256, ffn: 256 };
const llamaFile = join(dir, 'llama.onnx');
const llama = llamaModel(LLAMA);
writeFileSync(llamaFile, llama.bytes);

interface World {
  tp: number;
  cp: number;
  dp: number;
  pp: number;
}
/** Megatron's default order tp-cp-ep-dp-pp: rank = t + T x (c + C x (d + D x p)). */
const indices = (r: number, w: World) => ({ t: r % w.tp, c: Math.floor(r / w.tp) % w.cp, d: Math.floor(r / (w.tp * w.cp)) % w.dp, p: Math.floor(r / (w.tp * w.cp * w.dp)) });

/** One rank's trace as (class, group or peer, bytes) -> count. */
type Table = Record<string, number>;

function tableOf(nodes: readonly DecodedNode[], rank: number, w: World, groupKind: (id: string) => string): Table {
  const table: Table = {};
  const add = (key: string): void => {
    table[key] = (table[key] ?? 0) + 1;
  };
  const me = indices(rank, w);
  for (const n of nodes) {
    const size = decodedAttr(n, 'comm_size')?.value as number;
    if (n.type === 'COMM_COLL_NODE') {
      const type = ['ALLREDUCE', '', 'ALLGATHER', '', '', '', 'ALLTOALL', 'REDUCESCATTER'][decodedAttr(n, 'comm_type')?.value as number];
      add(`${type} ${groupKind(String(decodedAttr(n, 'pg_name')?.value))} ${size}`);
    } else if (n.type === 'COMM_SEND_NODE' || n.type === 'COMM_RECV_NODE') {
      const send = n.type === 'COMM_SEND_NODE';
      const peer = indices((send ? decodedAttr(n, 'comm_dst') : decodedAttr(n, 'comm_src'))?.value as number, w);
      // Which axis the peer differs on, and by how much.
      // A send goes k steps up the CP ring, a receive comes from k steps down it.
      const steps = ((((send ? peer.c - me.c : me.c - peer.c) % w.cp) + w.cp) % w.cp);
      const axis = peer.p !== me.p ? `pp${peer.p - me.p > 0 ? '+' : ''}${peer.p - me.p}` : `cp${send ? '+' : '-'}${steps}`;
      expect([peer.t, peer.d, ...(axis.startsWith('pp') ? [peer.c] : [peer.p])]).toEqual([me.t, me.d, ...(axis.startsWith('pp') ? [me.c] : [me.p])]);
      add(`${send ? 'SEND' : 'RECV'} ${axis} ${size}`);
    }
  }
  return table;
}

/**
 * Megatron's gradient norm before the optimizer step (core/optimizer/clip_grads.py): one fp32
 * all-reduced over the model-parallel group TP x PP (the TP group without pipelining).
 */
function gradNorm(w: World): Table {
  if (w.tp * w.pp < 2) return {};
  return { [`ALLREDUCE ${w.pp > 1 ? 'mp' : 'tp'} 4`]: 1 };
}

/** Vocabulary rows one of T ranks holds: Megatron pads V to a multiple of 128 x T (--make-vocab-size-divisible-by 128). */
const vocabRows = (v: number, tp: number): number => Math.ceil(v / (128 * tp)) * 128;

function merge(...tables: Table[]): Table {
  const out: Table = {};
  for (const t of tables) for (const [k, v] of Object.entries(t)) out[k] = (out[k] ?? 0) + v;
  return out;
}
const times = (t: Table, m: number): Table => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v * m]));

/** Comm-group ids -> kind, from the groups file in Megatron's terms: TP groups, then CP, then DP x CP (no collective spans the pipeline groups of an untied model). */
function groupKinds(groups: Record<string, number[]>, w: World): (id: string) => string {
  const world = w.tp * w.cp * w.dp * w.pp;
  // A group with the members of one listed before is that one (plan/world.ts): DP x CP is the CP
  // group when D = 1, the model-parallel group (TP x PP) the TP group when P = 1.
  const counts: [string, number][] = [
    ['tp', w.tp > 1 ? world / w.tp : 0],
    ['cp', w.cp > 1 ? world / w.cp : 0],
    ['dp-cp', w.cp * w.dp > 1 && !(w.dp === 1 && w.cp > 1) ? world / (w.cp * w.dp) : 0],
    ['mp', w.pp > 1 ? world / (w.tp * w.pp) : 0],
  ];
  const kinds: string[] = [];
  for (const [kind, n] of counts) for (let i = 0; i < n; i++) kinds.push(kind);
  expect(Object.keys(groups).length).toBe(kinds.length);
  return (id) => kinds[Number(id) - 1] ?? `?${id}`;
}

/** Megatron's groups of a world in the default order, each kind's list (RankGenerator.get_ranks). */
function megatronGroups(w: World): Record<'tp' | 'cp' | 'dp-cp' | 'pp', number[][]> {
  const world = w.tp * w.cp * w.dp * w.pp;
  const ranks = Array.from({ length: world }, (_, r) => r);
  const by = (key: (r: number) => string): number[][] => {
    const m = new Map<string, number[]>();
    for (const r of ranks) m.set(key(r), [...(m.get(key(r)) ?? []), r]);
    return [...m.values()];
  };
  const i = (r: number) => indices(r, w);
  return {
    tp: by((r) => `${i(r).c},${i(r).d},${i(r).p}`),
    cp: by((r) => `${i(r).t},${i(r).d},${i(r).p}`),
    'dp-cp': by((r) => `${i(r).t},${i(r).p}`),
    pp: by((r) => `${i(r).t},${i(r).c},${i(r).d}`),
  };
}

interface Run {
  ranks: DecodedNode[][];
  groups: Record<string, number[]>;
  prefix: string;
}

async function translate(model: string, name: string, w: World, extra: Partial<TranslateOptions>): Promise<Run> {
  const prefix = join(dir, name);
  const microBatches = 2;
  // Vector ops on, as the CLI's default: norms are layers of their stage.
  const opts: TranslateOptions = { tp: w.tp, cp: w.cp, dp: w.dp, pp: w.pp, globalBatch: 2 * w.dp * microBatches, microBatch: 2, dtype: 'fp32', params: 'all', hardware: 'tpu-256', format: 'chakra', output: prefix, vectorOps: 'on', ...extra };
  await runTranslate(model, opts);
  const world = w.tp * w.cp * w.dp * w.pp;
  return {
    ranks: Array.from({ length: world }, (_, r) => decodeEtFile(readFileSync(`${prefix}.${r}.et`)).nodes),
    groups: JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8')) as Record<string, number[]>,
    prefix,
  };
}

/** `model` translated with each CP comm type (stderr silenced): prefixes NAME-p2p and NAME-a2a. */
async function translateBothCommTypes(model: string, name: string, w: World): Promise<Record<'p2p' | 'a2a', Run>> {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return { p2p: await translate(model, `${name}-p2p`, w, {}), a2a: await translate(model, `${name}-a2a`, w, { cpCommType: 'a2a' }) };
  } finally {
    vi.restoreAllMocks();
  }
}

/** What attention adds per micro-batch, by comm type. */
function attentionTable(kind: 'p2p' | 'a2a', c: number, tokens: number, qHeads: number, kvHeads: number, headDim: number): Table {
  const kBytes = tokens * kvHeads * headDim * FP32;
  const qBytes = tokens * qHeads * headDim * FP32;
  if (kind === 'a2a') {
    const t: Table = {};
    const add = (bytes: number, n: number): void => {
      t[`ALLTOALL cp ${bytes}`] = (t[`ALLTOALL cp ${bytes}`] ?? 0) + n;
    };
    // Forward Q, K, V and the context; backward the output gradient and dQ, dK, dV.
    add(qBytes, 4);
    add(kBytes, 4);
    return t;
  }
  const kv = 2 * kBytes;
  // Forward C - 1 chunks of K/V; backward K/V, (C - 2) x K/V + dK/dV, dK/dV.
  const steps: number[] = [...Array<number>(c - 1).fill(kv), kv, ...Array<number>(c - 2).fill(2 * kv), kv];
  const t: Table = {};
  for (const bytes of steps) {
    t[`SEND cp+1 ${bytes}`] = (t[`SEND cp+1 ${bytes}`] ?? 0) + 1;
    t[`RECV cp-1 ${bytes}`] = (t[`RECV cp-1 ${bytes}`] ?? 0) + 1;
  }
  return t;
}

describe('GPT at TP 2 x CP 2 x DP 2 x PP 2 (the world Megatron-core prints in test/fixtures/megatron)', () => {
  const w: World = { tp: 2, cp: 2, dp: 2, pp: 2 };
  const { hidden: h, heads, seq: S, batch: b, vocab: V } = GPT;
  const tokens = (b * S) / w.cp;
  const d = h / heads;
  const f = 4 * h;
  // Per TP rank: column weights and biases / 2 (q, k, v, fc), row weights / 2 and their biases
  // whole (o, proj), norms whole (2 x h each), the vocabulary matrices split by rows, positions whole.
  const blockParams = 2 * h + (3 * h * h) / 2 + (3 * h) / 2 + (h * h) / 2 + h + 2 * h + (h * f) / 2 + f / 2 + (f * h) / 2 + h;
  const stage0Params = vocabRows(V, w.tp) * h + S * h + blockParams;
  const stage1Params = blockParams + 2 * h + h * vocabRows(V, w.tp);
  let runs: Record<'p2p' | 'a2a', Run>;
  beforeAll(async () => {
    runs = await translateBothCommTypes(gptFile, 'gpt', w);
  }, 60_000);

  it('the per-rank parameter split adds up to the model (the formula the expected sizes use)', () => {
    // Split parts counted on both TP ranks, whole ones once.
    const whole = 2 * (2 * h + h + 2 * h + h) + S * h + 2 * h;
    const padding = 2 * (w.tp * vocabRows(V, w.tp) - V) * h; // the embedding's and the untied head's padded rows
    expect(2 * (stage0Params + stage1Params) - whole).toBe(gptParameterCount(GPT) + padding);
  });

  it("lists Megatron's TP, CP and DP x CP groups", () => {
    const megatron = megatronGroups(w);
    const recorded = (JSON.parse(readFileSync(join(ROOT, 'test/fixtures/megatron/rank-generator-groups.json'), 'utf8')) as { name: string; dense: Record<string, number[][]> }[]).find((x) => x.name === 'tp2-cp2-dp2-pp2');
    for (const kind of ['tp', 'cp', 'dp-cp', 'pp'] as const) expect(recorded?.dense[kind]).toEqual(megatron[kind]);
    // And Megatron's model-parallel groups (get_ranks('tp-pp')): the gradient norm's.
    const expected = [...megatron.tp, ...megatron.cp, ...megatron['dp-cp'], ...(recorded?.dense['tp-pp'] ?? [])];
    for (const run of Object.values(runs)) expect(Object.values(run.groups)).toEqual(expected);
  });

  for (const kind of ['p2p', 'a2a'] as const) {
    it(`${kind}: every rank's collectives and transfers per iteration`, () => {
      const run = runs[kind];
      const group = groupKinds(run.groups, w);
      const hiddenBytes = tokens * h * FP32;
      for (let r = 0; r < 16; r++) {
        const stage = indices(r, w).p;
        const perMicroBatch = merge(
          // Stage 0: the word embedding, then block 0's four; stage 1: block 1's four, the LM head's input gradient, the loss.
          { [`ALLREDUCE tp ${hiddenBytes}`]: stage === 0 ? 1 + 4 : 4 + 1 },
          stage === 1 ? { [`ALLREDUCE tp ${tokens * FP32}`]: 3 } : {},
          attentionTable(kind, w.cp, tokens, heads / w.tp, heads / w.tp, d),
          stage === 0 ? { [`SEND pp+1 ${hiddenBytes}`]: 1, [`RECV pp+1 ${hiddenBytes}`]: 1 } : { [`RECV pp-1 ${hiddenBytes}`]: 1, [`SEND pp-1 ${hiddenBytes}`]: 1 },
        );
        const gradients = { [`ALLREDUCE dp-cp ${(stage === 0 ? stage0Params : stage1Params) * FP32}`]: 1 };
        expect(tableOf(run.ranks[r] ?? [], r, w, group), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), gradients, gradNorm(w)));
      }
    });

    it(`${kind}: check-trace finds nothing`, () => {
      expect(checkTraceSet(findTraceFiles(runs[kind].prefix), runs[kind].groups, { networkDims: 1 }).findings).toEqual([]);
    });
  }
});

describe('LLaMA-style GQA at TP 2 x CP 2 x DP 2', () => {
  const w: World = { tp: 2, cp: 2, dp: 2, pp: 1 };
  const { hidden: h, heads, kvHeads, seq: S, batch: b, vocab: V, ffn: f } = LLAMA;
  const tokens = (b * S) / w.cp;
  const d = h / heads;
  // Per TP rank: RMSNorm gains whole (h each, two per block and the final one), Q/K/V/gate/up by
  // output features, o/down by input features, the embedding and the untied LM head by vocabulary rows.
  const blockParams = 2 * h + (h * h) / 2 + 2 * ((h * kvHeads * d) / 2) + (h * h) / 2 + 3 * ((h * f) / 2);
  // The rotary cos/sin tables are float initializers no layer reads: modtrans counts them with the
  // parameters outside every layer, whole on each rank (as test/structure/architecture-invariants does).
  const rotaryTables = [...llama.buffers.values()].reduce((a, n) => a + n, 0);
  const params = vocabRows(V, w.tp) * h + 2 * blockParams + h + h * vocabRows(V, w.tp) + rotaryTables;
  let runs: Record<'p2p' | 'a2a', Run>;
  beforeAll(async () => {
    runs = await translateBothCommTypes(llamaFile, 'llama', w);
  }, 60_000);

  for (const kind of ['p2p', 'a2a'] as const) {
    it(`${kind}: every rank's collectives and transfers per iteration (K/V of ${kvHeads / w.tp} heads per TP rank, Q of ${heads / w.tp})`, () => {
      const run = runs[kind];
      expect(Object.values(run.groups)).toEqual([...megatronGroups(w).tp, ...megatronGroups(w).cp, ...megatronGroups(w)['dp-cp']]);
      const group = groupKinds(run.groups, w);
      const hiddenBytes = tokens * h * FP32;
      const perMicroBatch = merge(
        // The embedding, per block o and down forward, Q/K/V and gate/up input gradients backward, the LM head's input gradient; the loss.
        { [`ALLREDUCE tp ${hiddenBytes}`]: 1 + 2 * 4 + 1, [`ALLREDUCE tp ${tokens * FP32}`]: 3 },
        times(attentionTable(kind, w.cp, tokens, heads / w.tp, kvHeads / w.tp, d), 2),
      );
      for (let r = 0; r < 8; r++) {
        expect(tableOf(run.ranks[r] ?? [], r, w, group), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1 }, gradNorm(w)));
      }
    });

    it(`${kind}: check-trace finds nothing`, () => {
      expect(checkTraceSet(findTraceFiles(runs[kind].prefix), runs[kind].groups, { networkDims: 1 }).findings).toEqual([]);
    });
  }
});

describe('GPT at CP 4 (p2p): 3 forward ring steps, 4 backward of 1, 2, 2, 1 K/V chunks', () => {
  it("every rank's transfers and its gradient all-reduce of the whole model over the 4 CP ranks", async () => {
    const w: World = { tp: 1, cp: 4, dp: 1, pp: 1 };
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const run = await translate(gptFile, 'gpt-cp4', w, {});
    vi.restoreAllMocks();
    // The CP group; DP x CP has the same members (D = 1), so it is that group.
    expect(Object.values(run.groups)).toEqual([[0, 1, 2, 3]]);
    const group = groupKinds(run.groups, w);
    const tokens = (GPT.batch * GPT.seq) / 4;
    const perMicroBatch = times(attentionTable('p2p', 4, tokens, GPT.heads, GPT.heads, GPT.hidden / GPT.heads), GPT.layers);
    const kv = tokens * GPT.heads * (GPT.hidden / GPT.heads) * 2 * FP32;
    // Per attention: forward kv x 3, backward kv, 2 kv, 2 kv, kv.
    expect(perMicroBatch).toEqual({ [`SEND cp+1 ${kv}`]: GPT.layers * 5, [`RECV cp-1 ${kv}`]: GPT.layers * 5, [`SEND cp+1 ${2 * kv}`]: GPT.layers * 2, [`RECV cp-1 ${2 * kv}`]: GPT.layers * 2 });
    // DP x CP is the CP group here (D = 1): one communicator, the cp id.
    for (let r = 0; r < 4; r++) expect(tableOf(run.ranks[r] ?? [], r, w, group), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE cp ${gptParameterCount(GPT) * FP32}`]: 1 }));
    expect(checkTraceSet(findTraceFiles(run.prefix), run.groups, { networkDims: 1 }).findings).toEqual([]);
  });
});

describe("--order tp-dp-cp-ep-pp: the ring follows Megatron's CP groups of that order", () => {
  it('every K/V transfer goes to and comes from the rank of the CP group Megatron-core lists (test/fixtures/megatron)', async () => {
    const recorded = (JSON.parse(readFileSync(join(ROOT, 'test/fixtures/megatron/rank-generator-groups.json'), 'utf8')) as { name: string; dense: Record<string, number[][]> }[]).find((x) => x.name === 'tp2-cp2-dp2 order tp-dp-cp-ep-pp');
    const dense = recorded?.dense ?? {};
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const run = await translate(gptFile, 'gpt-order', { tp: 2, cp: 2, dp: 2, pp: 1 }, { order: 'tp-dp-cp-ep-pp' });
    vi.restoreAllMocks();
    expect(Object.values(run.groups)).toEqual([...(dense.tp ?? []), ...(dense.cp ?? []), ...(dense['dp-cp'] ?? [])]);
    run.ranks.forEach((nodes, r) => {
      const partner = dense.cp?.find((g) => g.includes(r))?.find((x) => x !== r);
      const peers = nodes.flatMap((n) => (n.type === 'COMM_SEND_NODE' ? [decodedAttr(n, 'comm_dst')?.value] : n.type === 'COMM_RECV_NODE' ? [decodedAttr(n, 'comm_src')?.value] : []));
      // 2 attentions x 2 micro-batches x (1 forward + 2 backward) steps, a send and a receive each.
      expect(peers).toEqual(Array<number | undefined>(2 * 2 * 3 * 2).fill(partner));
    });
    expect(checkTraceSet(findTraceFiles(run.prefix), run.groups, { networkDims: 1 }).findings).toEqual([]);
  });
});

describe('translate --cp, the process', () => {
  it('check-trace exits 0 on a CP trace set, and the errors are one line with exit code 2', async () => {
    const prefix = join(dir, 'cli');
    const errors: [string[], RegExp][] = [
      // S = 16 tokens: --cp 3 needs 16 % 6 == 0.
      [['--cp', '3'], /--cp 3: the sequence of 16 tokens .* does not split into 2 x 3 = 6 chunks/],
      // 4 heads / --tp 2 = 2 per rank, not divisible by --cp 4 for the all-to-all (and 16 % 8 == 0 passes).
      [['--tp', '2', '--cp', '4', '--cp-comm-type', 'a2a'], /--cp 4 --cp-comm-type a2a: .* has 2 attention heads per tensor-parallel rank \(--tp 2\), not divisible by 4/],
      [['--cp-comm-type', 'a2a'], /--cp-comm-type a2a .* needs --cp 2 or more/],
    ];
    // The first error as a process of its own (its exit code); the others, the CP set and its check
    // share the exit-code path (main.ts, tested as processes in test/cli/exit-codes.test.ts) and
    // run in this process (cli-batch).
    const calls = [
      ...errors.map(([args]) => ['translate', gptFile, ...args, '--format', 'chakra', '-o', join(dir, 'bad')]),
      ['translate', gptFile, '--tp', '2', '--cp', '2', '--format', 'chakra', '-o', prefix],
      ['check-trace', prefix],
    ];
    const results = await runFirstAsProcess(calls.map((args) => ({ args, cwd: dir })));
    for (const [i, [args, message]] of errors.entries()) {
      const r = present(results[i], args.join(' '));
      expect(r.status, args.join(' ')).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(message);
    }
    const [translate, check] = results.slice(errors.length);
    expect(translate?.status, translate?.stderr).toBe(0);
    expect(check?.status, check?.stdout).toBe(0);
  });
});

describe("LLaMA-style GQA at TP 4 x DP 2 without context parallelism (Megatron-LM's rules): without SP, with SP, with PP 2", () => {
  const { hidden: h, kvHeads, heads, seq: S, batch: b, vocab: V, ffn: f } = LLAMA;
  const d = h / heads;
  const tokens = b * S;
  const hiddenBytes = tokens * h * FP32;
  const lossBytes = tokens * FP32;
  // Per TP rank of 4: RMSNorm gains whole, Q/K/V/gate/up by outputs, o/down by inputs, the vocabulary matrices by padded rows.
  const blockParams = 2 * h + (h * h) / 4 + 2 * ((h * kvHeads * d) / 4) + (h * h) / 4 + 3 * ((h * f) / 4);
  const rotaryTables = [...llama.buffers.values()].reduce((a, n) => a + n, 0);
  const embedding = vocabRows(V, 4) * h;
  const head = h * vocabRows(V, 4);
  let runs: Record<'plain' | 'sp' | 'pp', Run>;
  const worlds: Record<'plain' | 'sp' | 'pp', World> = { plain: { tp: 4, cp: 1, dp: 2, pp: 1 }, sp: { tp: 4, cp: 1, dp: 2, pp: 1 }, pp: { tp: 4, cp: 1, dp: 2, pp: 2 } };
  beforeAll(async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    runs = {
      plain: await translate(llamaFile, 'llama-tp4', worlds.plain, {}),
      sp: await translate(llamaFile, 'llama-tp4-sp', worlds.sp, { sp: true }),
      pp: await translate(llamaFile, 'llama-tp4-pp2', worlds.pp, {}),
    };
    vi.restoreAllMocks();
  }, 60_000);

  it('no SP: per micro-batch 1 + 2 x 4 + 1 all-reduces of the hidden state over TP and the loss\'s 3; the whole gradient once over DP; the norm over TP', () => {
    const w = worlds.plain;
    const perMicroBatch = { [`ALLREDUCE tp ${hiddenBytes}`]: 1 + 2 * 4 + 1, [`ALLREDUCE tp ${lossBytes}`]: 3 };
    const params = embedding + 2 * blockParams + h + head + rotaryTables;
    for (let r = 0; r < 8; r++) expect(tableOf(runs.plain.ranks[r] ?? [], r, w, groupKinds(runs.plain.groups, w)), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1 }, gradNorm(w)));
  });

  it('SP: all-gathers of the T-th shard and reduce-scatters of the whole state instead; the norms\' gradients all-reduced over TP once (finalize_model_grads)', () => {
    const w = worlds.sp;
    const shard = hiddenBytes / 4;
    // Embedding: reduce-scatter (RoPE: no positions), backward all-gather. Per block: Q/K/V and gate/up
    // gather their input forward and again backward, reduce-scatter their input gradient; o and down
    // reduce-scatter forward and gather their output gradient backward. LM head: as a column layer.
    const perMicroBatch = {
      [`ALLGATHER tp ${shard}`]: 1 + 2 * 6 + 2,
      [`REDUCESCATTER tp ${hiddenBytes}`]: 1 + 2 * 4 + 1,
      [`ALLREDUCE tp ${lossBytes}`]: 3,
    };
    const params = embedding + 2 * blockParams + h + head + rotaryTables;
    const norms = (2 * 2 + 1) * h; // two RMSNorm gains per block and the final one
    for (let r = 0; r < 8; r++) {
      expect(tableOf(runs.sp.ranks[r] ?? [], r, w, groupKinds(runs.sp.groups, w)), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1, [`ALLREDUCE tp ${norms * FP32}`]: 1 }, gradNorm(w)));
    }
  });

  it('PP 2: one block a stage (Megatron\'s even split), the activation and its gradient between them, each stage\'s gradients over DP, the norm over TP x PP', () => {
    const w = worlds.pp;
    for (let r = 0; r < 16; r++) {
      const stage = indices(r, w).p;
      const perMicroBatch = merge(
        { [`ALLREDUCE tp ${hiddenBytes}`]: stage === 0 ? 1 + 4 : 4 + 1 },
        stage === 1 ? { [`ALLREDUCE tp ${lossBytes}`]: 3 } : {},
        stage === 0 ? { [`SEND pp+1 ${hiddenBytes}`]: 1, [`RECV pp+1 ${hiddenBytes}`]: 1 } : { [`RECV pp-1 ${hiddenBytes}`]: 1, [`SEND pp-1 ${hiddenBytes}`]: 1 },
      );
      // The last stage holds the final norm and the head; each block's rotary_emb has its own
      // cos/sin tables (initializers, as HF exports them), held by the block's stage.
      const params = stage === 0 ? embedding + blockParams + rotaryTables / 2 : blockParams + h + head + rotaryTables / 2;
      expect(tableOf(runs.pp.ranks[r] ?? [], r, w, groupKinds(runs.pp.groups, w)), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1 }, gradNorm(w)));
    }
  });

  it('check-trace finds nothing in any of the three', () => {
    for (const run of Object.values(runs)) expect(checkTraceSet(findTraceFiles(run.prefix), run.groups, { networkDims: 1 }).findings).toEqual([]);
  });
});

describe("GPT (learned positions, biases, LayerNorm) at TP 4 x DP 2 without and with SP (Megatron-LM's rules)", () => {
  const { hidden: h, seq: S, batch: b, vocab: V } = GPT;
  const f = 4 * h;
  const tokens = b * S;
  const hiddenBytes = tokens * h * FP32;
  const lossBytes = tokens * FP32;
  // Per TP rank of 4: LayerNorms whole (scale and shift), Q/K/V and fc with their biases by outputs,
  // o and proj by inputs with their biases whole, positions whole, the vocabulary matrices by padded rows.
  const blockParams = 2 * h + (3 * h * h) / 4 + (3 * h) / 4 + (h * h) / 4 + h + 2 * h + (h * f) / 4 + f / 4 + (f * h) / 4 + h;
  const params = vocabRows(V, 4) * h + S * h + 2 * blockParams + 2 * h + h * vocabRows(V, 4);
  const w: World = { tp: 4, cp: 1, dp: 2, pp: 1 };
  let runs: Record<'plain' | 'sp', Run>;
  beforeAll(async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    runs = { plain: await translate(gptFile, 'gpt-tp4', w, {}), sp: await translate(gptFile, 'gpt-tp4-sp', w, { sp: true }) };
    vi.restoreAllMocks();
  }, 60_000);

  it('no SP: per micro-batch 1 + 2 x 4 + 1 all-reduces of the hidden state and the loss\'s 3, the gradients once over DP', () => {
    const perMicroBatch = { [`ALLREDUCE tp ${hiddenBytes}`]: 1 + 2 * 4 + 1, [`ALLREDUCE tp ${lossBytes}`]: 3 };
    for (let r = 0; r < 8; r++) expect(tableOf(runs.plain.ranks[r] ?? [], r, w, groupKinds(runs.plain.groups, w)), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1 }, gradNorm(w)));
  });

  it('SP: the word embedding all-reduces (positions are added before the split) and gathers backward; the norms\' and row biases\' gradients all-reduced over TP once', () => {
    const perMicroBatch = {
      [`ALLREDUCE tp ${hiddenBytes}`]: 1,
      [`ALLGATHER tp ${hiddenBytes / 4}`]: 1 + 2 * 6 + 2,
      [`REDUCESCATTER tp ${hiddenBytes}`]: 2 * 4 + 1,
      [`ALLREDUCE tp ${lossBytes}`]: 3,
    };
    // Per block ln_1 and ln_2 (2h each) and the o and proj biases (h each); ln_f (2h).
    const replicated = 2 * (2 * h + 2 * h + h + h) + 2 * h;
    for (let r = 0; r < 8; r++) {
      expect(tableOf(runs.sp.ranks[r] ?? [], r, w, groupKinds(runs.sp.groups, w)), `rank ${r}`).toEqual(merge(times(perMicroBatch, 2), { [`ALLREDUCE dp-cp ${params * FP32}`]: 1, [`ALLREDUCE tp ${replicated * FP32}`]: 1 }, gradNorm(w)));
    }
    for (const run of Object.values(runs)) expect(checkTraceSet(findTraceFiles(run.prefix), run.groups, { networkDims: 1 }).findings).toEqual([]);
  });
});
