/**
 * One translation in a fresh process, for bench/translate.ts: `translate-child MODEL [DIMS_JSON]` prints a JSON
 * line with the translation's wall time, bytes read, and this process's peak RSS. `--baseline`
 * loads the same modules and profile without a model: the RSS every child pays regardless.
 */
import { loadHardwareProfile } from '../src/cost/hardware.js';
import { analyseModel, createCostModel, workloadOf } from '../src/pipeline.js';
import { writeAstraText } from '../src/writers/astra-text.js';

export interface ChildResult {
  translateMs: number;
  bytesRead: number;
  fileBytes: number;
  layers: number;
  outputBytes: number;
  maxRssBytes: number;
  heapUsedBytes: number;
}

async function main(arg: string, dims: [string, number][]): Promise<ChildResult> {
  const cost = await createCostModel(await loadHardwareProfile('tpu-256'));
  let result = { translateMs: 0, bytesRead: 0, fileBytes: 0, layers: 0, outputBytes: 0 };
  if (arg !== '--baseline') {
    const start = performance.now();
    const analysed = analyseModel(arg, { dims: new Map(dims) });
    const text = writeAstraText(workloadOf(analysed, cost, { parallelism: 'DATA', npus: 8, mpGroup: 1, dtype: 'fp32', params: 'all' }));
    const { bytesRead, fileBytes } = analysed.loaded.stats;
    result = { translateMs: performance.now() - start, bytesRead, fileBytes, layers: analysed.layers.length, outputBytes: text.length };
  }
  // maxRSS is in KiB.
  return { ...result, maxRssBytes: process.resourceUsage().maxRSS * 1024, heapUsedBytes: process.memoryUsage().heapUsed };
}

process.stdout.write(`${JSON.stringify(await main(process.argv[2] ?? '--baseline', JSON.parse(process.argv[3] ?? '[]') as [string, number][]))}\n`);
