/**
 * Megatron-LM's names (megatron/training/arguments.py) for what modtrans's flags set. They are not
 * accepted as aliases; an unknown option that is one of them names modtrans's flag instead, so a
 * Megatron-LM user's first try ends with the flag to use, not a bare "unknown option".
 */
export const MEGATRON_FLAGS: Readonly<Record<string, string>> = {
  '--tensor-model-parallel-size': '--tp',
  '--pipeline-model-parallel-size': '--pp',
  '--num-virtual-stages-per-pipeline-rank': '--pp-schedule interleaved --vpp',
  '--num-layers-per-virtual-pipeline-stage': '--pp-schedule interleaved --vpp (model chunks per rank, not layers per chunk)',
  '--micro-batch-size': '--micro-batch',
  '--global-batch-size': '--global-batch',
  '--seq-length': '--seq',
  '--sequence-parallel': '--sp',
  '--recompute-granularity': '--recompute full|selective',
  '--recompute-activations': '--recompute selective',
  '--use-distributed-optimizer': '--zero 1',
  '--fp16': '--dtype fp16',
  '--bf16': '--dtype bf16',
  '--ddp-bucket-size': '--dp-bucket-mb (MiB, not elements)',
};

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
