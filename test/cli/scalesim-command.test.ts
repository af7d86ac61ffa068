/** `modtrans scalesim`: the three reports in DIR/<run_name>/, InputError on bad input. */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerScalesimCommand } from '../../src/cli/scalesim-command.js';
import { InputError } from '../../src/errors.js';
import { FIXTURES } from '../scalesim/reference.js';

async function run(...args: string[]): Promise<void> {
  const program = new Command().exitOverride();
  registerScalesimCommand(program);
  await program.parseAsync(['node', 'modtrans', 'scalesim', ...args]);
}

describe('modtrans scalesim', () => {
  let out: string;
  beforeEach(() => {
    out = mkdtempSync(join(tmpdir(), 'modtrans-scalesim-'));
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(out, { recursive: true, force: true });
  });

  it('writes the three SCALE-sim reports into DIR/<run_name>/', async () => {
    await run('--topology', `${FIXTURES}topologies/conv_nets/test.csv`, '--config', `${FIXTURES}configs/variants/scaleuser_os.cfg`, '-o', out);
    const dir = join(out, 'scaleuser_os');
    expect(readdirSync(dir).sort()).toEqual(['BANDWIDTH_REPORT.csv', 'COMPUTE_REPORT.csv', 'DETAILED_ACCESS_REPORT.csv', 'manifest.json']);
    expect(readFileSync(join(dir, 'COMPUTE_REPORT.csv'), 'utf8')).toBe(
      'LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n' +
        '0, 65840, 44361, 24.60510328068044, 78.125, 75.41899441340782,\n',
    );
  });

  it('reads M, N, K rows with --gemm', async () => {
    await run('-t', `${FIXTURES}topologies/GEMM_mnk/test_mnk_input.csv`, '-c', `${FIXTURES}configs/google.cfg`, '--gemm', '-o', out);
    const report = readFileSync(join(out, 'GoogleTPU_v1_ws', 'COMPUTE_REPORT.csv'), 'utf8');
    expect(report.split('\n')[1]).toBe('0, 893, 0, 3.5834266517357225, 25.0, 2.78503046127067,');
  });

  it('throws InputError and writes nothing on bad input', async () => {
    const cases = [
      ['-t', `${FIXTURES}topologies/conv_nets/Resnet50.csv`, '-c', `${FIXTURES}configs/scale.cfg`, '-o', out],
      ['-t', `${FIXTURES}topologies/conv_nets/missing.csv`, '-c', `${FIXTURES}configs/scale.cfg`, '-o', out],
      ['-t', `${FIXTURES}topologies/conv_nets/test.csv`, '-c', `${FIXTURES}configs/missing.cfg`, '-o', out],
      ['-t', `${FIXTURES}topologies/conv_nets/test.csv`, '-c', 'tpu-v4', '-o', out], // 4 arrays: not a SCALE-sim run
    ];
    for (const args of cases) {
      await expect(run(...args), args.join(' ')).rejects.toBeInstanceOf(InputError);
    }
    const badName = join(out, 'bad.cfg');
    writeFileSync(badName, readFileSync(`${FIXTURES}configs/scale.cfg`, 'utf8').replace(/run_name = .*/, 'run_name = ..'));
    await expect(run('-t', `${FIXTURES}topologies/conv_nets/test.csv`, '-c', badName, '-o', out)).rejects.toThrow(/run_name '\.\.'/);
    expect(readdirSync(out)).toEqual(['bad.cfg']);
    expect(existsSync(join(out, 'scale_example_run_32x32_os'))).toBe(false);
  });
});
