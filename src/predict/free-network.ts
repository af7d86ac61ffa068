/**
 * The training step as ASTRA-sim 2.x would run a StepSchedule if the network were free: per rank
 * one compute node and one communication node (a collective or a send) in flight at a time, ready
 * nodes issued in ascending id order (docs/astra-sim-formats.md F.3), compute for its cycles at the
 * schedule's clock, every collective and transfer 0 ns. A collective still completes only when
 * every member of its group has issued its matching one (the k-th on that group), and a receive
 * when the matching send (same pair of stages, same tag) has been issued.
 *
 * Ranks of one pipeline stage run the same graph and differ only in their peers, so they run in
 * lockstep: one representative rank per stage is simulated, tensor- and data-parallel groups (all
 * inside one stage) complete on issue, and only groups spanning stages (pp, embedding, world) and
 * sends/receives couple the stages. The cost is one pass over the graphs, whatever the rank count.
 */
import { InputError, indexOutOfRange, internalError } from '../errors.js';
import type { GroupKind } from '../plan/types.js';
import { spansStages } from '../plan/axes.js';
import { peerStageOf, type StepGraph, type StepNode, type StepSchedule } from '../schedule/types.js';
import { computeDurationNs } from '../units.js';
import { MinHeap } from './heap.js';


export interface StagePrediction {
  stage: number;
  /** Per node of the stage's graph (index = node id): when it was issued, ns from the step's start. */
  startNs: Float64Array;
  /** Per node: when it completed (a collective: when its last group member issued it). */
  endNs: Float64Array;
  /** Time the stage's compute unit works: the sum of its compute nodes' durations. */
  busyNs: number;
  /** stepNs - busyNs: time the compute unit waits (pipeline bubble, waits on other stages). */
  idleNs: number;
}

export interface StepPrediction {
  /** Completion of the last node of any stage. */
  stepNs: number;
  stages: StagePrediction[];
  /** Idle share of all stages' compute time: sum(idleNs) / (stages x stepNs); 0 for an empty step. */
  bubbleFraction: number;
}

/** Pipeline stages whose representative ranks take part in a `kind` collective issued on `stage`. */
function memberStages(kind: GroupKind, stage: number, stages: number): number[] {
  if (!spansStages(kind)) return [stage];
  if (kind === 'embedding') return stages === 1 ? [stage] : [0, stages - 1];
  return Array.from({ length: stages }, (_, p) => p);
}

interface StageState {
  graph: StepGraph;
  /** Unfinished dependencies per node. */
  waiting: Int32Array;
  /** dependents of node i: dependents.slice(firstDependent[i], firstDependent[i + 1]). */
  firstDependent: Int32Array;
  dependents: Int32Array;
  computeReady: MinHeap;
  commReady: MinHeap;
  computeNode: number;
  computeEndNs: number;
  commBusy: boolean;
  collectivesIssued: Map<GroupKind, number>;
  startNs: Float64Array;
  endNs: Float64Array;
  busyNs: number;
}

function stageState(graph: StepGraph, schedule: StepSchedule): StageState {
  const n = graph.nodes.length;
  const waiting = new Int32Array(n);
  const counts = new Int32Array(n + 1);
  graph.nodes.forEach((node, i) => {
    waiting[i] = node.deps.length;
    for (const d of node.deps) {
      if (!(d >= 0 && d < i)) throw new InputError(`step schedule, stage ${graph.stage}: node ${i} (${node.name}) depends on node ${d}, which is not an earlier node`);
      counts[d + 1] = (counts[d + 1] ?? indexOutOfRange(d + 1)) + 1;
    }
  });
  for (let i = 0; i < n; i++) counts[i + 1] = (counts[i + 1] ?? indexOutOfRange(i + 1)) + (counts[i] ?? indexOutOfRange(i));
  const fill = counts.slice(0, n);
  const dependents = new Int32Array(counts[n] ?? indexOutOfRange(n));
  graph.nodes.forEach((node, i) => {
    for (const d of node.deps) {
      const slot = fill[d] ?? indexOutOfRange(d);
      fill[d] = slot + 1;
      dependents[slot] = i;
    }
  });
  const busyNs = graph.nodes.reduce((a, node) => a + (node.kind === 'compute' ? computeDurationNs(node.cycles, schedule.clockMHz) : 0), 0);
  return {
    graph, waiting, firstDependent: counts, dependents,
    computeReady: new MinHeap(), commReady: new MinHeap(), computeNode: -1, computeEndNs: 0, commBusy: false,
    collectivesIssued: new Map(), startNs: new Float64Array(n).fill(NaN), endNs: new Float64Array(n).fill(NaN), busyNs,
  };
}

const transferKey = (from: number, to: number, tag: number): string => `${from}>${to}#${tag}`;

