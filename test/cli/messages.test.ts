/**
 * The one-line messages a user meets first (issue 20, "Messages"): Megatron-LM's flag names point
 * at ours, sizes that do not divide say which would, and conflicting flags are errors naming both.
 * All command lines run in one process (cli-batch).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCliBatch } from '../helpers/cli-batch.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-messages-'));
const badRole = join(dir, 'bad-role.json');
writeFileSync(badRole, JSON.stringify({ 'blocks.0.attn.q': 'colum' }));

/** Command lines and, for each, the exact stderr line expected (exit code 2 unless told). */
const CASES: { args: string[]; stderr: string | RegExp; status?: number; stdout?: RegExp }[] = [
  // Megatron-LM's arguments.py names modtrans takes as they are not (README, "Commands"): the error names ours.
  { args: ['translate', 'alexnet', '--num-layers-per-virtual-pipeline-stage', '2'], stderr: "modtrans: unknown option '--num-layers-per-virtual-pipeline-stage' (Megatron-LM's name; modtrans: --pp-schedule interleaved --vpp (model chunks per rank, not layers per chunk))" },
  { args: ['translate', 'alexnet', '--ddp-bucket-size=40000000'], stderr: "modtrans: unknown option '--ddp-bucket-size' (Megatron-LM's name; modtrans: --dp-bucket-mb (MiB, not elements))" },
  { args: ['translate', 'alexnet', '--data-parallel-size', '2'], stderr: "modtrans: unknown option '--data-parallel-size' (modtrans: --dp; Megatron-LM has no such flag, its D is the world size / (T x P))" },
  // gpt2_small_like: 12 heads, hidden 768, FFN 3072. Megatron-LM's rule: T divides the heads and
  // both widths, so T in {2, 3, 4, 6, 12} (the divisors of gcd(12, 768, 3072) = 12).
  { args: ['translate', 'gpt2_small_like', '--tp', '8'], stderr: 'modtrans: layer blocks.0.attn.MatMul: attention heads 12 do not split over --tp 8; --tp 2, 3, 4, 6 or 12 split every layer of this model' },
  { args: ['translate', 'gpt2_small_like', '--tp', '5'], stderr: 'modtrans: layer blocks.0.attn.q: output features 768 do not split over --tp 5; --tp 2, 3, 4, 6 or 12 split every layer of this model' },
  { args: ['inspect', 'gpt2_small_like', '--tp', '7'], stderr: 'modtrans: layer blocks.0.attn.q: output features 768 do not split over --tp 7; --tp 2, 3, 4, 6 or 12 split every layer of this model' },
  // Its 12 transformer blocks are the parts a pipeline cuts into: P <= 12, and P x V <= 12 interleaved.
  { args: ['translate', 'gpt2_small_like', '--pp', '16', '--format', 'chakra-json'], stderr: 'modtrans: --pp 16 stages: the model cuts into at most 12 parts at its block boundaries; the largest --pp is 12' },
  {
    args: ['translate', 'gpt2_small_like', '--pp', '8', '--pp-schedule', 'interleaved', '--global-batch', '8', '--micro-batch', '1', '--format', 'chakra-json'],
    stderr: 'modtrans: --pp 8 x --vpp 2 = 16 model chunks: the model cuts into at most 12 parts at its block boundaries; the largest --pp with --vpp 2 is 6',
  },
  { args: ['translate', 'gpt2_small_like', '--tp', '2', '--tp-plan', badRole], stderr: `modtrans: --tp-plan ${badRole}: 'blocks.0.attn.q': role "colum" is not one of column, row, vocab, heads, replicated, sharded, split` },
  // Megatron-LM's gradient-width flags: each applies to one dtype, and they ask for two widths.
  { args: ['translate', 'gpt2_small_like', '--dp', '2', '--grad-reduce-in-bf16'], stderr: 'modtrans: --grad-reduce-in-bf16 applies to --dtype bf16 (the gradients are fp32)' },
  { args: ['translate', 'gpt2_small_like', '--dp', '2', '--dtype', 'bf16', '--grad-reduce-in-bf16', '--accumulate-allreduce-grads-in-fp32'], stderr: 'modtrans: --grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32 ask for two widths: give one' },
  // Megatron-LM's DDP reduces one buffer unless --overlap-grad-reduce; PyTorch DDP always overlaps its buckets.
  { args: ['translate', 'gpt2_small_like', '--dp', '2', '--dp-bucket-mb', '10'], stderr: "modtrans: --dp-bucket-mb 10: Megatron-LM's DDP reduces one gradient buffer unless --overlap-grad-reduce; give that, or --ddp torch for PyTorch DDP's buckets" },
  { args: ['translate', 'gpt2_small_like', '--dp', '2', '--ddp', 'torch', '--overlap-grad-reduce'], stderr: "modtrans: --overlap-grad-reduce is Megatron-LM's DDP; PyTorch DDP (--ddp torch) always overlaps its buckets" },
  // Flags that say the same thing differently are errors naming both.
  {
    args: ['translate', 'bert_base_like_dynamic', '--dim', 'batch=4', '--dim', 'sequence=128', '--micro-batch', '2'],
    stderr: "modtrans: --dim batch=4 and --micro-batch 2 conflict: the first binds the batch dim of input 'input_ids' to 4, the second makes micro-batches of 2; give the micro-batch with --micro-batch alone",
  },
  {
    args: ['memory', 'bert_base_like_dynamic', '--dim', 'batch=4', '--dim', 'sequence=128', '--global-batch', '16', '--dp', '1'],
    stderr: "modtrans: --dim batch=4 and --global-batch 16 conflict: the first binds the batch dim of input 'input_ids' to 4, the second makes micro-batches of 16; give the micro-batch with --micro-batch alone",
  },
  { args: ['translate', 'bert_base_like_dynamic', '--dim', 'batch=2', '--dim', 'sequence=64', '--seq', '128'], stderr: "modtrans: --seq 128 and --dim sequence=64 conflict: both bind the sequence dim of input 'input_ids'; give one" },
  { args: ['translate', 'alexnet', '--tp-plan', badRole], stderr: `modtrans: --tp-plan ${badRole} sets the roles of a --tp plan: it needs --tp 2 or more` },
  { args: ['translate', 'alexnet', '-p', 'MODEL', '--tp-plan', badRole], stderr: `modtrans: --tp-plan ${badRole} sets the roles of a --tp plan; -p MODEL splits every layer its own way: give one or the other` },
  { args: ['translate', 'alexnet', '--chakra-timing', 'roofline'], stderr: 'modtrans: --chakra-timing roofline applies to --format chakra or chakra-json (the text format has no num_ops to time)' },
  // compare's -p/--npus/--mp-group are translate's request: the same checks (it used to ignore --mp-group with DATA and plan 6 / 4 = 1.5 replicas).
  { args: ['compare', 'alexnet', '--hardware', 'google', '-p', 'DATA', '--npus', '4', '--mp-group', '2'], stderr: 'modtrans: --mp-group 2 does not apply to -p DATA (only to HYBRID_*)' },
  { args: ['compare', 'alexnet', '--hardware', 'google', '-p', 'HYBRID_DATA_MODEL', '--npus', '6', '--mp-group', '4'], stderr: 'modtrans: --mp-group 4 must divide --npus 6 for HYBRID_DATA_MODEL' },
  // The same facts given once are not conflicts.
  { args: ['translate', 'bert_base_like_dynamic', '--dim', 'batch=4', '--dim', 'sequence=128', '--global-batch', '16', '--micro-batch', '4', '--dp', '1', '-o', join(dir, 'bert.txt')], stderr: /^modtrans: 196 layers; plan: TP 1 x DP 1 = 1 ranks; global batch 16 = 1 replica x 4 micro-batches x 4 samples \(batch scaling checked: \d+ layers x4\);/, status: 0 },
  // A pipeline with one micro-batch per step: a warning with the bubble (P - 1) / (m + P - 1) = 1/2.
  {
    args: ['translate', 'gpt2_small_like', '--pp', '2', '--global-batch', '16', '--format', 'chakra-json', '-o', join(dir, 'pp.json')],
    stderr: /^modtrans: warning: --pp 2 with 1 micro-batch per step \(global batch 16 over 1 replica, micro-batch 16\): the stages run one after another, a pipeline bubble of \(P - 1\) \/ \(m \+ P - 1\) = 1\/2 = 50\.0% of the step; set --micro-batch so that each replica runs 2 or more micro-batches\n/,
    status: 0,
  },
  { args: ['memory', 'alexnet', '--pp', '4'], stderr: /^modtrans: warning: --pp 4 with 1 micro-batch per step .* = 3\/4 = 75\.0% of the step;/, status: 0 },
  // Times in the unit their size calls for (writers/time.ts): a step over 10 s in s, never `1.047e+4 ms`.
  {
    args: ['translate', 'resnet50', '--hardware', 'eyeriss', '--batch', '128', '--npus', '1', '-o', join(dir, 'r50.txt')],
    stderr: /\nmodtrans: predicted step if the network were free: \d{2}\.\d{2} s \(ASTRA-sim adds the network time\)\n$/,
    status: 0,
  },
  {
    args: ['translate', 'gpt2_small_like', '--pp', '2', '--global-batch', '4', '--micro-batch', '1', '--format', 'chakra-json', '-o', join(dir, 'pp2.json')],
    stderr: /modtrans: pipeline 1f1b, 2 stages; fwd \+ bwd per micro-batch on one rank \d\.\d{3} ms - \d\.\d{3} ms \(slowest: stage \d\); --stage-table lists each stage\n.*exact; replayed in whole µs: \d\.\d{3} ms \([+-]\d+\.\d+ µs, [+-]\d\.\d{3}%\)/,
    status: 0,
  },
  {
    args: ['inspect', 'gpt2_small_like', '--pp', '2'],
    // One summary line, the invariants, and no warning.
    stderr: /^modtrans: \d+ layers on [\w.-]+; params conserved [^\n]*\n$/,
    // tpu-v4 (the default) runs at 1,050 MHz; each time in the unit its size calls for, 4 significant digits.
    stdout: /\ntime at 1050 MHz: fwd \d\.\d{3} ms, ig \d\.\d{3} ms, wg \d{3}\.\d µs, update \d\.\d{3} ms\n(?:params one rank holds [^\n]*\n)?stage 0: .* cycles \(\d\.\d{3} ms\) per micro-batch on one rank\n/,
    status: 0,
  },
  // Other unknown options keep commander's word and the pointer to --help.
  { args: ['translate', 'alexnet', '--no-such-flag'], stderr: "modtrans: unknown option '--no-such-flag' (see --help)" },
];

