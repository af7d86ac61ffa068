/**
 * The `goals` bench suite: each performance figure of the project's issues 10 and 21 measured side
 * by side with its reference in the same run, as a ratio against the goal (issue 21's goals):
 * - start-up: `translate resnet50` (whole process) against a bare `node -e 0`, alternated;
 * - `scalesim` ResNet-18 (whole process) against SCALE-sim v2's wall time (RUNTIMES.csv, copied
 *   into test/fixtures/scalesim/; scale.cfg os is not in it, so issue 10's 870 s stands in);
 * - USER-mode `inspect vgg16 --hardware eyeriss` against `node -e 0`;
 * - a VGG16 with 553 MB of inline weights against Python's `onnx.load`, and shape inference
 *   against `onnx.shape_inference` (where python3 has onnx; skipped with a note otherwise);
 * - generated chains of 25k, 50k and 100k nodes: time, and time per node (linearity);
 * - `inspect` of the 96-layer GPT-3 graph (bench/models/gpt-graph.ts) against the CPU time recorded
 *   before the model-structure stage (issue 18: within 10%).
 * Every figure is a whole child process: wall clock and, where GNU time is installed, CPU time and
 * peak RSS (medians of several runs). Ratios use CPU time when there is one: on a shared machine
 * it is what load distorts least.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeInlineCopy } from './inline-copy.js';
import { chainModel } from './chain-model.js';
import { gptModel } from './models/gpt-graph.js';
import { median } from './median.js';

export interface GoalsBenchOptions {
  onProgress?: (done: number, total: number, label: string) => void;
  /** Repository root (the runner passes it). */
  root: string;
  /** Runs per timed figure (median); default 5. */
  runs?: number;
}

export interface GoalRow {
  figure: string;
  measured: string;
  reference: string;
  ratio: string;
  goal: string;
  met: 'yes' | 'no' | 'n/a';
}

export interface GoalsBenchResult {
  suite: 'goals';
  machine: { nproc: number; cpu: string; node: string; loadAverage1m: number };
  rows: GoalRow[];
  notes: string[];
  markdown: string;
}

export interface ProcessSample {
  wallMs: number;
  /** User + system CPU time (GNU time), or undefined without it. */
  cpuMs?: number;
  /** Peak RSS in bytes (GNU time), or undefined without it. */
  maxRssBytes?: number;
  /** Minor page faults (GNU time): each a fresh 4 KiB page the process touched first. */
  minorFaults?: number;
}

const GNU_TIME = '/usr/bin/time';
/** SCALE-sim v2 on ResNet-18 with scale.cfg (os), as issue 10 quotes it: not in RUNTIMES.csv. */
const SCALESIM_RESNET18_SCALE_OS_S = 870;

/** One whole process: wall time around spawnSync, peak RSS from GNU time when it is there. */
export function runProcess(command: string, args: string[], cwd: string): ProcessSample {
  const timeFile = join(tmpdir(), `modtrans-bench-time-${process.pid}`);
  const useTime = existsSync(GNU_TIME);
  const [cmd, argv] = useTime ? [GNU_TIME, ['-f', '%M %U %S %R', '-o', timeFile, command, ...args]] : [command, args];
  const start = performance.now();
  const r = spawnSync(cmd, argv, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  const wallMs = performance.now() - start;
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}): ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}`);
  let maxRssBytes: number | undefined;
  let cpuMs: number | undefined;
  let minorFaults: number | undefined;
  if (useTime) {
    const last = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1) ?? '';
    const [rssKiB, user, system, faults] = last.split(' ').map(Number);
    if (rssKiB === undefined || user === undefined || system === undefined || faults === undefined || [rssKiB, user, system, faults].some(Number.isNaN)) {
      throw new Error(`${GNU_TIME} wrote '${last}', not '%M %U %S %R'`);
    }
    maxRssBytes = rssKiB * 1024;
    cpuMs = (user + system) * 1000;
    minorFaults = faults;
    rmSync(timeFile, { force: true });
  }
  return { wallMs, cpuMs, maxRssBytes, minorFaults };
}

/** The median of figures GNU time may not have given: undefined unless every sample has one. */
function medianIfAll(values: (number | undefined)[]): number | undefined {
  const known = values.filter((v) => v !== undefined);
  return known.length === values.length && known.length > 0 ? median(known) : undefined;
}

/** Subject and reference alternated `runs` times (so load changes hit both), medians of each. */
function sideBySide(runs: number, subject: () => ProcessSample, reference: () => ProcessSample): { subject: ProcessSample; reference: ProcessSample } {
  const a: ProcessSample[] = [];
  const b: ProcessSample[] = [];
  for (let i = 0; i < runs; i++) {
    b.push(reference());
    a.push(subject());
  }
  const med = (xs: ProcessSample[]): ProcessSample => ({
    wallMs: median(xs.map((x) => x.wallMs)),
    cpuMs: medianIfAll(xs.map((x) => x.cpuMs)),
    maxRssBytes: medianIfAll(xs.map((x) => x.maxRssBytes)),
    minorFaults: medianIfAll(xs.map((x) => x.minorFaults)),
  });
  return { subject: med(a), reference: med(b) };
}

const ms = (x: number): string => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${x.toFixed(0)} ms`);
/** "wall (cpu)" of a sample. */
const both = (x: ProcessSample): string => (x.cpuMs === undefined ? ms(x.wallMs) : `${ms(x.wallMs)} (CPU ${ms(x.cpuMs)})`);
/**
 * subject / reference: by CPU time where GNU time gives it (on a shared machine the figure that
 * load distorts least), else by wall time.
 */
