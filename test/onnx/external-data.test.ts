/**
 * External data locations are resolved with realpath and refused outside the model's folder
 * (issue 22 row 10): a symbolic link `w.bin -> /etc/passwd` inside the folder is refused, the
 * message names the refused path, and nothing of the file is read or echoed.
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { analyseModel } from '../../src/pipeline.js';
import { buildModel, FLOAT, INT64 } from '../helpers/onnx-builder.js';

const root = mkdtempSync(join(tmpdir(), 'modtrans-external-'));
const SECRET = 'secret-line:x:0:0:do not echo me';
writeFileSync(join(root, 'secret.txt'), `${SECRET}\n`.repeat(4));

/** A model in `folder` whose Reshape target (2 int64) is external data at `location`. */
function modelWithExternalShape(folder: string, location: string): string {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, 'm.onnx');
  writeFileSync(path, buildModel({
    inputs: [{ name: 'x', dtype: FLOAT, dims: [4, 8] }],
    outputs: [{ name: 'y', dtype: FLOAT, dims: [] }],
    initializers: [
      { name: 's', dtype: INT64, dims: [2], external: { location } },
      { name: 'w', dtype: FLOAT, dims: [16, 8] },
    ],
    nodes: [
      { op: 'Reshape', name: 'rs', inputs: ['x', 's'], outputs: ['r'] },
      { op: 'MatMul', name: 'mm', inputs: ['r', 'w'], outputs: ['y'] },
    ],
  }));
  return path;
}

function errorOf(path: string): string {
  try {
    analyseModel(path);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`${path} was accepted`);
}

describe('external data outside the model folder', () => {
  it('refuses a symbolic link inside the folder that leads outside, naming the resolved path', () => {
    const folder = join(root, 'linked');
    const path = modelWithExternalShape(folder, 'w.bin');
    symlinkSync(join(root, 'secret.txt'), join(folder, 'w.bin'));
    const message = errorOf(path);
    expect(message).toBe(
      `${path}: tensor 's': external data location 'w.bin' resolves to '${join(root, 'secret.txt')}', outside the model's folder ${folder}`,
    );
    expect(message).not.toContain('secret-line');
  });

  it('refuses /etc/passwd through a link, and a link to a folder outside', () => {
    const folder = join(root, 'passwd');
    const path = modelWithExternalShape(folder, 'w.bin');
    symlinkSync('/etc/passwd', join(folder, 'w.bin'));
    expect(errorOf(path)).toMatch(/external data location 'w\.bin' resolves to '\/etc\/passwd', outside the model's folder/);
    const folder2 = join(root, 'dirlink');
    const path2 = modelWithExternalShape(folder2, 'd/w.bin');
    symlinkSync(root, join(folder2, 'd'));
    writeFileSync(join(root, 'w.bin'), Buffer.alloc(16));
    expect(errorOf(path2)).toMatch(/external data location 'd\/w\.bin' resolves to '.*\/w\.bin', outside the model's folder/);
  });

  it('refuses a FIFO as external data without blocking', () => {
    const folder = join(root, 'fifo');
    const path = modelWithExternalShape(folder, 'w.bin');
    execFileSync('mkfifo', [join(folder, 'w.bin')]);
    expect(errorOf(path)).toMatch(/tensor 's': external data '.*w\.bin' is not a regular file/);
  });

  it('still reads data inside the folder, through a link that stays inside', () => {
    const folder = join(root, 'inside');
    const path = modelWithExternalShape(folder, 'link.bin');
    const shape = Buffer.alloc(16);
    shape.writeBigInt64LE(2n, 0);
    shape.writeBigInt64LE(16n, 8);
    writeFileSync(join(folder, 'data.bin'), shape);
    symlinkSync('data.bin', join(folder, 'link.bin'));
    const analysed = analyseModel(path);
    expect(analysed.inferred.values.get('r')?.shape).toEqual([2, 16]);
    expect(readFileSync(join(folder, 'data.bin')).length).toBe(16);
  });
});