describe('messages', () => {
  let results: CliResult[];
  beforeAll(async () => {
    results = await runCliBatch(CASES.map((c) => ({ args: c.args, cwd: dir })));
  }, 120_000);

  it('each error is one line and exits 2; warnings go to stderr and the run goes on', () => {
    CASES.forEach((c, i) => {
      const r = results[i];
      const what = c.args.join(' ');
      expect(r?.status, `${what}\n${r?.stderr}`).toBe(c.status ?? 2);
      if (typeof c.stderr === 'string') expect((r?.stderr ?? '').trimEnd().split('\n'), what).toEqual([c.stderr]);
      else expect(r?.stderr, what).toMatch(c.stderr);
      expect(r?.stderr, what).not.toMatch(/\de[+-]\d/);
      if (c.stdout !== undefined) expect(r?.stdout, what).toMatch(c.stdout);
    });
  });
});

describe("Megatron-LM's argument names", () => {
  it('are taken under their own names (--flag value and --flag=value): the same traces as the equivalent modtrans flags', async () => {
    const megatron = ['--tensor-model-parallel-size', '2', '--pipeline-model-parallel-size=2', '--micro-batch-size', '2', '--global-batch-size', '8', '--sequence-parallel', '--bf16', '--recompute-activations', '--use-distributed-optimizer', '--seq-length', '128'];
    const ours = ['--tp', '2', '--pp', '2', '--micro-batch', '2', '--global-batch', '8', '--sp', '--dtype', 'bf16', '--recompute', 'selective', '--zero', '1', '--seq', '128'];
    const [a, b] = await runCliBatch([
      { args: ['translate', 'gpt2_small_like', ...megatron, '--dp', '2', '--format', 'chakra-json'], cwd: dir },
      { args: ['translate', 'gpt2_small_like', ...ours, '--dp', '2', '--format', 'chakra-json'], cwd: dir },
    ]);
    expect(a?.status, a?.stderr).toBe(0);
    expect(a?.stdout.length).toBeGreaterThan(1000);
    expect(a?.stdout).toBe(b?.stdout);
    expect(a?.stderr).toBe(b?.stderr);
  });
});

