import { describe, expect, it } from 'vitest';
import { predictFreeNetwork } from '../../src/predict/free-network.js';
import { computeDurationNs } from '../../src/units.js';
import type { StepGraph, StepNode, StepSchedule } from '../../src/schedule/types.js';
import { pipelineSchedule, type PipelineOrder } from './pipelines.js';
import { present } from '../helpers/present.js';

const compute = (cycles: number, deps: number[] = [], name = 'c'): StepNode => ({ kind: 'compute', name, pass: 'fwd', layer: 0, microBatch: 0, cycles, flops: 1, tensorBytes: 1, deps });
const collective = (group: 'tp' | 'dp' | 'pp' | 'embedding' | 'world', deps: number[] = []): StepNode => ({ kind: 'collective', name: `${group}-coll`, type: 'ALLREDUCE', bytes: 1024, group, deps });
const schedule = (graphs: StepNode[][], clockMHz = 1000): StepSchedule => ({
  world: { tp: 2, dp: 2, pp: graphs.length },
  graphs: graphs.map((nodes, stage): StepGraph => ({ stage, nodes })),
  groups: [],
  clockMHz,
});

describe('pipeline bubble on hand-built schedules (comm free)', () => {
  // Equal stages, forward f and backward b per micro-batch: both GPipe and 1F1B take
  // (m + P - 1)(f + b) (Narayanan et al. 2021, sec. 2.2), each stage is busy m(f + b), so the
  // bubble fraction is (P - 1) / (m + P - 1).
  const cases: [PipelineOrder, number, number, number, number][] = [
    ['1f1b', 4, 8, 3, 6],
    ['1f1b', 2, 1, 5, 10],
    ['1f1b', 8, 3, 2, 4],
    ['1f1b', 16, 32, 1, 2],
    ['gpipe', 4, 8, 3, 6],
    ['gpipe', 3, 5, 4, 4],
  ];
  for (const [order, P, m, f, b] of cases) {
    it(`${order}: P = ${P}, m = ${m}, f = ${f}, b = ${b}`, () => {
      const p = predictFreeNetwork(pipelineSchedule({ stages: P, microBatches: m, fwdCycles: f, bwdCycles: b, order }));
      expect(p.stepNs).toBe((m + P - 1) * (f + b));
      expect(p.bubbleFraction).toBeCloseTo((P - 1) / (m + P - 1), 12);
      for (const s of p.stages) {
        expect(s.busyNs).toBe(m * (f + b));
        expect(s.idleNs).toBe((P - 1) * (f + b));
      }
    });
  }

  it('1F1B: stage s starts its first forward at s x f and the last stage alternates F and B without gaps', () => {
    const P = 4, m = 8, f = 3, b = 6;
    const sch = pipelineSchedule({ stages: P, microBatches: m, fwdCycles: f, bwdCycles: b, order: '1f1b' });
    const p = predictFreeNetwork(sch);
    sch.graphs.forEach((g, s) => {
      const first = g.nodes.findIndex((n) => n.kind === 'compute');
      expect(p.stages[s]?.startNs[first]).toBe(s * f);
    });
    const last = present(sch.graphs[P - 1], 'last stage graph');
    const lastTimes = present(p.stages[P - 1], 'last stage prediction');
    const times = last.nodes.flatMap((n, id) => (n.kind === 'compute' ? [[lastTimes.startNs[id], lastTimes.endNs[id]]] : []));
    for (let i = 1; i < times.length; i++) expect(times[i]?.[0]).toBe(times[i - 1]?.[1]);
  });

  it('a backward split into input and weight gradient takes the same time', () => {
    const p = predictFreeNetwork(pipelineSchedule({ stages: 4, microBatches: 6, fwdCycles: 2, bwdCycles: 4, order: '1f1b', splitBackward: true }));
    expect(p.stepNs).toBe((6 + 3) * 6);
  });
});

