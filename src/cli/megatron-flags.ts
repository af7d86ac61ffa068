import { InputError } from '../errors.js';
import { megatronScriptArgs } from './megatron-script.js';
import { AXES, EXPERT_TP } from '../plan/axes.js';

/**
 * Megatron-LM's arguments (megatron/training/arguments.py) that modtrans understands, accepted
 * under their own names: each is rewritten into modtrans's flag before the command line is parsed
 * (`megatronArgv`). The value a flag takes is passed on unchanged.
 */
const MEGATRON_ALIASES: Readonly<Record<string, { ours: readonly string[]; takesValue: boolean }>> = {
  // The parallel sizes, from the axis table: --tensor-model-parallel-size, --context-parallel-size, ...
  ...Object.fromEntries([...Object.values(AXES), EXPERT_TP].flatMap((a) => (a.megatronFlag === undefined ? [] : [[a.megatronFlag, { ours: [a.flag], takesValue: true }]]))),
  '--moe-router-topk': { ours: ['--moe-topk'], takesValue: true },
  '--moe-expert-capacity-factor': { ours: ['--moe-capacity-factor'], takesValue: true },
  '--num-virtual-stages-per-pipeline-rank': { ours: ['--pp-schedule', 'interleaved', '--vpp'], takesValue: true },
  '--micro-batch-size': { ours: ['--micro-batch'], takesValue: true },
  '--global-batch-size': { ours: ['--global-batch'], takesValue: true },
  '--seq-length': { ours: ['--seq'], takesValue: true },
  '--sequence-parallel': { ours: ['--sp'], takesValue: false },
  '--recompute-granularity': { ours: ['--recompute'], takesValue: true },
  '--recompute-activations': { ours: ['--recompute', 'selective'], takesValue: false },
  '--use-distributed-optimizer': { ours: ['--zero', '1'], takesValue: false },
  '--fp16': { ours: ['--dtype', 'fp16'], takesValue: false },
  '--bf16': { ours: ['--dtype', 'bf16'], takesValue: false },
};

/** Megatron-LM's names modtrans cannot take as they are: an unknown option that is one of them names modtrans's flag. */
export const MEGATRON_FLAGS: Readonly<Record<string, string>> = {
  '--num-layers-per-virtual-pipeline-stage': '--pp-schedule interleaved --vpp (model chunks per rank, not layers per chunk)',
  '--ddp-bucket-size': '--dp-bucket-mb (MiB, not elements)',
};

/** Megatron-LM's flags modtrans has under the same name. */
const SAME_NAMES = new Set(['--overlap-grad-reduce', '--grad-reduce-in-bf16', '--accumulate-allreduce-grads-in-fp32', '--cp-comm-type', '--make-vocab-size-divisible-by', '--decoder-first-pipeline-num-layers', '--decoder-last-pipeline-num-layers']);

/**
 * `--megatron-args FILE`: the launch script's arguments modtrans understands, as its own flags,
 * and a line on stderr naming those used and those ignored (the model's own shape comes from
 * the ONNX file; data, optimizer hyper-parameters, logging are not modelled).
 */
function scriptFlags(file: string, note: (line: string) => void): string[] {
  const args = megatronScriptArgs(file);
  const used: string[] = [];
  const ignored: string[] = [];
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i] ?? '';
    if (!token.startsWith('--')) continue;
    const eq = token.indexOf('=');
    const name = eq > 0 ? token.slice(0, eq) : token;
    const hasValue = eq < 0 && i + 1 < args.length && !(args[i + 1] ?? '').startsWith('--');
    const alias = MEGATRON_ALIASES[name];
    if (alias !== undefined || SAME_NAMES.has(name)) {
      used.push(name);
      kept.push(token);
      if (hasValue && alias?.takesValue !== false) kept.push(args[++i] ?? '');
      continue;
    }
    ignored.push(name);
    if (hasValue) i++;
  }
  note(`--megatron-args ${file}: used ${used.length > 0 ? used.join(' ') : 'nothing'}; ignored ${ignored.length > 0 ? ignored.join(' ') : 'nothing'}`);
  return kept;
}

/**
 * The command line with Megatron-LM's argument names (`--flag value` or `--flag=value`) rewritten
 * into modtrans's, and a `--megatron-args FILE` replaced by what its launch script passes; the
 * rest as it is. `argv` as process.argv (node, script, args...).
 */
export function megatronArgv(argv: readonly string[], note: (line: string) => void = () => undefined): string[] {
  return [...argv.slice(0, 2), ...rewriteFlags(argv.slice(2), note)];
}

/** The arguments after the program's two (`--megatron-args` expanded, Megatron's names rewritten). */
function rewriteFlags(args: readonly string[], note: (line: string) => void): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i] ?? '';
    const eq = token.indexOf('=');
    const name = token.startsWith('--') && eq > 0 ? token.slice(0, eq) : token;
    if (name === '--megatron-args') {
      const file = eq > 0 ? token.slice(eq + 1) : args[++i];
      if (file === undefined || file === '') throw new InputError(`--megatron-args needs a launch script: --megatron-args FILE.sh`);
      out.push(...rewriteFlags(scriptFlags(file, note), note));
      continue;
    }
    const alias = MEGATRON_ALIASES[name];
    if (alias === undefined) {
      out.push(token);
      continue;
    }
    out.push(...alias.ours);
    if (!alias.takesValue) continue;
    if (eq > 0) out.push(token.slice(eq + 1));
    else if (i + 1 < args.length) out.push(args[++i] ?? '');
  }
  return out;
}

/** Megatron-LM has no flag for the data-parallel size (it is the world size / (T x P)); a guess at one still gets a pointer. */
const GUESSED_FLAGS: Readonly<Record<string, string>> = {
  '--data-parallel-size': '--dp; Megatron-LM has no such flag, its D is the world size / (T x P)',
};

/**
 * The one-line message of an unknown option: `--flag` or `--flag=value` that is a Megatron-LM
 * name gets modtrans's flag; any other stays commander's.
 */
export function unknownOptionMessage(message: string): string {
  const m = /^unknown option '(--[^'=]+)(=[^']*)?'/.exec(message);
  const flag = m?.[1];
  if (flag === undefined) return message;
  const ours = MEGATRON_FLAGS[flag];
  if (ours !== undefined) return `unknown option '${flag}' (Megatron-LM's name; modtrans: ${ours})`;
  const guessed = GUESSED_FLAGS[flag];
  return guessed === undefined ? message : `unknown option '${flag}' (modtrans: ${guessed})`;
}
