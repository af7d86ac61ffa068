/**
 * `translate --format scalesim -o DIR`: the GEMMs one NPU runs (built in report/scalesim.ts), as
 * SCALE-sim v2 topology CSVs (forward, input gradient, weight gradient, plus the forward as an
 * `-i gemm` M,N,K file) and a `.cfg` of the profile, so any layer can be re-run in real SCALE-sim.
 * SCALE-sim's rules (docs/scalesim-model.md §2-3): a header line, every row ends with a comma (the
 * last field is dropped), no padding.
 */
import { join } from 'node:path';
import type { ConvRow, ScaleSimCfgExport, ScaleSimTopologies } from '../report/scalesim.js';
import type { Writer } from './output.js';

export const CONV_HEADER = 'Layer name,Ifmap height,ifmap width,filter height,filter width,channels,num filters,strides,';
export const GEMM_HEADER = 'Layer,M,N,K,';

function rowText(r: ConvRow): string {
  const strides = r.strideHeight === r.strideWidth ? `${r.strideHeight}` : `${r.strideHeight},${r.strideWidth}`;
  return `${r.name},${r.ifmapHeight},${r.ifmapWidth},${r.filterHeight},${r.filterWidth},${r.channels},${r.numFilters},${strides},`;
}

export function convCsv(rows: readonly ConvRow[]): string {
  return [CONV_HEADER, ...rows.map(rowText)].join('\n') + '\n';
}

export function gemmCsv(rows: ScaleSimTopologies['fwdGemm']): string {
  return [GEMM_HEADER, ...rows.map((r) => `${r.name},${r.gemm.m},${r.gemm.n},${r.gemm.k},`)].join('\n') + '\n';
}

/** A SCALE-sim v2 .cfg for one array of the profile (values from report/scalesim.ts scalesimConfigOf). */
export function scalesimCfg(c: ScaleSimCfgExport): string {
  return [
    `# modtrans export of hardware profile '${c.profileName}' (${c.clockMHz} MHz, ${c.arrays} array(s), ${c.elementBytes}-byte words).`,
    '# SCALE-sim simulates one array; modtrans spreads folds over the arrays and converts cycles with the clock.',
    '[general]',
    `run_name = ${c.runName}`,
    '',
    '[architecture_presets]',
    `ArrayHeight:    ${c.arrayHeight}`,
    `ArrayWidth:     ${c.arrayWidth}`,
    `IfmapSramSzkB:    ${c.ifmapSramKiB}`,
    `FilterSramSzkB:   ${c.filterSramKiB}`,
    `OfmapSramSzkB:    ${c.ofmapSramKiB}`,
    `IfmapOffset:    ${c.ifmapOffset}`,
    `FilterOffset:   ${c.filterOffset}`,
    `OfmapOffset:    ${c.ofmapOffset}`,
    `Dataflow : ${c.dataflow}`,
    `Bandwidth : ${c.bandwidths.join(',')}`,
    'MemoryBanks: 1',
    '',
    '[run_presets]',
    `InterfaceBandwidth: ${c.bandwidthMode === 'user' ? 'USER' : 'CALC'}`,
    '',
  ].join('\n');
}

/** File name -> content for `translate --format scalesim -o DIR`. */
export function scalesimExport(stem: string, topo: ScaleSimTopologies, config: ScaleSimCfgExport): Map<string, string> {
  return new Map([
    [`${stem}_fwd.csv`, convCsv(topo.fwd)],
    [`${stem}_input_grad.csv`, convCsv(topo.inputGrad)],
    [`${stem}_weight_grad.csv`, convCsv(topo.weightGrad)],
    [`${stem}_fwd_gemm.csv`, gemmCsv(topo.fwdGemm)],
    [`${config.runName}.cfg`, scalesimCfg(config)],
  ]);
}

/** `--format scalesim -o DIR`: the topologies of model `stem` and the profile's .cfg, in `dir`. */
export const scalesimWriter: Writer<{ stem: string; topologies: ScaleSimTopologies; config: ScaleSimCfgExport }, { dir: string }> = (input, o) => {
  const files = [...scalesimExport(input.stem, input.topologies, input.config)].map(([name, text]) => ({ path: join(o.dir, name), bytes: text }));
  return { files, notes: [], what: `${files.length} files in ${o.dir}` };
};