describe('send / receive matching', () => {
  it('a receive completes when its send is issued, not before', () => {
    const p = predictFreeNetwork(schedule([
      [compute(40), { kind: 'send', name: 's', peer: { axis: 'pp', stage: 1 }, bytes: 8, tag: 7, deps: [0] }],
      [{ kind: 'recv', name: 'r', peer: { axis: 'pp', stage: 0 }, bytes: 8, tag: 7, deps: [] }, compute(5, [0])],
    ]));
    expect(p.stages[1]?.startNs[0]).toBe(0);
    expect(p.stages[1]?.endNs[0]).toBe(40);
    expect(p.stages[1]?.startNs[1]).toBe(40);
    expect(p.stepNs).toBe(45);
  });

  it('matches by tag, whatever the order the sends are issued in', () => {
    const p = predictFreeNetwork(schedule([
      [compute(10), { kind: 'send', name: 'b', peer: { axis: 'pp', stage: 1 }, bytes: 8, tag: 2, deps: [0] }, compute(10, [0]), { kind: 'send', name: 'a', peer: { axis: 'pp', stage: 1 }, bytes: 8, tag: 1, deps: [2] }],
      [{ kind: 'recv', name: 'a', peer: { axis: 'pp', stage: 0 }, bytes: 8, tag: 1, deps: [] }, { kind: 'recv', name: 'b', peer: { axis: 'pp', stage: 0 }, bytes: 8, tag: 2, deps: [] }],
    ]));
    expect(p.stages[1]?.endNs[0]).toBe(20);
    expect(p.stages[1]?.endNs[1]).toBe(10);
  });

  it("a context-parallel ring's receive is met by the same stage's send of its tag (every CP rank sends as it receives)", () => {
    // Chunk 0 (30 cycles) overlaps the ring step issued before it; chunk 1 waits for the K/V received.
    const p = predictFreeNetwork(schedule([[
      compute(10),
      { kind: 'recv', name: 'r', peer: { axis: 'cp', offset: -1 }, bytes: 8, tag: 9, deps: [0] },
      compute(30, [0]),
      { kind: 'send', name: 's', peer: { axis: 'cp', offset: 1 }, bytes: 8, tag: 9, deps: [0] },
      compute(5, [1, 2, 3]),
    ]]));
    expect(p.stages[0]?.endNs[1]).toBe(10);
    expect(p.stages[0]?.startNs[4]).toBe(40);
    expect(p.stepNs).toBe(45);
  });

  it('a receive whose send never comes is a deadlock, named', () => {
    expect(() => predictFreeNetwork(schedule([[compute(1)], [{ kind: 'recv', name: 'lost', peer: { axis: 'pp', stage: 0 }, bytes: 8, tag: 3, deps: [] }]]))).toThrow(/deadlock.*stage 1 node 0 \(lost\) waits for its send from stage 0/);
  });
});

describe('collectives as group barriers', () => {
  it('a rank waits for its slowest group member (pp group across stages)', () => {
    const p = predictFreeNetwork(schedule([
      [compute(10), collective('pp', [0]), compute(5, [1])],
      [compute(30), collective('pp', [0]), compute(5, [1])],
    ]));
    expect(p.stages[0]?.startNs[1]).toBe(10);
    expect(p.stages[0]?.endNs[1]).toBe(30);
    expect(p.stages[0]?.startNs[2]).toBe(30);
    expect(p.stepNs).toBe(35);
    expect(p.stages[0]?.busyNs).toBe(15);
    expect(p.stages[0]?.idleNs).toBe(20);
  });

  it('the k-th collective of a group matches the k-th on every member (embedding group = first and last stage)', () => {
    const p = predictFreeNetwork(schedule([
      [collective('embedding'), compute(10, [0]), collective('embedding', [1]), compute(1, [2])],
      [compute(100)],
      [compute(50), collective('embedding', [0]), collective('embedding', [1]), compute(1, [2])],
    ]));
    // Stage 0's first collective waits for stage 2's first (at 50); its second (issued at 60) for stage 2's second.
    expect(p.stages[0]?.endNs[0]).toBe(50);
    expect(p.stages[0]?.endNs[2]).toBe(60);
    expect(p.stages[2]?.endNs[2]).toBe(60);
    expect(p.stepNs).toBe(100);
  });

  it('tensor- and data-parallel groups lie inside a stage: their members run in lockstep and never wait', () => {
    const p = predictFreeNetwork(schedule([
      [compute(10), collective('tp', [0]), collective('dp', [1]), compute(5, [2])],
      [compute(30)],
    ]));
    expect(p.stages[0]?.endNs[2]).toBe(10);
    expect(p.stages[0]?.endNs[3]).toBe(15);
  });

  it('one communication node at a time: a send ready behind a waiting collective waits with it', () => {
    const p = predictFreeNetwork(schedule([
      [compute(10), collective('pp', [0]), { kind: 'send', name: 's', peer: { axis: 'pp', stage: 1 }, bytes: 8, tag: 1, deps: [0] }],
      [compute(30), collective('pp', [0]), { kind: 'recv', name: 'r', peer: { axis: 'pp', stage: 0 }, bytes: 8, tag: 1, deps: [] }, compute(1, [2])],
    ]));
    expect(p.stages[0]?.startNs[2]).toBe(30);
    expect(p.stages[1]?.endNs[2]).toBe(30);
    expect(p.stepNs).toBe(31);
  });

  it('one compute node at a time, ready nodes in ascending id order', () => {
    const p = predictFreeNetwork(schedule([[compute(10, [], 'a'), compute(20, [], 'b'), compute(5, [], 'c')]]));
    expect(Array.from(present(p.stages[0], 'stage 0').startNs)).toEqual([0, 10, 30]);
    expect(p.stepNs).toBe(35);
    expect(p.bubbleFraction).toBe(0);
  });
});

describe('compute time', () => {
  it('is cycles at the clock, rounded to whole ns and at least 1 ns, as every trace writer rounds it (src/units.ts)', () => {
    // 1,500 cycles at 940 MHz = 1595.74 ns.
    expect(computeDurationNs(1500, 940)).toBe(1596);
    expect(computeDurationNs(1, 2000)).toBe(1);
    // 7 x 1000 / 3 = 2333.33 ns; 123,456,789 x 1000 / 1050 = 117,577,894.29 ns.
    expect(computeDurationNs(7, 3)).toBe(2333);
    expect(computeDurationNs(123456789, 1050)).toBe(117577894);
  });
});
