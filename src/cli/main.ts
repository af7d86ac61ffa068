#!/usr/bin/env node
/**
 * modtrans command line. Commands are registered here and their modules imported only when run,
 * so `--help` and small jobs start fast. Bad input: one line on stderr, exit code 2.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { registerCheckTraceCommand } from './check-trace-command.js';
import { registerCompareCommand } from './compare-command.js';
import { registerMemoryCommand } from './memory-command.js';
import { acceptChoicesInAnyCase, addHardwareOptions, addParallelOptions, addShapeOptions } from './options.js';
import { megatronArgv, unknownOptionMessage } from './megatron-flags.js';
import { addPlanOptions } from './plan-options.js';
import { returningExitCode, takeReturnedExitCode } from './exit-code.js';
import { addTranslateOutputOptions } from './translate.js';
import { registerScalesimCommand } from './scalesim-command.js';
import { registerSimulateCommand } from './simulate-command.js';
import { registerZooCommand } from './zoo-command.js';
import { writeStderr, writeStderrDirectly, writeStdout } from './stdio.js';

const program = new Command();
program
  .name('modtrans')
  .description('Translate ONNX models into ASTRA-sim workloads, costed on a systolic-array model')
  .version('0.1.0')
  .exitOverride()
  // Usage errors are one line, as every other error (commander would add a hint line or two).
  .configureOutput({
    writeOut: (s) => writeStdout(s),
    writeErr: (s) => writeStderr(s),
    outputError: (s, write) => {
      const message = s.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ');
      const pointed = unknownOptionMessage(message);
      write(`modtrans: ${pointed === message ? `${message} (see --help)` : pointed}\n`);
    },
  });

const translate = program
  .command('translate')
  .description('write the ASTRA-sim workload of MODEL (a .onnx file or a shipped model name)')
  .argument('<model>', 'ONNX file, or a model shipped in examples/ (e.g. resnet50)')
  .option('-o, --output <file>', 'output file (default: standard output)')
  .addOption(new Option('--time-unit <unit>', "text format: compute columns in ns (ASTRA-sim 1.0's ticks, default), us (what Chakra's text converter reads) or raw cycles").choices(['ns', 'us', 'cycles']))
  .option('--report <file>', 'also write the per-layer report (.csv or .json)');
addTranslateOutputOptions(addPlanOptions(addParallelOptions(addHardwareOptions(addShapeOptions(translate)))));
translate.action(returningExitCode(async (model: string, opts) => (await import('./translate.js')).runTranslate(model, opts)));

const inspect = program
  .command('inspect')
  .description('per-layer GEMM dims, MACs, parameters and pass cycles of MODEL')
  .argument('<model>', 'ONNX file or shipped model name')
  .addOption(new Option('--format <format>', 'output format').choices(['table', 'csv', 'json']).default('table'))
  .option('-o, --output <file>', 'output file (default: standard output)')
  .option('--structure', "the model's structure instead: blocks, residual topology, attention (heads, KV groups), MLPs (dense, gated, MoE), embeddings, heads");
// The plan-option set translate and memory take: each layer shown as one rank of that plan runs it (default: one rank, layers whole).
addPlanOptions(addParallelOptions(addHardwareOptions(addShapeOptions(inspect))));
inspect.action(returningExitCode(async (model: string, opts) => (await import('./inspect.js')).runInspect(model, opts)));

const shapes = program
  .command('shapes')
  .description('inferred dtype and dims of every value of MODEL, as JSON')
  .argument('<model>', 'ONNX file or shipped model name')
  .option('-o, --output <file>', 'output file (default: standard output)');
addShapeOptions(shapes);
shapes.action(returningExitCode(async (model: string, opts) => (await import('./shapes.js')).runShapes(model, opts)));

registerCompareCommand(program);
registerZooCommand(program);
registerScalesimCommand(program);
registerCheckTraceCommand(program);
registerMemoryCommand(program);
registerSimulateCommand(program);
acceptChoicesInAnyCase(program);

/**
 * Runs one command line (`argv` as process.argv: node, script, args...); returns its exit code:
 * the one its command returned, or the one its error means (exit-code.ts).
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  try {
    await program.parseAsync(megatronArgv(argv, (line) => writeStderr(`modtrans: ${line}\n`)));
    return takeReturnedExitCode();
  } catch (e) {
    takeReturnedExitCode();
    return exitCodeFor(e);
  }
}

// Run when started as the program (also through npm's bin symlink), not when imported by tests.
const realPath = (p: string | undefined): string | undefined => {
  try {
    return p === undefined ? undefined : realpathSync(p);
  } catch {
    return undefined;
  }
};
// No top-level await: the CLI also ships as one CommonJS bundle (npm run bundle).
if (realPath(process.argv[1]) === realPath(fileURLToPath(import.meta.url))) {
  writeStderrDirectly();
  // The only place the process's exit code is set.
  void runCli(process.argv).then((code) => {
    process.exitCode = code;
  });
}

async function exitCodeFor(e: unknown): Promise<number> {
  if (e instanceof CommanderError) {
    // Help and version are not errors; usage errors are bad input.
    return e.exitCode === 0 || e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? 0 : 2;
  }
  const { InputError } = await import('../errors.js');
  if (e instanceof InputError) {
    writeStderr(`modtrans: ${e.message}\n`);
    return 2;
  }
  writeStderr(`modtrans: internal error: ${(e as Error).message ?? String(e)}\n`);
  if (process.env['MODTRANS_DEBUG']) writeStderr(`${(e as Error).stack ?? ''}\n`);
  else writeStderr('modtrans: please report this; MODTRANS_DEBUG=1 shows the stack trace\n');
  return 1;
}
