/** Initializer slots: each main-graph initializer's index, by value id or by a map of names. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chainModel } from '../../bench/chain-model.js';
import { inferModel } from '../../src/pipeline.js';
import { InitializerSlots } from '../../src/plan/initializer-slots.js';

describe('InitializerSlots', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'modtrans-slots-')), 'chain.onnx');
  // Six nodes: three MatMuls, so three 64x64 weight initializers.
  writeFileSync(file, chainModel(6));
  const { inferred } = inferModel(file);
  const names = inferred.model.graph.initializers.map((t) => t.name);

  it('gives each initializer its index, by value id', () => {
    expect(names.length).toBe(3);
    const slots = new InitializerSlots(inferred);
    expect(slots.count).toBe(3);
    expect(names.map((n) => slots.slotOf(n))).toEqual([0, 1, 2]);
    expect([0, 1, 2].map((i) => slots.slotAt(i))).toEqual([0, 1, 2]);
    expect(slots.slotOf('not-an-initializer')).toBe(-1);
    expect(slots.slotOf(inferred.model.graph.inputs[0]?.name ?? '')).toBe(-1);
  });

  it('gives the same slots from a map of names when the ids are not the initializers\' places', () => {
    const slots = new InitializerSlots({ ...inferred, initializerNames: new Set() });
    expect(names.map((n) => slots.slotOf(n))).toEqual([0, 1, 2]);
    expect([0, 1, 2].map((i) => slots.slotAt(i))).toEqual([0, 1, 2]);
    expect(slots.slotOf('not-an-initializer')).toBe(-1);
  });
});
