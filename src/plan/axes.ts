/**
 * The parallel axes, as Megatron-core lays ranks out (megatron/core/parallel_state.py,
 * `RankGenerator` and `generate_masked_orthogonal_rank_groups`): ordered named axes, the first in
 * the order fastest-varying in the rank, default order tp-cp-ep-dp-pp. Two grids share the ranks
 * ("MoE parallel folding"): dense layers see TP x CP x DP x PP (EP folded to 1), expert layers
 * ETP x EP x EDP x PP (CP folded to 1), EDP = world / (ETP x EP x PP). A communicator group is a
 * grid and the axes it spans (Megatron's `get_ranks('dp-cp')`). This table is the one place the
 * axes are named: the CLI's flags, the Megatron flag names, validation and the summary read it.
 */
import { InputError } from '../errors.js';
import type { GroupKind, WorldShape } from './types.js';

export const AXIS_NAMES = ['tp', 'cp', 'ep', 'dp', 'pp'] as const;
export type AxisName = (typeof AXIS_NAMES)[number];

/** Megatron-core's default `order` (parallel_state.initialize_model_parallel). */
export const DEFAULT_AXIS_ORDER: readonly AxisName[] = ['tp', 'cp', 'ep', 'dp', 'pp'];

export interface AxisInfo {
  /** modtrans's flag. */
  flag: string;
  /** Megatron-LM's argument for the same size (none for DP, which Megatron derives). */
  megatronFlag?: string;
  /** For messages. */
  what: string;
  /** The flag's help line. */
  help: string;
}

export const AXES: Readonly<Record<AxisName, AxisInfo>> = {
  tp: { flag: '--tp', megatronFlag: '--tensor-model-parallel-size', what: 'tensor-parallel', help: 'tensor-parallel ranks (Megatron-LM roles found in the graph)' },
  cp: { flag: '--cp', megatronFlag: '--context-parallel-size', what: 'context-parallel', help: "context-parallel ranks: the sequence split C ways, attention's K/V exchanged (--cp-comm-type)" },
  ep: { flag: '--ep', megatronFlag: '--expert-model-parallel-size', what: 'expert-parallel', help: "expert-parallel ranks: a mixture of experts' experts spread E ways, tokens dispatched by all-to-all" },
  dp: { flag: '--dp', what: 'data-parallel', help: 'data-parallel replicas' },
  pp: { flag: '--pp', megatronFlag: '--pipeline-model-parallel-size', what: 'pipeline-parallel', help: 'pipeline stages (layers cut on block boundaries)' },
};

/** The expert tensor-parallel size: an axis of the expert grid only, default TP. */
export const EXPERT_TP = { flag: '--etp', megatronFlag: '--expert-tensor-parallel-size', help: "expert layers' tensor-parallel ranks (default --tp, as Megatron-LM)" } as const;

/** Every axis size of a world, defaults filled: ETP defaults to TP, as Megatron's `expert_tensor_parallel_size`. */
export interface Axes {
  tp: number;
  cp: number;
  ep: number;
  etp: number;
  dp: number;
  pp: number;
  /** Expert data-parallel size: world / (ETP x EP x PP). */
  edp: number;
  order: readonly AxisName[];
}

export function axesOf(w: WorldShape): Axes {
  const cp = w.cp ?? 1;
  const ep = w.ep ?? 1;
  const etp = w.etp ?? w.tp;
  const world = w.tp * cp * w.dp * w.pp;
  return { tp: w.tp, cp, ep, etp, dp: w.dp, pp: w.pp, edp: world / (etp * ep * w.pp), order: w.order ?? DEFAULT_AXIS_ORDER };
}

export const worldSize = (w: WorldShape): number => w.tp * (w.cp ?? 1) * w.dp * w.pp;