const ratioOf = (a: ProcessSample, b: ProcessSample): number => (a.cpuMs !== undefined && b.cpuMs !== undefined && b.cpuMs > 0 ? a.cpuMs / b.cpuMs : a.wallMs / b.wallMs);
const mb = (bytes: number | undefined): string => (bytes === undefined ? '?' : `${(bytes / 1e6).toFixed(0)} MB`);
const times = (x: number): string => `${x >= 100 ? x.toFixed(0) : x.toFixed(2)}x`;

function readRuntime(root: string, config: string, dataflow: string, topology: string): number | undefined {
  const file = join(root, 'test', 'fixtures', 'scalesim', 'RUNTIMES.csv');
  if (!existsSync(file)) return undefined;
  const [header = '', ...lines] = readFileSync(file, 'utf8').trim().split('\n');
  const cols = header.split(',');
  for (const line of lines) {
    const c = line.split(',');
    if (c[cols.indexOf('config')] === config && c[cols.indexOf('dataflow')] === dataflow && c[cols.indexOf('topology')] === topology) {
      return Number(c[cols.indexOf('wall_s')]);
    }
  }
  return undefined;
}

/**
 * CPU per MB of memory touched for the first time against touched again, in a child node (medians
 * of `runs`): a fresh page costs a fault, which on a virtual machine can cost far more than the
 * write itself, and every figure above pays it for each page its process touches first.
 */
export function firstTouchCost(node: string, runs: number): { firstMsPerMb: number; againMsPerMb: number } {
  const script = [
    'const mb = 64; const b = Buffer.alloc(mb << 20);',
    'const cpu = (f) => { const t = process.cpuUsage(); f(); const u = process.cpuUsage(t); return (u.user + u.system) / 1000 / mb; };',
    'console.log(JSON.stringify([cpu(() => b.fill(1)), cpu(() => b.fill(2))]));',
  ].join(' ');
  const first: number[] = [];
  const again: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(node, ['-e', script], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`node -e (first-touch cost) failed (${r.status}): ${(r.stderr ?? '').trim().split('\n').at(-1) ?? ''}`);
    const [f, a] = JSON.parse(r.stdout) as [number, number];
    first.push(f);
    again.push(a);
  }
  return { firstMsPerMb: median(first), againMsPerMb: median(again) };
}

/** "N faults (M MB)" of a sample's minor page faults, 4 KiB pages. */
const faultsOf = (x: ProcessSample): string => (x.minorFaults === undefined ? '?' : `${(x.minorFaults / 1000).toFixed(1)}k (${((x.minorFaults * 4096) / 1e6).toFixed(0)} MB)`);

/** The first python3 that imports onnx (PATH's, then the system one Debian's python3-onnx uses). */
function pythonWithOnnx(): string | undefined {
  return ['python3', '/usr/bin/python3'].find((py) => spawnSync(py, ['-c', 'import onnx'], { encoding: 'utf8' }).status === 0);
}

