/** `modtrans shapes`: inferred dtype and dims of every value, as JSON. */
import { inferModel } from '../pipeline.js';
import { shapesToJson } from '../writers/shapes-json.js';
import { emitNoted } from './output.js';
import { bindingsFrom } from './options.js';
import { type ExitCode, SUCCESS } from './exit-code.js';

export async function runShapes(modelArg: string, opts: { output?: string; dim?: string[]; batch?: number }): Promise<ExitCode> {
  const path = await (await import('../zoo/resolve.js')).resolveModelInput(modelArg);
  const { inferred } = inferModel(path, bindingsFrom(opts));
  emitNoted(shapesToJson(inferred), opts.output, 'shapes (JSON)');
  return SUCCESS;
}