const sameOrder = (a: readonly AxisName[], b: readonly AxisName[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Whether two orders lay the ranks out alike: the same relative order of the axes of size > 1 in either grid. */
export function sameLayout(a: Axes, x: readonly AxisName[], y: readonly AxisName[]): boolean {
  const spans = (n: AxisName): boolean => (n === 'tp' ? a.tp > 1 || a.etp > 1 : n === 'dp' ? a.dp > 1 || a.edp > 1 : a[n] > 1);
  return sameOrder(x.filter(spans), y.filter(spans));
}

/**
 * --order: axes hyphen-separated, as Megatron's `order` (parallel_state.initialize_model_parallel).
 * Megatron appends the axes an order leaves out (RankGenerator.__init__); so does this. Whether a
 * left-out axis has size 1, as Megatron requires, is the plan request's check (it knows the sizes).
 */
export function parseAxisOrder(text: string): AxisName[] {
  const names = text.toLowerCase().split('-');
  const known = new Set<string>(AXIS_NAMES);
  for (const n of names) if (!known.has(n)) throw new InputError(`--order ${text}: '${n}' is not an axis; expected axes among ${AXIS_NAMES.join(', ')} hyphen-separated, e.g. ${DEFAULT_AXIS_ORDER.join('-')}`);
  if (new Set(names).size !== names.length) throw new InputError(`--order ${text}: name each axis once (${AXIS_NAMES.join(', ')}), e.g. ${DEFAULT_AXIS_ORDER.join('-')}`);
  return [...(names as AxisName[]), ...AXIS_NAMES.filter((n) => !names.includes(n))];
}

/**
 * Megatron's checks on the expert grid (parallel_state.initialize_model_parallel): the world
 * divides by ETP x EP x PP, and with pipelining and an order not ending in pp the two grids'
 * data-parallel sizes agree; the pipeline groups are then the same in both grids.
 */
export function checkAxes(w: WorldShape): void {
  const a = axesOf(w);
  const world = worldSize(w);
  if (!Number.isInteger(a.edp) || a.edp < 1) {
    throw new InputError(`--etp ${a.etp} x --ep ${a.ep} x --pp ${a.pp} = ${a.etp * a.ep * a.pp} does not divide the world of ${world} ranks (--tp ${a.tp} x --cp ${a.cp} x --dp ${a.dp} x --pp ${a.pp}): expert layers need world / (ETP x EP x PP) data-parallel replicas`);
  }
  if (a.pp > 1 && a.order[a.order.length - 1] !== 'pp' && a.edp !== a.dp) {
    throw new InputError(`--order ${a.order.join('-')}: with --pp ${a.pp} and pp not last, Megatron-LM needs the dense and expert data-parallel sizes equal (${a.dp} and ${a.edp})`);
  }
}

type Grid = 'dense' | 'expert';

/** Each communicator group: its grid and the axes it spans (Megatron's `get_ranks` token). */
export const GROUP_AXES: Readonly<Record<Exclude<GroupKind, 'embedding' | 'world'>, { grid: Grid; axes: readonly AxisName[]; what: string }>> = {
  tp: { grid: 'dense', axes: ['tp'], what: 'tensor-parallel' },
  cp: { grid: 'dense', axes: ['cp'], what: 'context-parallel' },
  // Megatron's gradient and distributed-optimizer group: data parallel with context parallelism (get_data_parallel_group(with_context_parallel=True)).
  dp: { grid: 'dense', axes: ['cp', 'dp'], what: 'data-parallel (x context-parallel)' },
  pp: { grid: 'dense', axes: ['pp'], what: 'pipeline' },
  // Megatron's model-parallel group (get_model_parallel_group): the gradient norm's reduction.
  mp: { grid: 'dense', axes: ['tp', 'pp'], what: 'model-parallel (tensor x pipeline)' },
  ep: { grid: 'expert', axes: ['ep'], what: 'expert-parallel' },
  etp: { grid: 'expert', axes: ['tp'], what: 'expert tensor-parallel' },
  edp: { grid: 'expert', axes: ['dp'], what: 'expert data-parallel' },
};

/**
 * Every group kind, in the order group ids are numbered (kinds a step does not use are skipped,
 * so a plan without the newer axes numbers its groups as before they existed); the world (id 0) last.
 */
export const GROUP_KINDS: readonly GroupKind[] = ['tp', 'cp', 'dp', 'pp', 'embedding', 'ep', 'etp', 'edp', 'mp', 'world'];

/** Axis sizes of a grid, in the world's order (ep folded to 1 on the dense grid, cp on the expert one). */
function gridSizes(a: Axes, grid: Grid): Record<AxisName, number> {
  return grid === 'dense' ? { tp: a.tp, cp: a.cp, ep: 1, dp: a.dp, pp: a.pp } : { tp: a.etp, cp: 1, ep: a.ep, dp: a.edp, pp: a.pp };
}

/** A grid's strides: rank = sum over axes of index x stride, the first axis of the order fastest. */
export interface GridLayout {
  sizes: Record<AxisName, number>;
  strides: Record<AxisName, number>;
}

export function gridLayout(w: WorldShape, grid: Grid): GridLayout {
  const a = axesOf(w);
  const sizes = gridSizes(a, grid);
  const strides = { tp: 0, cp: 0, ep: 0, dp: 0, pp: 0 };
  let stride = 1;
  for (const name of a.order) {
    strides[name] = stride;
    stride *= sizes[name];
  }
  return { sizes, strides };
}

export const axisIndex = (rank: number, axis: AxisName, g: GridLayout): number => Math.floor(rank / g.strides[axis]) % g.sizes[axis];

/** The rank with `axis`'s index replaced by `index`, every other index kept. */
export const withAxisIndex = (rank: number, axis: AxisName, index: number, g: GridLayout): number => rank + (index - axisIndex(rank, axis, g)) * g.strides[axis];

/** The pipeline stage of a rank (the same in both grids: Megatron asserts their pp groups agree). */
export const stageOfRank = (rank: number, w: WorldShape): number => axisIndex(rank, 'pp', gridLayout(w, 'dense'));

/** Members of `rank`'s group spanning `axes` of grid `g`, ascending (the first axis of the order fastest, as Megatron lists them). */
export function spannedRanks(rank: number, axes: readonly AxisName[], order: readonly AxisName[], g: GridLayout): number[] {
  const spanned = order.filter((n) => axes.includes(n));
  let members = [spanned.reduce((r, n) => withAxisIndex(r, n, 0, g), rank)];
  for (const n of spanned) {
    const next: number[] = [];
    for (let i = 0; i < g.sizes[n]; i++) for (const m of members) next.push(m + i * g.strides[n]);
    members = next;
  }
  return members.sort((x, y) => x - y);
}

/** Whether a group kind's members sit on more than one pipeline stage. */
export const spansStages = (kind: GroupKind): boolean => kind === 'world' || kind === 'embedding' || (GROUP_AXES[kind]?.axes.includes('pp') ?? false);

/**
 * The world's layout for summary lines: "TP 2 x DP 4 x PP 2 = 16 ranks" (the dense axes in the
 * world's order, CP and PP where > 1, PP always with `pipeline: 'always'`), then the expert grid
 * where it differs from the dense one and the order where it is not Megatron's default.
 */
export function worldLayout(w: WorldShape, options: { pipeline?: 'always'; ranks?: boolean } = {}): string {
  const a = axesOf(w);
  const shown = a.order.filter((n) => n === 'tp' || n === 'dp' || (n === 'cp' && a.cp > 1) || (n === 'pp' && (a.pp > 1 || options.pipeline === 'always')));
  const dense = shown.map((n) => `${n.toUpperCase()} ${a[n]}`).join(' x ');
  const ranks = options.ranks === false ? '' : ` = ${worldSize(w)} ranks`;
  const experts = a.ep > 1 || a.etp !== a.tp ? `, experts ETP ${a.etp} x EP ${a.ep} x EDP ${a.edp}` : '';
  const order = sameLayout(a, a.order, DEFAULT_AXIS_ORDER) ? '' : `, order ${a.order.join('-')}`;
  return `${dense}${ranks}${experts}${order}`;
}