export function machineInfo(): GoalsBenchResult['machine'] {
  const [load1m = 0] = loadavg(); // Node gives [0, 0, 0] where the OS has no load average
  let cpu = 'unknown';
  try {
    cpu = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    // not Linux
  }
  return { nproc: availableParallelism(), cpu, node: process.version, loadAverage1m: Number(load1m.toFixed(2)) };
}

export async function runGoalsBench(options: GoalsBenchOptions): Promise<GoalsBenchResult> {
  const { root } = options;
  const runs = options.runs ?? 5;
  const cli = join(root, 'dist', 'cli', 'main.cjs');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build first`);
  const node = process.execPath;
  const modtrans = (...args: string[]) => (): ProcessSample => runProcess(node, [cli, ...args], root);
  const nodeStart = (): ProcessSample => runProcess(node, ['-e', '0'], root);
  const rows: GoalRow[] = [];
  const notes: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'modtrans-goals-'));
  // Six figures; the seventh report, 'done', is 6 of 6 (the bar ends there).
  const steps = 6;
  let step = 0;
  const progress = (label: string): void => options.onProgress?.(step++, steps, label);
  const fixtures = join(root, 'test', 'fixtures', 'scalesim');
  try {
    progress('start-up');
    const start = sideBySide(runs, modtrans('translate', 'resnet50', '-o', join(tmp, 'r50.txt')), nodeStart);
    const startRatio = ratioOf(start.subject, start.reference);
    rows.push({
      figure: '`translate resnet50` (graph-only), whole process', measured: both(start.subject), reference: `\`node -e 0\` ${both(start.reference)}`,
      ratio: times(startRatio), goal: '<= 1.3x', met: startRatio <= 1.3 ? 'yes' : 'no',
    });
    const help = sideBySide(runs, modtrans('--help'), nodeStart);
    const helpRatio = ratioOf(help.subject, help.reference);
    rows.push({ figure: '`modtrans --help`, whole process', measured: both(help.subject), reference: `\`node -e 0\` ${both(help.reference)}`, ratio: times(helpRatio), goal: '(none)', met: 'n/a' });
    const touch = firstTouchCost(node, runs);
    rows.push({
      figure: '... this machine: CPU per MB of memory touched the first time (a 64 MiB Buffer filled in `node -e`)', measured: `${touch.firstMsPerMb.toFixed(2)} ms/MB`,
      reference: `filled again: ${touch.againMsPerMb.toFixed(3)} ms/MB`, ratio: times(touch.firstMsPerMb / touch.againMsPerMb), goal: '(none)', met: 'n/a',
    });
    /** CPU the pages a sample touched first beyond `node -e 0`'s cost at this machine's rate. */
    const faultMs = (x: ProcessSample): string =>
      x.minorFaults === undefined || start.reference.minorFaults === undefined ? '' : `~${ms((((x.minorFaults - start.reference.minorFaults) * 4096) / 1e6) * touch.firstMsPerMb)} of CPU over node's`;
    for (const [what, sample] of [['`translate resnet50`', start.subject], ['`--help`', help.subject]] as const) {
      rows.push({ figure: `... pages ${what} touched first (minor page faults)`, measured: faultsOf(sample), reference: `\`node -e 0\` ${faultsOf(start.reference)}`, ratio: faultMs(sample), goal: '(none)', met: 'n/a' });
    }

    progress('scalesim ResNet-18');
    const topology = join(fixtures, 'topologies', 'conv_nets', 'Resnet18.csv');
    const scalesimRuns: [string, string, number | undefined, string][] = [
      ['scale', 'os', SCALESIM_RESNET18_SCALE_OS_S, 'issue 10'],
      ...(['os', 'ws', 'is'] as const).map((df): [string, string, number | undefined, string] => ['google', df, readRuntime(root, 'google', df, 'conv_nets/Resnet18.csv'), 'RUNTIMES.csv']),
    ];
    for (const [config, df, referenceS, source] of scalesimRuns) {
      const cfg = join(fixtures, 'configs', 'variants', `${config}_${df}.cfg`);
      const samples: ProcessSample[] = [];
      for (let i = 0; i < runs; i++) samples.push(runProcess(node, [cli, 'scalesim', '-t', topology, '-c', cfg, '-o', join(tmp, 'scalesim')], root));
      const wall = median(samples.map((x) => x.wallMs));
      const cpu = medianIfAll(samples.map((x) => x.cpuMs));
      // CPU time where GNU time gives it (issue 21: the figure load distorts least), against SCALE-sim's single-threaded run.
      const speedup = referenceS === undefined ? undefined : (referenceS * 1000) / (cpu ?? wall);
      rows.push({
        figure: `\`scalesim\` ResNet-18, ${config}.cfg ${df} (CALC), whole process`, measured: both({ wallMs: wall, cpuMs: cpu }),
        reference: referenceS === undefined ? 'not recorded' : `SCALE-sim v2 ${referenceS} s (${source})`,
        ratio: speedup === undefined ? '' : `${times(speedup)} faster`,
        goal: config === 'scale' ? '>= 10,000x' : '(none)',
        met: config === 'scale' && speedup !== undefined ? (speedup >= 10_000 ? 'yes' : 'no') : 'n/a',
      });
    }

    // No whole process beats node's own start: SCALE-sim's time over `node -e 0`'s is the ceiling of the ratios above.
    const floorSpeedup = (SCALESIM_RESNET18_SCALE_OS_S * 1000) / (start.reference.cpuMs ?? start.reference.wallMs);
    rows.push({
      figure: '... `node -e 0` alone (the ceiling of any whole-process figure)', measured: both(start.reference), reference: `SCALE-sim v2 ${SCALESIM_RESNET18_SCALE_OS_S} s (issue 10)`,
      ratio: `${times(floorSpeedup)} faster`, goal: '(none)', met: 'n/a',
    });

    progress('USER-mode inspect');
    const user = sideBySide(Math.min(runs, 3), modtrans('inspect', 'vgg16', '--hardware', 'eyeriss', '--bandwidth-mode', 'user', '-o', join(tmp, 'inspect.txt')), nodeStart);
    const userRatio = ratioOf(user.subject, user.reference);
    const bare = user.reference.wallMs;
    rows.push({
      figure: '`inspect vgg16 --hardware eyeriss --bandwidth-mode user`', measured: both(user.subject), reference: `\`node -e 0\` ${both(user.reference)}`,
      ratio: times(userRatio), goal: '<= 20x', met: userRatio <= 20 ? 'yes' : 'no',
    });

    progress('inspect of the 96-layer GPT-3 graph');
    const gpt3 = join(tmp, 'gpt3-96.onnx');
    writeFileSync(gpt3, gptModel({ layers: 96, hidden: 12288, heads: 96, seq: 2048, batch: 1, vocab: 51200 }));
    const gptSamples = Array.from({ length: Math.min(runs, 5) }, () => modtrans('inspect', gpt3, '-o', join(tmp, 'gpt3.txt'))());
    const gptCpu = medianIfAll(gptSamples.map((x) => x.cpuMs));
    const gptWall = median(gptSamples.map((x) => x.wallMs));
    // Median CPU of 5 whole-process runs at commit 22ecc4c (before src/structure/), this 2-core machine, 2026-12-01.
    const beforeStructureCpuMs = 1110;
    const gptRatio = gptCpu === undefined ? undefined : gptCpu / beforeStructureCpuMs;
    rows.push({
      figure: '`inspect` of the 96-layer GPT-3 graph (h 12288, 96 heads, s 2048)', measured: both({ wallMs: gptWall, cpuMs: gptCpu }),
      reference: `${(beforeStructureCpuMs / 1000).toFixed(2)} s CPU before the structure stage (22ecc4c)`,
      ratio: gptRatio === undefined ? '' : times(gptRatio), goal: '<= 1.1x', met: gptRatio === undefined ? 'n/a' : gptRatio <= 1.1 ? 'yes' : 'no',
    });

    progress('553 MB VGG16 vs onnx.load');
    const large = join(tmp, 'vgg16.inline.onnx');
    const written = writeInlineCopy(join(root, 'examples', 'vgg16.onnx'), large);
    const python = pythonWithOnnx();
    if (python !== undefined) {
      const loaded = sideBySide(
        Math.min(runs, 3),
        modtrans('translate', large, '-o', join(tmp, 'vgg16.txt')),
        () => runProcess(python, ['-c', 'import sys, onnx; onnx.load(sys.argv[1])', large], root),
      );
      const speed = 1 / ratioOf(loaded.subject, loaded.reference);
      const memory = loaded.subject.maxRssBytes && loaded.reference.maxRssBytes ? loaded.reference.maxRssBytes / loaded.subject.maxRssBytes : undefined;
      rows.push({
        figure: `VGG16, ${(written.fileBytes / 1e6).toFixed(0)} MB inline weights: \`translate\` vs \`onnx.load\` alone (both whole processes): time`,
        measured: both(loaded.subject), reference: `python3 onnx.load ${both(loaded.reference)}`, ratio: `${times(speed)} faster`, goal: '>= 10x', met: speed >= 10 ? 'yes' : 'no',
      });
      rows.push({
        figure: '... peak memory (RSS)', measured: mb(loaded.subject.maxRssBytes), reference: `python3 onnx.load ${mb(loaded.reference.maxRssBytes)}`,
        ratio: memory === undefined ? '' : `${times(memory)} less`, goal: '>= 10x', met: memory === undefined ? 'n/a' : memory >= 10 ? 'yes' : 'no',
      });
      for (const model of ['resnet50', 'bert_base_like']) {
        const onnxPath = join(root, 'examples', `${model}.onnx`);
        const shapes = sideBySide(
          Math.min(runs, 3),
          modtrans('shapes', model, '-o', join(tmp, 'shapes.json')),
          () => runProcess(python, ['-c', 'import sys, onnx; onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1], load_external_data=False))', onnxPath], root),
        );
        rows.push({
          figure: `\`shapes ${model}\` vs \`onnx.shape_inference\` (load + infer), whole processes`, measured: both(shapes.subject),
          reference: `python3 ${both(shapes.reference)}`, ratio: `${times(1 / ratioOf(shapes.subject, shapes.reference))} faster`, goal: '(none)', met: 'n/a',
        });
      }
    } else {
      notes.push('python3 with the onnx package is not installed here (Debian: apt-get install python3-onnx): the onnx.load and shape-inference rows are skipped.');
    }

    progress('chains');
    const chainMs: [number, number][] = [];
    let chain100k: ProcessSample = { wallMs: 0 };
    for (const nodes of [25_000, 50_000, 100_000]) {
      const file = join(tmp, `chain${nodes}.onnx`);
      writeFileSync(file, chainModel(nodes));
      const samples = Array.from({ length: Math.min(runs, 3) }, () => runProcess(node, [cli, 'translate', file, '-o', join(tmp, 'chain.txt')], root));
      chain100k = { wallMs: median(samples.map((x) => x.wallMs)), cpuMs: medianIfAll(samples.map((x) => x.cpuMs)), minorFaults: medianIfAll(samples.map((x) => x.minorFaults)) };
      chainMs.push([nodes, chain100k.cpuMs ?? chain100k.wallMs]);
    }
    const largest = chainMs.at(-1);
    if (largest === undefined) throw new Error('internal error: no chain was measured');
    const [n100k, t100k] = largest;
    const bareCost = user.reference.cpuMs ?? bare;
    const perNode = chainMs.map(([n, t]) => `${((1000 * (t - bareCost)) / n).toFixed(1)} us`).join(' / ');
    rows.push({
      figure: `${n100k / 1000}k-node chain (MatMul + Relu), \`translate\`, whole process`, measured: both(chain100k),
      reference: `per node over \`node -e 0\` at 25k / 50k / 100k: ${perNode}`, ratio: '', goal: '< 1 s, linear', met: t100k < 1000 ? 'yes' : 'no',
    });
    rows.push({ figure: `... pages the ${n100k / 1000}k-node chain touched first (minor page faults)`, measured: faultsOf(chain100k), reference: `\`node -e 0\` ${faultsOf(start.reference)}`, ratio: faultMs(chain100k), goal: '(none)', met: 'n/a' });
    progress('done');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const machine = machineInfo();
  notes.push(
    `Measured on ${machine.nproc} core(s), ${machine.cpu}, Node ${machine.node}; 1-minute load average ${machine.loadAverage1m} when the suite ended (a shared machine inflates every wall time, the references' too).`,
    `Figures are medians of ${runs} whole-process runs (3 for the large files and the USER-mode inspect), subject and reference alternated; ratios and the chain's time per node use CPU time (user + system, from GNU time) where available, the figure a shared machine's load distorts least; wall times are shown beside it.`,
  );
  const markdown = [
    '| figure | measured | reference | ratio | goal | met |',
    '|---|---:|---|---:|---|---|',
    ...rows.map((r) => `| ${r.figure} | ${r.measured} | ${r.reference} | ${r.ratio} | ${r.goal} | ${r.met} |`),
    '',
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
  return { suite: 'goals', machine, rows, notes, markdown };
}
