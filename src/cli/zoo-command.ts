/**
 * `modtrans zoo list` and `modtrans zoo fetch NAME [--cache-dir DIR] [--base-url URL]`: the classic
 * ONNX Model Zoo by name. `translate zoo:NAME` (see src/zoo/resolve.ts) fetches on first use too.
 * The zoo modules are imported only when a zoo command runs.
 */
import type { Command } from 'commander';
import { writeStdout } from './stdio.js';
import { at } from '../errors.js';
import { type ExitCode, SUCCESS, returningExitCode } from './exit-code.js';

interface ZooOptions {
  cacheDir?: string;
  baseUrl?: string;
}

/** The options every zoo subcommand shares (ZooOptions). */
function withZooOptions(command: Command): Command {
  return command
    .option('--cache-dir <dir>', 'cache folder (default: $XDG_CACHE_HOME/modtrans or ~/.cache/modtrans)')
    .option('--base-url <url>', 'mirror holding the archives by file name (or MODTRANS_ZOO_BASE_URL)');
}

export function registerZooCommand(program: Command): void {
  const zoo = program.command('zoo').description('classic ONNX Model Zoo models by name (use as MODEL: zoo:NAME)');
  withZooOptions(zoo.command('list').description('the zoo models, their archive URL, recorded SHA-256 and whether they are cached'))
    .action(returningExitCode(async (opts: ZooOptions) => runZooList(opts)));
  withZooOptions(
    zoo
      .command('fetch')
      .description('download and unpack NAME into the cache (resumes an interrupted download); prints the model path')
      .argument('<name>', 'zoo model name (see `modtrans zoo list`)'),
  ).action(returningExitCode(async (name: string, opts: ZooOptions) => runZooFetch(name, opts)));
}

export async function runZooList(opts: ZooOptions): Promise<ExitCode> {
  const { loadRegistry, archiveUrl, mirrorBaseUrl } = await import('../zoo/registry.js');
  const { cachedModel, defaultCacheDir } = await import('../zoo/fetch.js');
  const registry = loadRegistry();
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const mirror = mirrorBaseUrl(opts.baseUrl);
  const rows = registry.models.map((m) => [
    m.aliases.length > 0 ? `${m.name} (${m.aliases.join(', ')})` : m.name,
    cachedModel(cacheDir, m) !== undefined ? 'cached' : '-',
    m.sha256 === null ? 'not recorded' : `${m.sha256.slice(0, 12)}...`,
    archiveUrl(m, mirror),
  ]);
  const header = ['name', 'cache', 'sha256', 'url'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => at(r, i).length)));
  const line = (r: string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(at(widths, i)))).join('  ');
  const unverified = registry.models.filter((m) => m.sha256 === null).length;
  writeStdout(
    [line(header), ...rows.map(line), '',
      `cache: ${cacheDir}`,
      unverified > 0 ? `${unverified} of ${registry.models.length} archives have no recorded SHA-256: their downloads cannot be verified.` : 'every archive has a recorded SHA-256, checked after download.',
      ''].join('\n'),
  );
  return SUCCESS;
}

export async function runZooFetch(name: string, opts: ZooOptions): Promise<ExitCode> {
  const { resolveModelInput, ZOO_PREFIX } = await import('../zoo/resolve.js');
  const path = await resolveModelInput(name.startsWith(ZOO_PREFIX) ? name : `${ZOO_PREFIX}${name}`, opts);
  writeStdout(`${path}\n`);
  return SUCCESS;
}
