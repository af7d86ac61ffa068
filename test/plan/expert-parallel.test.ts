/**
 * Expert parallelism (plan/expert-parallel.ts) on a Mixtral-like model built as torch exports it:
 * the token dispatcher's collectives per rank per iteration, their groups and sizes derived from
 * Megatron-core's MoEAlltoAllTokenDispatcher (A2A over EP, AG / RS over ETP, the same backward)
 * and the model's dims; expert GEMM rows and parameters per rank; the expert gradient buffer
 * over the expert data-parallel group; check-trace clean; one-line errors. Expected figures are
 * computed here from the formulas, never read from modtrans's output.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildPlan } from '../../src/plan/build.js';
import { heldParams } from '../../src/plan/held-params.js';
import type { ParallelPlan, WorldShape } from '../../src/plan/types.js';
import { decodeEtFile, decodedAttr } from '../../src/writers/chakra-encoding.js';
import { analyseBuilt } from '../helpers/arch/analyse.js';
import { MIXTRAL_FORMS, mixtralModel, type MixtralOptions } from '../helpers/arch/mixtral.js';
import { runCliBatch } from '../helpers/cli-batch.js';

const model: MixtralOptions = { layers: 2, hidden: 64, heads: 8, kvHeads: 2, ffn: 96, seq: 16, batch: 2, vocab: 100, experts: 8, topK: 2 };
const FP16 = 2;
const TP = 2;
const EP = 4;
const DP = 4;
const MICRO_BATCHES = 2; // --global-batch 16 = DP 4 x 2 micro-batches x 2 samples
/** Tokens of one micro-batch, and of one rank's sequence shard (SP over TP). */
const TOKENS = model.batch * model.seq;
const SHARD = TOKENS / TP;
/** Uniform routing: each rank sends each expert ceil(T x k / E) of its tokens (capacity factor 1). */
const PER_EXPERT = Math.ceil((SHARD * model.topK) / model.experts);
const ROUTED = model.experts * PER_EXPERT;
const TOKEN_BYTES = ROUTED * model.hidden * FP16;
const PROB_BYTES = ROUTED * FP16;
/** One SwiGLU expert: w1 and w3 (h -> ffn), w2 (ffn -> h), no biases. */
const EXPERT_PARAMS = 3 * model.hidden * model.ffn;
const LOCAL_EXPERTS = model.experts / EP;

const dir = mkdtempSync(join(tmpdir(), 'modtrans-ep-'));
const file = join(dir, 'mixtral.onnx');
const COMM = { 0: 'ALLREDUCE', 2: 'ALLGATHER', 6: 'ALLTOALL', 7: 'REDUCESCATTER' } as Record<number, string>;

