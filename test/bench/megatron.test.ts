/** The `megatron` bench suite (bench/megatron.ts): Table 1's figures against the paper's own formulas, and the no-binary path on one row. */
import { describe, expect, it } from 'vitest';
import {
  dataParallel, extrapolateStep, MEGATRON_SEQ, MEGATRON_TABLE1, MEGATRON_VOCAB, megatronGptOptions, microBatches, paperFlopsPerStep,
  paperParameterCount, planArgs, runMegatronBench, simulatedCounts, virtualStages,
} from '../../bench/megatron.js';
import { gptParameterCount, writeGptModel } from '../../bench/models/gpt-graph.js';
import { runPlanStages } from '../../src/cli/plan-run.js';
import { predictFreeNetwork } from '../../src/predict/free-network.js';
import { buildStepSchedule } from '../../src/schedule/build.js';
import { parseArgs } from '../../bench/run.js';
import { ROOT } from '../helpers/models.js';

const V = MEGATRON_VOCAB;
const s = MEGATRON_SEQ;

describe('bench megatron: Table 1', () => {
  it('has the ten rows, each parameter count the paper prints rounded from its eq. 2, 12lh^2(1 + 13/12h + (V+s)/12lh)', () => {
    expect(MEGATRON_TABLE1.map((r) => r.row)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const r of MEGATRON_TABLE1) {
      const { layers: l, hidden: h } = r;
      // The same count term by term: 12lh^2 weights, 13lh biases and norms, (V + s)h embeddings.
      const exact = 12 * l * h * h + 13 * l * h + (V + s) * h;
      expect(paperParameterCount(r) / exact, `row ${r.row}`).toBeCloseTo(1, 12);
      expect(Math.round(exact / 1e8) / 10, `row ${r.row}`).toBe(r.paramsB);
      // The graph the bench builds holds the same parameters plus the final LayerNorm (2h), which eq. 2 leaves out.
      expect(gptParameterCount(megatronGptOptions(r)), `row ${r.row}`).toBe(exact + 2 * h);
    }
  });

  it('has each row\'s peak share as the TFLOP/s over the A100\'s 312 and the aggregate as TFLOP/s x GPUs (to the per-GPU figure\'s rounding)', () => {
    for (const r of MEGATRON_TABLE1) {
      expect(Math.round((100 * r.tflops) / 312), `row ${r.row}`).toBe(r.peakPercent);
      expect(Math.abs((r.tflops * r.gpus) / 1000 - r.aggregatePflops), `row ${r.row}`).toBeLessThan((0.5 * r.gpus) / 1000 + 0.05);
    }
  });

  it('splits every row into whole replicas and micro-batches that the interleaved schedule takes (m a multiple of p, l / p divisible by v)', () => {
    for (const r of MEGATRON_TABLE1) {
      const d = dataParallel(r);
      expect(Number.isInteger(d) && r.tp * r.pp * d === r.gpus, `row ${r.row}`).toBe(true);
      expect(Number.isInteger(microBatches(r)), `row ${r.row}`).toBe(true);
      expect(microBatches(r) % r.pp, `row ${r.row}`).toBe(0);
      expect((r.layers / r.pp) % virtualStages(r), `row ${r.row}`).toBe(0);
    }
    const row8 = MEGATRON_TABLE1[7];
    expect(row8 && [dataParallel(row8), microBatches(row8), virtualStages(row8)]).toEqual([15, 144, 2]);
    // 60 layers on 4 stages: 15 per stage, 3 chunks of 5; row 9's 3 layers per stage, 3 chunks.
    expect([MEGATRON_TABLE1[5], MEGATRON_TABLE1[8]].map((r) => r && virtualStages(r))).toEqual([3, 3]);
  });

  it('counts FLOPs as the paper\'s appendix: 4 passes of 24Bsh^2 + 4Bs^2h per layer (recomputation) plus 6BshV for the logits', () => {
    for (const r of MEGATRON_TABLE1) {
      const { layers: l, hidden: h, batch: B } = r;
      const termByTerm = 4 * l * (24 * B * s * h * h + 4 * B * s * s * h) + 6 * B * s * h * V;
      expect(paperFlopsPerStep(r) / termByTerm, `row ${r.row}`).toBeCloseTo(1, 12);
    }
  });

  it('simulates 1 and 2 micro-batches without pipeline stages, 2p and 3p with them, and extrapolates on the line through them', () => {
    const [row1, , , , row5] = MEGATRON_TABLE1;
    expect(row1 && simulatedCounts(row1)).toEqual([1, 2]);
    expect(row5 && simulatedCounts(row5)).toEqual([4, 6]);
    expect(extrapolateStep([4, 6], [100, 130], 48)).toBe(100 + 44 * 15);
    expect(extrapolateStep([16], [700], 16)).toBe(700);
    expect(row5 && planArgs(row5, 4)).toEqual([
      '--hardware', 'a100-sxm-80gb', '--optimizer', 'adam', '--dtype', 'fp16', '--tp', '8', '--pp', '2', '--dp', '32',
      '--global-batch', '128', '--micro-batch', '1', '--recompute', 'full', '--pp-schedule', 'interleaved', '--vpp', '2',
    ]);
  });

  it('rests on a step linear in the micro-batches past the warm-up: equal increments from 2p on, interleaved (free network)', async () => {
    const model = writeGptModel({ layers: 8, hidden: 64, heads: 4, seq: 32, batch: 1, vocab: 128, fusedQkv: true, tiedHead: true, mlp: 'gelu', scaledScores: false, dropout: true });
    const step = async (m: number): Promise<number> => {
      const opts = { hardware: 'a100-sxm-80gb', costModel: 'scalesim', optimizer: 'adam', vectorOps: 'on', dtype: 'fp16', params: 'all', tp: 2, pp: 2, dp: 2, globalBatch: 2 * m, microBatch: 1, recompute: 'full', ppSchedule: 'interleaved', vpp: 2 } as const;
      const { costed } = await runPlanStages(model, opts, { costed: true });
      if (costed === undefined) throw new Error('the plan was not costed');
      return predictFreeNetwork(buildStepSchedule(costed, {})).stepNs;
    };
    const [s4, s6, s8] = [await step(4), await step(6), await step(8)];
    expect(s8 - s6).toBeCloseTo(s6 - s4, 6);
    expect(extrapolateStep([4, 6], [s4, s6], 8)).toBeCloseTo(s8, 6);
  });

  it('without an ASTRA-sim binary skips the simulation with a note and still gives the free-network bound', async () => {
    const saved = process.env['ASTRA_SIM_BIN'];
    delete process.env['ASTRA_SIM_BIN'];
    try {
      const r = await runMegatronBench({ root: ROOT, rows: [1] });
      expect(r.astraSim).toBeNull();
      expect(r.rows).toHaveLength(1);
      const [row] = r.rows;
      expect(row).toMatchObject({ row: 1, params_b: 1.7, gpus: 32, measured_tflops: 137, simulated_tflops: null, ratio: null, step_ns: null });
      expect(row?.note).toMatch(/not simulated: no ASTRA-sim binary \(--astra-sim BIN or ASTRA_SIM_BIN\)/);
      // A bound: above nothing, below the A100's peak.
      expect(row?.free_network_tflops).toBeGreaterThan(0);
      expect(row?.free_network_tflops).toBeLessThan(312);
      expect(r.markdown).toContain('| 1 | 1.7 | 32 | 137 | - | - |');
    } finally {
      if (saved !== undefined) process.env['ASTRA_SIM_BIN'] = saved;
    }
  });

  it('refuses a row the table does not have, and takes --rows and --astra-sim on the bench\'s command line', async () => {
    await expect(runMegatronBench({ root: ROOT, rows: [11] })).rejects.toThrow(/--rows 11: no row 11 \(Table 1 has rows 1 to 10\)/);
    expect(parseArgs(['megatron', '--rows', '1,3', '--astra-sim', '/x/astra'])).toMatchObject({ suites: ['megatron'], rows: [1, 3], astraSim: '/x/astra' });
    expect(() => parseArgs(['megatron', '--rows', '1,x'])).toThrow(/--rows 1,x: expected row numbers/);
    expect(() => parseArgs(['megatron', '--astra-sim'])).toThrow(/--astra-sim needs a path to the binary/);
  });
});