describe('--megatron-args FILE: a Megatron-LM launch script', () => {
  // As Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh writes one: bash arrays of
  // arguments, string variables, line continuations, torchrun in front of pretrain_gpt.py.
  const script = join(dir, 'train_gpt.sh');
  /** `${NAME}` in the script (a shell variable, not a template placeholder). */
  const v = (name: string): string => `\${${name}}`;
  writeFileSync(script, [
    '#!/bin/bash',
    '# Runs the "345M" parameter model',
    'export CUDA_DEVICE_MAX_CONNECTIONS=1',
    'GPUS_PER_NODE=8',
    'TP=2',
    'DISTRIBUTED_ARGS=(',
    '    --nproc_per_node $GPUS_PER_NODE',
    '    --nnodes 1',
    ')',
    'GPT_MODEL_ARGS=(',
    '    --num-layers 12',
    '    --hidden-size 768',
    '    --num-attention-heads 12',
    '    --seq-length 128',
    ')',
    'TRAINING_ARGS="--micro-batch-size 2 --global-batch-size 8 --lr 6.0e-5 --bf16 --use-distributed-optimizer"',
    'MODEL_PARALLEL_ARGS=(',
    `\t--tensor-model-parallel-size ${v('TP')}`,
    '\t--pipeline-model-parallel-size 2',
    '\t--sequence-parallel',
    ')',
    `torchrun ${v('DISTRIBUTED_ARGS[@]')} pretrain_gpt.py \\`,
    `    ${v('GPT_MODEL_ARGS[@]')} \\`,
    '    $TRAINING_ARGS \\',
    `    ${v('MODEL_PARALLEL_ARGS[@]')} \\`,
    '    --data-path /data/my-gpt3_00_text_document  # the corpus',
    '',
  ].join('\n'));
  const bad = join(dir, 'no-pretrain.sh');
  writeFileSync(bad, 'echo hello\n');

  it('gives the same traces as the equivalent modtrans flags, and says which arguments it used and which it ignored', async () => {
    const [a, b, missing] = await runCliBatch([
      { args: ['translate', 'gpt2_small_like', '--megatron-args', script, '--dp', '2', '--format', 'chakra-json'], cwd: dir },
      { args: ['translate', 'gpt2_small_like', '--seq', '128', '--micro-batch', '2', '--global-batch', '8', '--dtype', 'bf16', '--zero', '1', '--tp', '2', '--pp', '2', '--sp', '--dp', '2', '--format', 'chakra-json'], cwd: dir },
      { args: ['translate', 'gpt2_small_like', `--megatron-args=${bad}`], cwd: dir },
    ]);
    expect(a?.status, a?.stderr).toBe(0);
    expect(a?.stdout).toBe(b?.stdout);
    const [note, ...rest] = (a?.stderr ?? '').split('\n');
    expect(note).toBe(`modtrans: --megatron-args ${script}: used --seq-length --micro-batch-size --global-batch-size --bf16 --use-distributed-optimizer --tensor-model-parallel-size --pipeline-model-parallel-size --sequence-parallel; ignored --num-layers --hidden-size --num-attention-heads --lr --data-path`);
    expect(rest.join('\n')).toBe(b?.stderr);
    expect(missing?.status).toBe(2);
    expect(missing?.stderr).toBe(`modtrans: --megatron-args ${bad}: no line runs Megatron-LM's pretrain_*.py (e.g. torchrun ... pretrain_gpt.py --tensor-model-parallel-size 2 ...)\n`);
  });

  it('a Mixtral-style MoE script with expert and context parallelism gives the traces of --ep / --etp / --cp / --moe-topk', async () => {
    // As Megatron-LM's examples/mixtral/train_mixtral_8x7b_distributed.sh writes its MoE arguments.
    const moe = join(dir, 'train_mixtral.sh');
    const model = join(dir, 'mixtral.onnx');
    const { mixtralModel } = await import('../helpers/arch/mixtral.js');
    writeFileSync(model, mixtralModel({ layers: 2, hidden: 64, heads: 8, kvHeads: 2, ffn: 96, seq: 16, batch: 2, vocab: 100, experts: 4, topK: 2 }).bytes);
    writeFileSync(moe, [
      '#!/bin/bash',
      'MOE_ARGS=(',
      '    --num-experts 4',
      '    --moe-router-topk 2',
      '    --moe-token-dispatcher-type alltoall',
      ')',
      'MODEL_PARALLEL_ARGS=(',
      '    --tensor-model-parallel-size 2',
      '    --expert-model-parallel-size 2',
      '    --expert-tensor-parallel-size 1',
      '    --context-parallel-size 2',
      '    --sequence-parallel',
      ')',
      `torchrun pretrain_gpt.py ${v('MOE_ARGS[@]')} ${v('MODEL_PARALLEL_ARGS[@]')} --micro-batch-size 2 --global-batch-size 4 --bf16`,
      '',
    ].join('\n'));
    const [a, b] = await runCliBatch([
      { args: ['translate', model, '--megatron-args', moe, '--dp', '1', '--format', 'chakra-json'], cwd: dir },
      { args: ['translate', model, '--tp', '2', '--ep', '2', '--etp', '1', '--cp', '2', '--sp', '--moe-topk', '2', '--micro-batch', '2', '--global-batch', '4', '--dtype', 'bf16', '--dp', '1', '--format', 'chakra-json'], cwd: dir },
    ]);
    expect(a?.status, a?.stderr).toBe(0);
    expect(a?.stdout).toBe(b?.stdout);
    expect((a?.stderr ?? '').split('\n')[0]).toBe(`modtrans: --megatron-args ${moe}: used --moe-router-topk --tensor-model-parallel-size --expert-model-parallel-size --expert-tensor-parallel-size --context-parallel-size --sequence-parallel --micro-batch-size --global-batch-size --bf16; ignored --num-experts --moe-token-dispatcher-type`);
  });
});
