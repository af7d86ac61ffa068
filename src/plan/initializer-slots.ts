/**
 * The main graph's initializers by slot, their index in `graph.initializers`: a name's slot is its
 * value id when the ids are the initializers' places (names distinct, ids given in file order:
 * checked per name), so a 100k-node graph hashes no set or map of its 50k initializer names
 * (buildPlan's set of the names layers read was ~45 ms of the chain's translate). Otherwise a
 * map by name (the first initializer of a name) is built on the first look-up.
 */
import type { InferredModel } from '../shape/infer.js';

/** Whether a main-graph initializer's value id is its slot (checked per name by `slotById`). */
export function slotsAreIds(inferred: InferredModel): boolean {
  const graph = inferred.model.graph;
  return graph.sparseInitializers.length === 0 && inferred.initializerNames.size === graph.initializers.length;
}

/** The slot of a main-graph initializer's name found by its value id, or -1 (then look it up by name). */
export function slotById(inferred: InferredModel, name: string): number {
  const main = inferred.model.graph.initializers;
  const id = inferred.values.idOf(name);
  return id !== undefined && id < main.length && main[id]?.name === name ? id : -1;
}

export class InitializerSlots {
  /** Slots run from 0 to count - 1. */
  readonly count: number;
  private readonly byId: boolean;
  private byName: Map<string, number> | undefined;

  constructor(private readonly inferred: InferredModel) {
    this.count = inferred.model.graph.initializers.length;
    this.byId = slotsAreIds(inferred);
  }

  /** The slot of a main-graph initializer's name, -1 when none has it. */
  slotOf(name: string): number {
    if (this.byId) {
      const slot = slotById(this.inferred, name);
      if (slot >= 0) return slot;
    }
    const main = this.inferred.model.graph.initializers;
    if (this.byName === undefined) {
      this.byName = new Map();
      for (const [i, t] of main.entries()) if (!this.byName.has(t.name)) this.byName.set(t.name, i);
    }
    return this.byName.get(name) ?? -1;
  }

  /** The slot of `graph.initializers[i]` (the first initializer of its name). */
  slotAt(i: number): number {
    if (this.byId) return i;
    const t = this.inferred.model.graph.initializers[i];
    return t === undefined ? -1 : this.slotOf(t.name);
  }
}