/** Rank 0's dispatcher and expert-gradient collectives per iteration: "TYPE ranks bytes" -> count. */
function table(prefix: string): Map<string, number> {
  const groups = JSON.parse(readFileSync(`${prefix}.comm-groups.json`, 'utf8')) as Record<string, number[]>;
  const out = new Map<string, number>();
  for (const n of decodeEtFile(readFileSync(`${prefix}.0.et`)).nodes) {
    if (n.type !== 'COMM_COLL_NODE' || !/dispatch|combine|expert-bucket/.test(n.name)) continue;
    const key = `${COMM[decodedAttr(n, 'comm_type')?.value as number]} [${groups[String(decodedAttr(n, 'pg_name')?.value)]?.join(',')}] ${decodedAttr(n, 'comm_size')?.value}`;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

const perIteration = (perLayerPerMicroBatch: number): number => perLayerPerMicroBatch * model.layers * MICRO_BATCHES;

describe('expert parallelism: Mixtral-like MoE at TP 2 (SP) x EP 4 x DP 4, Megatron-core all-to-all dispatcher', () => {
  const results: { status: number; stderr: string }[] = [];
  beforeAll(async () => {
    writeFileSync(file, mixtralModel(model).bytes);
    const base = ['translate', file, '--tp', String(TP), '--sp', '--ep', String(EP), '--dp', String(DP), '--micro-batch', '2', '--global-batch', '16', '--dtype', 'fp16', '--format', 'chakra'];
    results.push(...(await runCliBatch([
      { args: [...base, '--etp', '1', '-o', join(dir, 'etp1/m')], cwd: dir },
      { args: ['check-trace', join(dir, 'etp1/m')], cwd: dir },
      { args: [...base, '-o', join(dir, 'etp2/m')], cwd: dir },
      { args: ['check-trace', join(dir, 'etp2/m')], cwd: dir },
    ])));
  });

  it('writes both trace sets and check-trace finds them clean (exit 0)', () => {
    expect(results.map((r) => r.status)).toEqual([0, 0, 0, 0]);
    expect(results[1]?.stderr).not.toMatch(/error/);
  });

  it('ETP 1: per MoE layer and micro-batch 6 all-to-alls over the EP group [0..3] (tokens and probabilities, forward and backward); expert gradients all-reduced once over the expert data-parallel group [0, 4]', () => {
    // Expert grid, order tp-cp-ep-dp-pp with ETP 1: EP stride 1, EDP = 8 / (1 x 4 x 1) = 2 with stride 4.
    const expertGradBytes = LOCAL_EXPERTS * model.layers * EXPERT_PARAMS * FP16; // fp16 training reduces in fp16 (Megatron)
    expect(table(join(dir, 'etp1/m'))).toEqual(new Map([
      [`ALLTOALL [0,1,2,3] ${TOKEN_BYTES}`, perIteration(4)],
      [`ALLTOALL [0,1,2,3] ${PROB_BYTES}`, perIteration(2)],
      [`ALLREDUCE [0,4] ${expertGradBytes}`, 1],
    ]));
  });

  it('ETP 2 (= TP): the same all-to-alls over EP [0, 2, 4, 6]; all-gathers and reduce-scatters over ETP [0, 1]; EDP 8 / (2 x 4) = 1, so no expert gradient reduction', () => {
    expect(table(join(dir, 'etp2/m'))).toEqual(new Map([
      [`ALLTOALL [0,2,4,6] ${TOKEN_BYTES}`, perIteration(4)],
      [`ALLTOALL [0,2,4,6] ${PROB_BYTES}`, perIteration(2)],
      // Forward: tokens and probabilities gathered; backward: the output gradient gathered.
      [`ALLGATHER [0,1] ${TOKEN_BYTES}`, perIteration(2)],
      [`ALLGATHER [0,1] ${PROB_BYTES}`, perIteration(1)],
      // Forward: the experts' output; backward: the tokens' and probabilities' gradients (whole buffers: ETP x the shard).
      [`REDUCESCATTER [0,1] ${2 * TOKEN_BYTES}`, perIteration(2)],
      [`REDUCESCATTER [0,1] ${2 * PROB_BYTES}`, perIteration(1)],
    ]));
  });
});

describe.each(MIXTRAL_FORMS)('expert parallelism on the %s form: expert GEMMs and parameters per rank', (_, dispatch) => {
  const a = analyseBuilt(mixtralModel({ ...model, ...dispatch }));
  const planAt = (world: WorldShape): ParallelPlan =>
    buildPlan(a, { world, batch: { globalBatch: 16, microBatch: 2, microBatches: MICRO_BATCHES }, sequenceParallel: true, zero: 0, dtype: 'fp16', layerCycles: () => 1 });

  for (const etp of [1, 2]) {
    it(`ETP ${etp}: EP rank 0 runs experts 0 and 1 of each layer on EP x ETP x ${PER_EXPERT} rows with 1/ETP of their features; experts 2 to 7 run nowhere on it`, () => {
      const p = planAt({ tp: TP, dp: DP, pp: 1, ep: EP, etp });
      for (let layer = 0; layer < model.layers; layer++) {
        for (let e = 0; e < model.experts; e++) {
          const w1 = p.layers.find((l) => l.layer.name.includes(`layers.${layer}.`) && l.layer.name.includes(`experts.${e}.w1`));
          expect(w1, `layer ${layer} expert ${e}`).toBeDefined();
          if (e < LOCAL_EXPERTS) {
            expect(w1?.passes.fwd.map((g) => [g.gemm.m, g.gemm.n, g.gemm.k])).toEqual([[EP * etp * PER_EXPERT, model.ffn / etp, model.hidden]]);
            expect(w1?.weightParamsHeld).toBe((model.hidden * model.ffn) / etp);
          } else {
            expect(w1?.passes.fwd).toEqual([]);
            expect(w1?.weightParamsHeld).toBe(0);
          }
        }
      }
      // Every rank holds its local experts' share: E / EP experts x layers x params / ETP.
      const expertHeld = p.layers.reduce((s, l) => s + (l.expert === undefined ? 0 : l.weightParamsHeld + l.biasParamsHeld), 0);
      expect(expertHeld).toBe((LOCAL_EXPERTS * model.layers * EXPERT_PARAMS) / etp);
      expect(heldParams(p, 0)).toBeGreaterThan(expertHeld);
    });
  }
});

/** The shipped MoE example (README, "Expert parallelism"): this builder's model, byte for byte. */
const MOE_EXAMPLE: MixtralOptions = { layers: 4, hidden: 256, heads: 8, kvHeads: 2, ffn: 512, seq: 128, batch: 1, vocab: 32000, experts: 8, topK: 2, dynamic: true, dispatch: 'index' };

describe('examples/mixtral_moe_like.onnx', () => {
  it('is the Mixtral builder\'s graph-only index-form model (MODTRANS_WRITE_EXAMPLES=1 rewrites it)', () => {
    const path = new URL('../../examples/mixtral_moe_like.onnx', import.meta.url);
    const bytes = mixtralModel(MOE_EXAMPLE).bytes;
    if (process.env['MODTRANS_WRITE_EXAMPLES'] === '1') writeFileSync(path, bytes);
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(bytes))).toBe(true);
  });
});

