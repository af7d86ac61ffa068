/**
 * `translate` fills the fwd / ig / wg compute columns from the SCALE-sim-exact model: a DLRM
 * bottom MLP built as ONNX must give, per layer and pass, the total cycles real SCALE-sim reported
 * for the same layers in its shipped dlrm_{fwd,inp_grad,weight_grad} topologies.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadHardwareProfile } from '../../../src/cost/hardware.js';
import { analyseModel, createCostModel, workloadOf } from '../../../src/pipeline.js';
import { writeAstraText } from '../../../src/writers/astra-text.js';
import { parseLikeAstra1 } from '../../helpers/astra-parsers.js';
import { fixturePath } from '../../helpers/models.js';
import { buildModel, FLOAT } from '../../helpers/onnx-builder.js';
import { present } from '../../helpers/present.js';

/** total_cycles per layer name from a tidied SCALE-sim run. */
function reportedCycles(run: string): Map<string, number> {
  const [header, ...rows] = readFileSync(fixturePath(`scalesim/runs/${run}.csv`), 'utf8').trim().split('\n');
  const cols = present(header, `header of ${run}.csv`).split(',');
  const name = cols.indexOf('layer_name');
  const total = cols.indexOf('total_cycles');
  return new Map(rows.map((r) => r.split(',')).map((c) => [present(c[name], `layer_name in ${run}.csv`), Number(c[total])]));
}

const widths = [13, 512, 512, 512, 16];
const dir = mkdtempSync(join(tmpdir(), 'modtrans-dlrm-'));
const modelFile = join(dir, 'dlrm_bottom.onnx');
writeFileSync(modelFile, buildModel({
  inputs: [{ name: 'dense', dtype: FLOAT, dims: [128, 13] }],
  outputs: [{ name: 'h4', dtype: FLOAT, dims: [] }],
  initializers: widths.slice(1).flatMap((out, i) => [
    { name: `MLP_Bottom_${i}.weight`, dtype: FLOAT, dims: [out, present(widths[i], `width ${i}`)], external: { location: 'none.bin' } },
    { name: `MLP_Bottom_${i}.bias`, dtype: FLOAT, dims: [out], external: { location: 'none.bin' } },
  ]),
  nodes: widths.slice(1).map((_, i) => ({
    op: 'Gemm', inputs: [i === 0 ? 'dense' : `h${i}`, `MLP_Bottom_${i}.weight`, `MLP_Bottom_${i}.bias`], outputs: [`h${i + 1}`], attrs: { transB: 1 },
  })),
}));

describe.each(['os', 'ws', 'is'])('scale.cfg, %s dataflow', (dataflow) => {
  it('fwd, ig and wg columns equal SCALE-sim total cycles', async () => {
    const profile = await loadHardwareProfile(fixturePath(`scalesim/configs/variants/scale_${dataflow}.cfg`));
    const workload = workloadOf(analyseModel(modelFile), await createCostModel(profile), { parallelism: 'DATA', npus: 1, mpGroup: 1, dtype: 'fp32', params: 'all' });
    const layers = parseLikeAstra1(writeAstraText(workload, 'cycles')).layers;
    const fwd = reportedCycles(`scale__${dataflow}__dlrm_fwd`);
    const ig = reportedCycles(`scale__${dataflow}__dlrm_inp_grad`);
    const wg = reportedCycles(`scale__${dataflow}__dlrm_weight_grad`);
    expect(layers.map((l) => [l.name, l.fwdCompute, l.igCompute, l.wgCompute])).toEqual(
      layers.map((l) => [l.name, fwd.get(l.name), ig.get(l.name), wg.get(l.name)]),
    );
    expect(layers.map((l) => l.name)).toEqual(['MLP_Bottom_0', 'MLP_Bottom_1', 'MLP_Bottom_2', 'MLP_Bottom_3']);
  });
});

describe('--bandwidth-mode user', () => {
  it('turns SCALE-sim scale.cfg (ws) into its USER-bandwidth reference runs, stalls included', async () => {
    const { withCostOptions } = await import('../../../src/cli/options.js');
    const calc = await loadHardwareProfile(fixturePath('scalesim/configs/variants/scale_ws.cfg'));
    const model = await createCostModel(withCostOptions(calc, { bandwidthMode: 'user' }));
    // scaleuser__ws__test.csv: total and stall cycles (the window-thrash case of docs/scalesim-model.md §7c).
    const cost = model.costGemm({ m: 25, n: 384, k: 1728 });
    expect([cost.cycles, cost.stallCycles]).toEqual([1_790_725, 1_713_614]);
    expect((await createCostModel(calc)).costGemm({ m: 25, n: 384, k: 1728 }).stallCycles).toBe(0);
  });
});