export function predictFreeNetwork(schedule: StepSchedule): StepPrediction {
  const states = schedule.graphs.map((g) => stageState(g, schedule));
  const stages = states.length;
  // Zero-time completions wait in a FIFO (as ASTRA-sim fires a 0 ns event after the current issue round).
  const completions: [stage: number, node: number][] = [];
  const stateOf = (s: number): StageState => states[s] ?? indexOutOfRange(s);
  const running = new MinHeap((a, b) => {
    const endA = stateOf(a).computeEndNs;
    const endB = stateOf(b).computeEndNs;
    return endA < endB || (endA === endB && a < b);
  });
  const sendsIssued = new Set<string>();
  const recvsWaiting = new Map<string, [number, number]>();
  const barriers = new Map<string, [number, number][]>();
  let now = 0;
  let finished = 0;

  const makeReady = (s: number, id: number): void => {
    const st = stateOf(s);
    const node: StepNode = st.graph.nodes[id] ?? indexOutOfRange(id);
    if (node.kind === 'compute') st.computeReady.push(id);
    else if (node.kind === 'recv') {
      // A receive takes no slot: issued as soon as it is ready, done once its send is issued.
      st.startNs[id] = now;
      const key = transferKey(peerStageOf(node.peer, s), s, node.tag);
      if (sendsIssued.has(key)) completions.push([s, id]);
      else recvsWaiting.set(key, [s, id]);
    } else st.commReady.push(id);
  };

  const issueComm = (s: number, id: number): void => {
    const st = stateOf(s);
    const node = st.graph.nodes[id] ?? indexOutOfRange(id);
    st.startNs[id] = now;
    st.commBusy = true;
    if (node.kind === 'send') {
      const key = transferKey(s, peerStageOf(node.peer, s), node.tag);
      sendsIssued.add(key);
      const recv = recvsWaiting.get(key);
      if (recv !== undefined) {
        recvsWaiting.delete(key);
        completions.push(recv);
      }
      completions.push([s, id]);
      return;
    }
    if (node.kind !== 'collective') return;
    const k = st.collectivesIssued.get(node.group) ?? 0;
    st.collectivesIssued.set(node.group, k + 1);
    const members = memberStages(node.group, s, stages);
    if (!members.includes(s)) throw new InputError(`step schedule, stage ${s}: ${node.name} is a ${node.group} collective, but stage ${s} is not in that group`);
    const key = `${node.group}#${k}`;
    const arrived = barriers.get(key) ?? [];
    arrived.push([s, id]);
    if (arrived.length < members.length) barriers.set(key, arrived);
    else {
      barriers.delete(key);
      completions.push(...arrived);
    }
  };

  const issue = (s: number): void => {
    const st = stateOf(s);
    if (st.computeNode < 0 && st.computeReady.size > 0) {
      const id = st.computeReady.pop() ?? internalError(`stage ${s}: compute-ready heap of size ${st.computeReady.size} popped nothing`);
      const node = st.graph.nodes[id] ?? indexOutOfRange(id);
      st.computeNode = id;
      st.startNs[id] = now;
      st.computeEndNs = now + (node.kind === 'compute' ? computeDurationNs(node.cycles, schedule.clockMHz) : 0);
      running.push(s);
    }
    if (!st.commBusy) {
      const id = st.commReady.pop();
      if (id !== undefined) issueComm(s, id);
    }
  };

  const complete = (s: number, id: number): void => {
    const st = stateOf(s);
    st.endNs[id] = now;
    finished++;
    const node = st.graph.nodes[id] ?? indexOutOfRange(id);
    if (node.kind === 'send' || node.kind === 'collective') st.commBusy = false;
    const end = st.firstDependent[id + 1] ?? indexOutOfRange(id + 1);
    for (let j = st.firstDependent[id] ?? indexOutOfRange(id); j < end; j++) {
      const d = st.dependents[j] ?? indexOutOfRange(j);
      const left = (st.waiting[d] ?? indexOutOfRange(d)) - 1;
      st.waiting[d] = left;
      if (left === 0) makeReady(s, d);
    }
    issue(s);
  };

  states.forEach((st, s) => {
    st.graph.nodes.forEach((node, id) => {
      if (node.deps.length === 0) makeReady(s, id);
    });
    issue(s);
  });
  for (;;) {
    for (let next = 0; next < completions.length; next++) {
      const [stage, node] = completions[next] ?? indexOutOfRange(next);
      complete(stage, node);
    }
    completions.length = 0;
    const s = running.pop();
    if (s === undefined) break;
    const st = stateOf(s);
    now = st.computeEndNs;
    const id = st.computeNode;
    st.computeNode = -1;
    complete(s, id);
  }
  const total = states.reduce((a, st) => a + st.graph.nodes.length, 0);
  if (finished < total) throw new InputError(`step schedule deadlocks: ${stuckNodes(states).join('; ')}`);
  let stepNs = 0;
  for (const st of states) for (const t of st.endNs) stepNs = Math.max(stepNs, t);
  const out = states.map((st, stage): StagePrediction => ({ stage, startNs: st.startNs, endNs: st.endNs, busyNs: st.busyNs, idleNs: stepNs - st.busyNs }));
  const busy = out.reduce((a, st) => a + st.busyNs, 0);
  return { stepNs, stages: out, bubbleFraction: stepNs > 0 && stages > 0 ? 1 - busy / (stages * stepNs) : 0 };
}

/** The first node of each stage that never completed, for the deadlock message. */
function stuckNodes(states: readonly StageState[]): string[] {
  return states.flatMap((st, s) => {
    const id = Array.from(st.endNs).findIndex((t) => Number.isNaN(t));
    if (id < 0) return [];
    const node = st.graph.nodes[id] ?? indexOutOfRange(id);
    const why = Number.isNaN(st.startNs[id]) ? 'never ready' : node.kind === 'recv' ? `waits for its send from stage ${peerStageOf(node.peer, s)}` : node.kind === 'collective' ? `waits for the other members of its ${node.group} group` : 'never completed';
    return [`stage ${s} node ${id} (${node.name}) ${why}`];
  });
}

/** What `translate --report FILE.json` records of the prediction (node times left out). */
export interface PredictionSummary {
  /** Communication is free: ASTRA-sim's step time adds the network to this. */
  network: 'free';
  stepNs: number;
  bubbleFraction: number;
  stages: { stage: number; busyNs: number; idleNs: number }[];
}

export function predictionSummary(p: StepPrediction): PredictionSummary {
  return { network: 'free', stepNs: p.stepNs, bubbleFraction: p.bubbleFraction, stages: p.stages.map((s) => ({ stage: s.stage, busyNs: s.busyNs, idleNs: s.idleNs })) };
}
