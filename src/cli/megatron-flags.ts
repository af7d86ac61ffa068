/**
 * Megatron-LM's arguments (megatron/training/arguments.py) that modtrans understands, accepted
 * under their own names: each is rewritten into modtrans's flag before the command line is parsed
 * (`megatronArgv`). The value a flag takes is passed on unchanged.
 */
const MEGATRON_ALIASES: Readonly<Record<string, { ours: readonly string[]; takesValue: boolean }>> = {
  '--tensor-model-parallel-size': { ours: ['--tp'], takesValue: true },
  '--pipeline-model-parallel-size': { ours: ['--pp'], takesValue: true },
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

/**
 * The command line with Megatron-LM's argument names (`--flag value` or `--flag=value`) rewritten
 * into modtrans's; everything else as it is. `argv` as process.argv (node, script, args...).
 */
export function megatronArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] ?? '';
    const eq = token.indexOf('=');
    const name = token.startsWith('--') && eq > 0 ? token.slice(0, eq) : token;
    const alias = MEGATRON_ALIASES[name];
    if (alias === undefined || i < 2) {
      out.push(token);
      continue;
    }
    out.push(...alias.ours);
    if (!alias.takesValue) continue;
    if (eq > 0) out.push(token.slice(eq + 1));
    else if (i + 1 < argv.length) out.push(argv[++i] ?? '');
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
