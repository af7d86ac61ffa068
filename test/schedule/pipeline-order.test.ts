/**
 * Pipeline orders against Megatron-LM's schedules.py, written out by hand: 1F1B (stage i: min(P - i - 1, m)
 * warm-up forwards, alternation, cool-down backwards), GPipe, and the interleaved schedule for V = 2.
 */
import { describe, expect, it } from 'vitest';
import { stageOrder } from '../../src/schedule/pipeline-order.js';

const show = (kind: Parameters<typeof stageOrder>[0], stage: number, pp: number, m: number, v = 1): string =>
  stageOrder(kind, stage, pp, m, v).map((u) => `${u.pass === 'fwd' ? 'F' : 'B'}${u.microBatch}${v > 1 ? `c${u.chunk}` : ''}`).join(' ');

describe('1F1B (forward_backward_pipelining_without_interleaving)', () => {
  it('P = 4, m = 6: warm-up P - i - 1 forwards, then one forward / one backward, then the cool-down', () => {
    expect(show('1f1b', 0, 4, 6)).toBe('F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5');
    expect(show('1f1b', 1, 4, 6)).toBe('F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5');
    expect(show('1f1b', 2, 4, 6)).toBe('F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5');
    expect(show('1f1b', 3, 4, 6)).toBe('F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5');
  });

  it('fewer micro-batches than stages: the warm-up is capped at m', () => {
    expect(show('1f1b', 0, 4, 2)).toBe('F0 F1 B0 B1');
    expect(show('1f1b', 3, 4, 2)).toBe('F0 B0 F1 B1');
  });
});

describe('GPipe', () => {
  it('every forward, then every backward', () => {
    for (let s = 0; s < 3; s++) expect(show('gpipe', s, 3, 3)).toBe('F0 F1 F2 B0 B1 B2');
  });
});

describe('interleaved 1F1B (forward_backward_pipelining_with_interleaving), P = 2, V = 2', () => {
  it('m = 4: warm-up (P - i - 1) x 2 + (V - 1) x P virtual micro-batches; chunks in groups of P micro-batches, backward chunks reversed', () => {
    // total 8 virtual micro-batches; k -> chunk (k mod 4) div 2, micro-batch (k div 4) x 2 + k mod 2.
    expect(show('interleaved', 0, 2, 4, 2)).toBe('F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0');
    expect(show('interleaved', 1, 2, 4, 2)).toBe('F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 F3c1 B3c1 B2c0 B3c0');
  });

  it('m = P: all forwards first (all_warmup_microbatches)', () => {
    expect(show('interleaved', 1, 2, 2, 2)).toBe('F0c0 F1c0 F0c1 F1c1 B0c1 B1c1 B0c0 B1c0');
  });

  it('every stage runs each micro-batch of each chunk once forward and once backward', () => {
    for (let s = 0; s < 4; s++) {
      const units = stageOrder('interleaved', s, 4, 8, 3).map((u) => `${u.pass}${u.microBatch}c${u.chunk}`);
      expect(new Set(units).size).toBe(2 * 8 * 3);
      expect(units.length).toBe(2 * 8 * 3);
    }
  });
});
