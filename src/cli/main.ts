#!/usr/bin/env node
/**
 * modtrans command line. Commands are registered here and their modules imported only when run,
 * so `--help` and small jobs start fast. Bad input: one line on stderr, exit code 2.
 */
import { Command, CommanderError, Option } from 'commander';
import { registerCompareCommand } from './compare-command.js';
import { addHardwareOptions, addParallelOptions, addShapeOptions } from './options.js';
import { addTranslateOutputOptions } from './translate.js';
import { registerScalesimCommand } from './scalesim-command.js';
import { registerZooCommand } from './zoo-command.js';

const program = new Command();
program
  .name('modtrans')
  .description('Translate ONNX models into ASTRA-sim workloads, costed on a systolic-array model')
  .version('0.1.0')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

const translate = program
  .command('translate')
  .description('write the ASTRA-sim workload of MODEL (a .onnx file or a shipped model name)')
  .argument('<model>', 'ONNX file, or a model shipped in examples/ (e.g. resnet50)')
  .option('-o, --output <file>', 'output file (default: standard output)')
  .addOption(new Option('--time-unit <unit>', 'compute columns in ns (ASTRA-sim ticks) or raw cycles').choices(['ns', 'cycles']).default('ns'))
  .option('--report <file>', 'also write the per-layer report (.csv or .json)');
addTranslateOutputOptions(addParallelOptions(addHardwareOptions(addShapeOptions(translate))));
translate.action(async (model: string, opts) => (await import('./translate.js')).runTranslate(model, opts));

const inspect = program
  .command('inspect')
  .description('per-layer GEMM dims, MACs, parameters and pass cycles of MODEL')
  .argument('<model>', 'ONNX file or shipped model name')
  .addOption(new Option('--format <format>', 'output format').choices(['table', 'csv', 'json']).default('table'))
  .option('-o, --output <file>', 'output file (default: standard output)');
addHardwareOptions(addShapeOptions(inspect));
inspect.action(async (model: string, opts) => (await import('./inspect.js')).runInspect(model, opts));

const shapes = program
  .command('shapes')
  .description('inferred dtype and dims of every value of MODEL, as JSON')
  .argument('<model>', 'ONNX file or shipped model name')
  .option('-o, --output <file>', 'output file (default: standard output)');
addShapeOptions(shapes);
shapes.action(async (model: string, opts) => (await import('./shapes.js')).runShapes(model, opts));

registerCompareCommand(program);
registerZooCommand(program);
registerScalesimCommand(program);

program.parseAsync(process.argv).catch(async (e: unknown) => {
  process.exitCode = await exitCodeFor(e);
});

async function exitCodeFor(e: unknown): Promise<number> {
  if (e instanceof CommanderError) {
    // Help and version are not errors; usage errors are bad input.
    return e.exitCode === 0 || e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? 0 : 2;
  }
  const { InputError } = await import('../errors.js');
  if (e instanceof InputError) {
    process.stderr.write(`modtrans: ${e.message}\n`);
    return 2;
  }
  process.stderr.write(`modtrans: internal error: ${(e as Error).message ?? String(e)}\n`);
  if (process.env['MODTRANS_DEBUG']) process.stderr.write(`${(e as Error).stack ?? ''}\n`);
  else process.stderr.write('modtrans: please report this; MODTRANS_DEBUG=1 shows the stack trace\n');
  return 1;
}
