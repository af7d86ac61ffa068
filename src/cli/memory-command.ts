/**
 * `modtrans memory MODEL [plan flags]`: bytes of weights, gradients, optimizer state and kept
 * activations on every rank, and the peak rank (README, "Memory per rank"). The pipeline, the
 * memory model and the writer are imported only when the command runs.
 */
import { Option, type Command } from 'commander';
import { at, InputError } from '../errors.js';
import { emitOutput, noteWritten, reportFormatOf, warn } from './output.js';
import { addHardwareOptions, addParallelOptions, addShapeOptions, memoryLimitGiB, type CostModelChoice } from './options.js';
import { addPlanOptions, type PlanCliOptions } from './plan-options.js';
import { writeStderr } from './stdio.js';
import { type ExitCode, SUCCESS, returningExitCode } from './exit-code.js';

export const MEMORY_FORMATS = ['table', 'csv', 'json'] as const;

export interface MemoryCliOptions extends CostModelChoice, PlanCliOptions {
  hardware: string;
  output?: string;
  format: (typeof MEMORY_FORMATS)[number];
  memoryLimit?: number;
  perRank?: boolean;
}

export function registerMemoryCommand(program: Command): void {
  const cmd = program
    .command('memory')
    .description('bytes of weights, gradients, optimizer state and activations on every rank of a training step')
    .argument('<model>', 'ONNX file or shipped model name')
    .addOption(new Option('--format <format>', 'output format').choices([...MEMORY_FORMATS]).default('table'))
    .option('-o, --output <file>', 'output file (default: standard output)')
    .option('--per-rank', 'table: a row per rank (default: ranks of a stage holding the same bytes share a row; CSV and JSON list every rank)')
    .option('--memory-limit <GiB>', 'fail (exit 2) when a rank needs more than this many GiB', memoryLimitGiB);
  addPlanOptions(addParallelOptions(addHardwareOptions(addShapeOptions(cmd))));
  cmd.action(returningExitCode(async (model: string, opts: MemoryCliOptions) => runMemory(model, opts)));
}

export async function runMemory(modelArg: string, opts: MemoryCliOptions): Promise<ExitCode> {
  if (opts.perRank === true && opts.format !== 'table') throw new InputError(`--per-rank applies to --format table (${opts.format} lists every rank)`);
  // Pipeline stages are balanced on costed time, as translate cuts them; nothing else is costed.
  const vectorOpsOff = ['--vector-ops off: activations count only what the GEMMs keep (no norms, softmax, activation functions or dropout masks)'];
  const { runPlanStages } = await import('./plan-run.js');
  const planned = await runPlanStages(modelArg, opts, { costed: false, ...(opts.vectorOps === 'off' ? { analysisNotes: vectorOpsOff } : {}) });
  warn(planned.warnings);
  const { plan, invariants } = planned;
  const run = planned.analysed;
  const { batchScalingNote } = await import('./plan-request.js');
  const { planMemory, checkMemoryLimit } = await import('../memory/report.js');
  const report = planMemory(plan, opts.optimizer ?? 'sgd');
  // The limit is checked before anything is written: a failing run leaves no output file.
  if (opts.memoryLimit !== undefined) checkMemoryLimit(report, opts.memoryLimit);
  const { memoryReportWriter } = await import('../writers/memory-report.js');
  if (emitOutput(await memoryReportWriter(report, { output: opts.output, format: reportFormatOf(opts.format), perRank: opts.perRank })) && opts.output !== undefined) noteWritten('memory per rank', opts.output);
  const peak = at(report.ranks, report.peakRank);
  const { planLayout } = await import('../plan/world.js');
  const layout = planLayout(plan);
  writeStderr(`modtrans: ${layout}; ${plan.dtype}, ${opts.optimizer ?? 'sgd'}, recompute ${plan.recompute}, micro-batch ${plan.batch.microBatch}${batchScalingNote(run.batchScaling)}; peak rank ${peak.rank}: ${(peak.totalBytes / 2 ** 30).toFixed(3)} GiB; ${invariants.summary}\n`);
  return SUCCESS;
}