describe('expert parallelism: what is refused, in one line with exit 2', () => {
  it('EP not dividing the experts; TP without SP; a model without a mixture; --ep in the text format', async () => {
    const dense = join(dir, 'dense.onnx');
    writeFileSync(dense, mixtralModel({ ...model, experts: 4 }).bytes);
    const gpt = join(dir, 'no-moe.onnx');
    const { llamaModel } = await import('../helpers/arch/llama.js');
    writeFileSync(gpt, llamaModel({ ...model }).bytes);
    const r = await runCliBatch([
      { args: ['translate', dense, '--tp', '2', '--sp', '--ep', '3', '--dp', '3', '--format', 'chakra', '-o', join(dir, 'bad/m')], cwd: dir },
      { args: ['translate', dense, '--tp', '2', '--ep', '2', '--dp', '2', '--format', 'chakra', '-o', join(dir, 'bad/m')], cwd: dir },
      { args: ['translate', gpt, '--ep', '2', '--dp', '2', '--format', 'chakra', '-o', join(dir, 'bad/m')], cwd: dir },
      { args: ['translate', dense, '--ep', '2', '--dp', '2'], cwd: dir },
    ]);
    expect(r.map((x) => x.status)).toEqual([2, 2, 2, 2]);
    expect(r[0]?.stderr).toMatch(/--ep 3: the mixture at '.*' has 4 experts; --ep must divide them/);
    expect(r[1]?.stderr).toMatch(/--ep 2 with --tp 2 needs --sp/);
    expect(r[2]?.stderr).toMatch(/--ep 2: the model has no mixture of experts/);
    expect(r[3]?.stderr).toMatch(/--ep 2: context and expert parallelism need --format chakra or chakra-json/);
    for (const x of r) expect(x.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('expert parallelism in memory per rank', () => {
  it("each rank holds its local experts' weights, gradients and Adam state (EP 4, ETP 1: 2 of 8 experts a rank), the dense layers' as without EP", async () => {
    const { planMemory } = await import('../../src/memory/report.js');
    const a = analyseBuilt(mixtralModel(model));
    const at = (world: WorldShape): ParallelPlan => buildPlan(a, { world, batch: { globalBatch: 16, microBatch: 2, microBatches: MICRO_BATCHES }, sequenceParallel: true, zero: 0, dtype: 'fp16', layerCycles: () => 1 });
    const withEp = at({ tp: TP, dp: DP, pp: 1, ep: EP, etp: 1 });
    const expertHeld = LOCAL_EXPERTS * model.layers * EXPERT_PARAMS;
    const dense = withEp.layers.reduce((s, l) => s + (l.expert === undefined ? l.weightParamsHeld + l.biasParamsHeld : 0), 0) + withEp.otherParams;
    const rank = planMemory(withEp, 'adam').ranks[0];
    // fp16 weights and gradients (2 bytes each), Adam's fp32 master, momentum and variance (12).
    expect(rank?.weightsBytes).toBe(2 * Math.round(dense + expertHeld));
    expect(rank?.optimizerBytes).toBe(12 * Math.round(dense + expertHeld));
  });
});
