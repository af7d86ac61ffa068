/**
 * `--megatron-args FILE`: the arguments of a Megatron-LM launch script (a shell script that runs
 * `torchrun ... pretrain_gpt.py ARGS`, as Megatron-LM's `examples/` scripts do). Lines continued
 * with `\`, variables set in the script (`NAME=value`, `export NAME="..."`, bash arrays
 * `NAME=( ... )`) and expanded as `$NAME`, `${NAME}` or `${NAME[@]}`; the arguments after the
 * `pretrain_*.py` word are the run's. Only a shell's plain words are read: no command
 * substitution, no arithmetic (a `$(...)` is an error naming it).
 */
import { InputError } from '../errors.js';
import { readRegularFile } from '../files.js';

/** Launch scripts are small; a larger file is not one. */
const MAX_SCRIPT_BYTES = 1 << 20;

/** The arguments the script passes to Megatron-LM's pretrain entry point. */
export function megatronScriptArgs(file: string): string[] {
  const text = readRegularFile(file, `--megatron-args ${file}`, 'the launch script', MAX_SCRIPT_BYTES);
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).map((l) => stripComment(l).trim()).filter((l) => l !== '');
  const vars = new Map<string, string[]>();
  const where = (n: number): string => `--megatron-args ${file}: line ${n + 1}`;
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n] ?? '';
    const assignment = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (assignment !== null) {
      const [, name = '', rest = ''] = assignment;
      if (rest.startsWith('(')) {
        // A bash array may run over several lines until its closing parenthesis.
        let body = rest.slice(1);
        while (!body.includes(')') && n + 1 < lines.length) body += ` ${lines[++n] ?? ''}`;
        vars.set(name, words(body.slice(0, body.lastIndexOf(')')), vars, where(n)));
      } else vars.set(name, words(rest, vars, where(n)));
      continue;
    }
    const tokens = words(line, vars, where(n));
    const entry = tokens.findIndex((t) => /(^|\/)pretrain_[A-Za-z0-9_]*\.py$/.test(t));
    if (entry >= 0) return tokens.slice(entry + 1);
  }
  throw new InputError(`--megatron-args ${file}: no line runs Megatron-LM's pretrain_*.py (e.g. torchrun ... pretrain_gpt.py --tensor-model-parallel-size 2 ...)`);
}

/** A line without its `#` comment (a `#` starting a word, outside quotes). */
function stripComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== '') {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) return line.slice(0, i);
  }
  return line;
}

/** The words of a line: quotes removed, `$NAME`, `${NAME}` and `${NAME[@]}` expanded (unset: nothing). */
function words(text: string, vars: ReadonlyMap<string, string[]>, where: string): string[] {
  if (text.includes('$(') || text.includes('`')) throw new InputError(`${where}: command substitution is not read; set the value in the script or give the flag on the command line`);
  const out: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of text.matchAll(pattern)) {
    const single = m[2];
    if (single !== undefined) {
      out.push(single);
      continue;
    }
    const raw = m[1] ?? m[3] ?? '';
    const whole = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)(?:\[@\])?\}?$/.exec(raw);
    if (whole !== null && m[1] === undefined) {
      // An unquoted variable splits into its words (a string on white space, an array into its elements).
      out.push(...(vars.get(whole[1] ?? '') ?? []).flatMap((v) => v.split(/\s+/).filter((w) => w !== '')));
      continue;
    }
    out.push(raw.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)(?:\[@\])?\}?/g, (_, name: string) => (vars.get(name) ?? []).join(' ')));
  }
  return out;
}
