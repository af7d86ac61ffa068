/**
 * `modtrans check-trace PREFIX [--comm-groups FILE] [--network-dims N] [--peak-perf TFLOPS
 * [--local-mem-bw GBps]] [--format text|json]`:
 * checks PREFIX.<rank>.et (and PREFIX.comm-groups.json) for everything that would make ASTRA-sim
 * 2.x crash, hang or mis-time the run. Exit 0 when clean, 2 when anything is found.
 */
import { existsSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { InputError } from '../errors.js';
import { positiveInt } from './options.js';
import { writeStdout } from './stdio.js';
import { type ExitCode, FAILURE, SUCCESS, returningExitCode } from './exit-code.js';

export interface CheckTraceOptions {
  commGroups?: string;
  networkDims?: number;
  peakPerf?: number;
  localMemBw?: number;
  format: 'text' | 'json';
}

function positiveNumber(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0) throw new InputError(`${flag} ${value}: expected a positive number`);
    return n;
  };
}

export function registerCheckTraceCommand(program: Command): void {
  program
    .command('check-trace')
    .description('check Chakra traces PREFIX.<rank>.et for what would make ASTRA-sim 2.x crash, hang or mis-time them')
    .argument('<prefix>', 'trace prefix, as given to ASTRA-sim --workload-configuration (also PREFIX.et, or a folder holding one set)')
    .option('--comm-groups <file>', 'comm-group JSON {"1": [ranks...]} (default: PREFIX.comm-groups.json when it exists)')
    .option('--network-dims <N>', 'network dimensions (entries of npus_count): involved_dim must have N entries', positiveInt('--network-dims'))
    .option('--peak-perf <TFLOPS>', 'roofline mode: the system JSON peak-perf; compute nodes that would last 0 ns are reported', positiveNumber('--peak-perf'))
    .option('--local-mem-bw <GBps>', 'roofline mode: the system JSON local-mem-bw (without it, nodes count as compute-bound)', positiveNumber('--local-mem-bw'))
    .addOption(new Option('--format <format>', 'findings as text lines or JSON').choices(['text', 'json']).default('text'))
    .action(returningExitCode(async (prefix: string, opts: CheckTraceOptions) => runCheckTrace(prefix, opts)));
}

async function readGroups(prefix: string, file: string | undefined): Promise<{ path: string; json: unknown } | undefined> {
  const path = file ?? `${prefix}.comm-groups.json`;
  if (file === undefined && !existsSync(path)) return undefined;
  const { readRegularFile, MAX_JSON_BYTES } = await import('../check/trace-set.js');
  const text = readRegularFile(path, MAX_JSON_BYTES, 'comm-groups file').toString('utf8');
  try {
    return { path, json: JSON.parse(text) as unknown };
  } catch (e) {
    throw new InputError(`${path}: not JSON (${(e as Error).message})`);
  }
}

export async function runCheckTrace(prefixArg: string, opts: CheckTraceOptions): Promise<ExitCode> {
  const { checkTraceSet } = await import('../check/check-traces.js');
  const { openTraceSet } = await import('../check/trace-set.js');
  const { formatFinding } = await import('../check/findings.js');
  const set = openTraceSet(prefixArg);
  const { prefix, files } = set;
  const groups = await readGroups(prefix, opts.commGroups);
  if (opts.localMemBw !== undefined && opts.peakPerf === undefined) throw new InputError('--local-mem-bw needs --peak-perf (roofline mode)');
  const roofline = opts.peakPerf === undefined ? undefined : { peakTflops: opts.peakPerf, localMemGBps: opts.localMemBw };
  const { findings, effects, omitted, stats } = checkTraceSet(files, groups?.json, { networkDims: opts.networkDims, groupsSource: groups?.path, roofline, fileFindings: set.findings, expectedRanks: set.ranks });
  const counted = `${stats.files} files, ${stats.nodes} nodes, ${stats.collectives} collectives, ${stats.sends} sends / ${stats.recvs} recvs checked`;
  if (opts.format === 'json') {
    const doc = { prefix, manifest: set.manifest ?? null, comm_groups: groups?.path ?? null, network_dims: opts.networkDims ?? null, roofline: roofline ?? null, clean: findings.length === 0, stats, effects, omitted, findings };
    writeStdout(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    const lines = findings.map(formatFinding);
    const total = findings.length + omitted;
    const tally = Object.entries(effects).filter(([, n]) => n > 0).map(([e, n]) => `${n} ${e}`).join(', ');
    const listedNote = omitted > 0 ? `; the first ${findings.length} listed` : '';
    lines.push(total === 0 ? `clean: ${counted}` : `${total} finding(s) (${tally}${listedNote}): ${counted}`);
    writeStdout(`${lines.join('\n')}\n`);
  }
  // Findings are the command's result, not an error: printed in full, then exit 2 (README, "Checking traces").
  return findings.length > 0 ? FAILURE : SUCCESS;
}
