/**
 * USER-mode re-fetching: when an operand does not fit the active half of its SRAM, SCALE-sim's
 * read buffer streams it from DRAM again for every fold that re-reads it, and its forward-only set
 * window can thrash (docs/scalesim-model.md §7c): the fc layers of VGG16 on a 16x16 array read their weights from
 * DRAM thousands of times over. This module finds such layers and the SRAM that would avoid it.
 *
 * SRAM that holds an operand of L words (read-buffer-user.ts): with eps = ceil(S/100) words per
 * set, the operand's words fill sets 0 .. ceil(L/eps) - 1 of its prefetch order, and the window
 * first covers the ceil(A/eps) sets of the active half A = ceil(S/2). Nothing ever misses (each
 * word is fetched once) iff ceil(L/eps) <= ceil(A/eps), i.e. L <= A rounded up to a multiple of
 * eps. Within one eps (S in (100 (eps-1), 100 eps]) that is possible only if 50 eps >= L, and the
 * left side grows with S, so the smallest S is at e = max(1, ceil(L/50)):
 *   S = max(100 (e - 1) + 1, 2 e (ceil(L/e) - 1) + 1) words per array   (about 2 L: double buffering)
 * A profile's SRAM is shared by its arrays, so the profile needs S x elementBytes x arrays bytes.
 */
import { splitAcrossArrays } from './systolic/multi-array.js';
import type { LayerPasses } from '../layers/types.js';
import type { CostModel } from './types.js';

/** Smallest SRAM (words) whose USER-mode read buffer holds an operand of `words` without a miss. */
export function userSramWordsToHold(words: number): number {
  const e = Math.max(1, Math.ceil(words / 50));
  return Math.max(100 * (e - 1) + 1, 2 * e * (Math.ceil(words / e) - 1) + 1);
}

/** DRAM reads of at least this many times an operand's size are worth a warning. */
export const REFETCH_WARNING_TIMES = 1000;

export interface RefetchFinding {
  layer: string;
  pass: 'fwd' | 'ig' | 'wg';
  operand: 'ifmap' | 'filter';
  /** DRAM reads / operand words. */
  times: number;
  operandWords: number;
  /** Profile SRAM (all arrays) that would hold the operand, bytes. */
  neededSramBytes: number;
  sramBytes: number;
}

/** The worst re-fetched operand of each layer whose DRAM reads reach `minTimes` x its size. */
export function refetchFindings(layers: readonly { name: string; passes: LayerPasses }[], model: CostModel, minTimes = REFETCH_WARNING_TIMES): RefetchFinding[] {
  const p = model.profile;
  if (p.bandwidthMode !== 'user') return [];
  const array = { rows: p.arrayRows, cols: p.arrayCols };
  const findings: RefetchFinding[] = [];
  for (const layer of layers) {
    let worst: RefetchFinding | undefined;
    for (const pass of ['fwd', 'ig', 'wg'] as const) {
      for (const { gemm } of layer.passes[pass]) {
        const dram = model.costGemm(gemm).dram;
        if (dram === undefined) continue;
        const { busiest, activeArrays } = splitAcrossArrays(gemm, array, p.dataflow, p.arrays);
        for (const [operand, reads, words] of [
          ['ifmap', dram.ifmapReads, busiest.m * busiest.k],
          ['filter', dram.filterReads, busiest.k * busiest.n],
        ] as const) {
          const times = words > 0 ? reads / activeArrays / words : 0;
          if (times < minTimes || (worst !== undefined && times <= worst.times)) continue;
          worst = {
            layer: layer.name, pass, operand, times, operandWords: words,
            neededSramBytes: userSramWordsToHold(words) * p.elementBytes * p.arrays,
            sramBytes: operand === 'ifmap' ? p.ifmapSramBytes : p.filterSramBytes,
          };
        }
      }
    }
    if (worst !== undefined) findings.push(worst);
  }
  return findings;
}

const PASS_NAME = { fwd: 'forward', ig: 'input-gradient', wg: 'weight-gradient' } as const;

function bytesText(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toPrecision(3)} ${units[u]}`;
}

/** One line per finding, for stderr. */
export function refetchWarnings(findings: readonly RefetchFinding[], profileName: string): string[] {
  return findings.map((f) =>
    `layer ${f.layer}: its ${PASS_NAME[f.pass]} ${f.operand} (${f.operandWords.toLocaleString('en-US')} words) is read from DRAM ` +
    `${Math.round(f.times).toLocaleString('en-US')} times over in USER mode on ${profileName}; ` +
    `${f.operand === 'ifmap' ? 'an' : 'a'} ${f.operand}Sram of ${bytesText(f.neededSramBytes)} (now ${bytesText(f.sramBytes)}) would hold it`,
  );
}

/** The warnings of `refetchFindings` for a cost model's profile. */
export function refetchWarningsFor(layers: readonly { name: string; passes: LayerPasses }[], model: CostModel): string[] {
  return refetchWarnings(refetchFindings(layers, model), model.profile.name);
}
