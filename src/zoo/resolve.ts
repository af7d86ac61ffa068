/**
 * MODEL arguments of the CLI: `zoo:NAME` is a zoo model (fetched into the cache on first use, with
 * a progress bar on stderr); anything else is a path or a shipped example name.
 */
import { resolveModelPath } from '../models.js';

export const ZOO_PREFIX = 'zoo:';

export interface ResolveOptions {
  cacheDir?: string;
  /** Mirror of the archives (else MODTRANS_ZOO_BASE_URL, else the published URLs). */
  baseUrl?: string;
  /** No progress output. */
  quiet?: boolean;
}

export async function resolveModelInput(arg: string, options: ResolveOptions = {}): Promise<string> {
  if (!arg.startsWith(ZOO_PREFIX)) return resolveModelPath(arg);
  const name = arg.slice(ZOO_PREFIX.length);
  // Imported here, not at the top: downloads need crypto, zlib and streams, a local file does not;
  // the bar (cli-progress) is loaded only for zoo models.
  const { fetchZooModel } = await import('./fetch.js');
  const bar = options.quiet === true ? undefined : (await import('../progress.js')).progressBar(`downloading ${arg}`);
  try {
    return await fetchZooModel(name, {
      cacheDir: options.cacheDir,
      baseUrl: options.baseUrl,
      progress: bar?.update,
      notice: (line) => process.stderr.write(`modtrans: ${line}\n`),
    });
  } finally {
    bar?.done();
  }
}
