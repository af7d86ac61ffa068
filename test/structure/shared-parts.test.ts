/** Layers outside every recognised pattern share one frozen part per kind (parts are replaced, never changed). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainModel } from '../../bench/chain-model.js';
import { analyseModel } from '../../src/pipeline.js';

describe('the structure of a chain x -> (MatMul, Relu) x 3 -> y', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-parts-')), 'chain.onnx');
  writeFileSync(file, chainModel(6));
  const { structure } = analyseModel(file, {}, {}, { vectorOps: true });

  it('is no transformer: MatMuls are other layers, Relus vector work on the stream', () => {
    expect(structure.transformer).toBe(false);
    expect(structure.parts).toEqual([{ kind: 'other' }, { kind: 'vector', region: 'stream' }, { kind: 'other' }, { kind: 'vector', region: 'stream' }, { kind: 'other' }, { kind: 'vector', region: 'stream' }]);
  });

  it('shares one frozen part object per kind', () => {
    const [other, stream] = structure.parts;
    expect(Object.isFrozen(other) && Object.isFrozen(stream)).toBe(true);
    expect(structure.parts.filter((p) => p === other)).toHaveLength(3);
    expect(structure.parts.filter((p) => p === stream)).toHaveLength(3);
  });
});
