/**
 * Pipeline stages: the layer sequence cut into P x V contiguous parts (V model chunks per rank
 * when interleaved; part g goes to stage g mod P as its chunk floor(g / P), as Megatron-LM lays
 * out virtual stages). Cuts fall on block boundaries: in a transformer after each block's
 * residual add (the add that follows the MLP's row-parallel down projection), so embeddings stay
 * with the first part and everything after the last block (final norm, head, loss) with the
 * last; in other models between any two layers. Among the allowed cuts, an exact dynamic
 * programme picks the ones minimising the largest part's costed time (forward + backward cycles
 * of one rank per micro-batch); ties go to the earliest cuts.
 */
import { at, InputError, indexOutOfRange, last } from '../errors.js';
import type { Layer } from '../layers/types.js';
import type { PipelineStage } from './types.js';

/**
 * Cuts `cycles` (per layer) into `parts` contiguous parts starting at allowed cuts, minimising
 * the largest part's sum. Returns the start index of each part (the first is 0).
 */
export function balancedStarts(cycles: readonly number[], cuts: readonly number[], parts: number): number[] {
  const bounds = [0, ...cuts.filter((c) => c > 0 && c < cycles.length), cycles.length];
  const units = bounds.length - 1;
  if (parts > units) throw new InputError(`${parts} pipeline parts need ${parts - 1} cuts, but the model has only ${units - 1} block boundaries to cut at`);
  const prefix = [0];
  for (const c of cycles) prefix.push(last(prefix, 'cycle prefix sums') + c);
  // Cycles before each unit boundary: units [a, b) sum to before[b] - before[a].
  const before = bounds.map((b) => at(prefix, b));
  // best[k][u]: the smallest largest-part time of units [0, u) in k parts; from[k][u]: where the last part starts.
  const best = Array.from({ length: parts + 1 }, () => new Array<number>(units + 1).fill(Infinity));
  const from = Array.from({ length: parts + 1 }, () => new Array<number>(units + 1).fill(0));
  at(best, 0)[0] = 0;
  for (let k = 1; k <= parts; k++) {
    const previous = at(best, k - 1);
    const row = at(best, k);
    const fromRow = at(from, k);
    for (let u = k; u <= units; u++) {
      for (let s = k - 1; s < u; s++) {
        const v = Math.max(previous[s] ?? indexOutOfRange(s), (before[u] ?? indexOutOfRange(u)) - (before[s] ?? indexOutOfRange(s)));
        if (v < (row[u] ?? indexOutOfRange(u))) {
          row[u] = v;
          fromRow[u] = s;
        }
      }
    }
  }
  const starts: number[] = [];
  for (let k = parts, u = units; k > 0; k--) {
    u = at(at(from, k), u);
    starts.unshift(at(bounds, u));
  }
  return starts;
}

/** `--pp-stages FILE.json`: an array of P x V arrays of layer names, in model order. Returns each part's start. */
export function startsFromFile(file: string, text: string, layers: readonly Layer[], parts: number): number[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(json) || !json.every((p) => Array.isArray(p) && p.every((n) => typeof n === 'string'))) {
    throw new InputError(`${file}: expected an array of arrays of layer names, one per pipeline stage (model chunk)`);
  }
  const names = json as string[][];
  if (names.length !== parts) throw new InputError(`${file}: ${names.length} stages listed, the plan has ${parts}`);
  const flat = names.flat();
  const index = new Map(layers.map((l, i) => [l.name, i]));
  const unknown = flat.find((n) => !index.has(n));
  if (unknown !== undefined) throw new InputError(`${file}: no layer named '${unknown}'`);
  flat.forEach((n, k) => {
    if (index.get(n) !== k) {
      throw new InputError(`${file}: layer '${n}' is out of place: the stages must list every layer once, in model order (expected '${layers[k]?.name ?? '(none)'}')`);
    }
  });
  if (flat.length !== layers.length) throw new InputError(`${file}: layer '${at(layers, flat.length).name}' is in no stage`);
  const empty = names.findIndex((p) => p.length === 0);
  if (empty >= 0) throw new InputError(`${file}: stage ${empty} has no layer`);
  const starts: number[] = [];
  let next = 0;
  for (const p of names) {
    starts.push(next);
    next += p.length;
  }
  return starts;
}

/**
 * Parts (model order) -> stages: part g is chunk floor(g / P) of stage g mod P. `cycles`
 * undefined: every layer 0 (one stage, nothing to balance). A stage of one chunk holds that
 * chunk's list as its layers (lists of a plan are read, never changed).
 */
export function stagesOf(starts: readonly number[], layerCount: number, pp: number, cycles: readonly number[] | undefined): PipelineStage[] {
  const stages: PipelineStage[] = Array.from({ length: pp }, () => ({ layers: [], chunks: [], cycles: 0 }));
  starts.forEach((start, g) => {
    const end = starts[g + 1] ?? layerCount;
    // Allocated at its length: pushing 100k layers one by one regrew (and copied) the list ~25 times.
    const chunk = new Array<number>(Math.max(0, end - start));
    const stage = at(stages, g % pp);
    let chunkCycles = 0;
    for (let i = start; i < end; i++) chunk[i - start] = i;
    if (cycles !== undefined) for (let i = start; i < end; i++) chunkCycles += at(cycles, i);
    stage.chunks.push(chunk);
    stage.cycles += chunkCycles;
  });
  for (const s of stages) {
    const [only] = s.chunks;
    if (s.chunks.length === 1 && only !== undefined) s.layers = only;
    else {
      for (const chunk of s.chunks) for (const i of chunk) s.layers.push(i);
      // Chunks of one stage come in model order when not interleaved: already ascending.
      if (s.chunks.length > 1) s.layers.sort((x, y) => x - y);
    }
  }
  return stages;
}
