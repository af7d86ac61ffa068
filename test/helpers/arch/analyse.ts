/** Analyses a graph-only model a builder of test/helpers/arch made: layers, structure and name lookups. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyseModel, type AnalysedModel } from '../../../src/pipeline.js';
import { analyseStructure } from '../../../src/structure/analyse.js';
import type { ModelStructure } from '../../../src/structure/types.js';
import type { BuiltModel } from './llama.js';

const dir = mkdtempSync(join(tmpdir(), 'modtrans-arch-'));
let files = 0;

export interface Analysed extends AnalysedModel {
  file: string;
  structure: ModelStructure;
  /** Layer name of index i (-1: '-'). */
  name: (i: number | undefined) => string;
  /** Index of the layer named `name` (throws when absent). */
  index: (name: string) => number;
  params: Map<string, number>;
}

/** The CLI's default lowering (vector layers on) unless `vectorOps` is false. */
export function analyseBuilt(built: BuiltModel, vectorOps = true): Analysed {
  const file = join(dir, `m${files++}.onnx`);
  writeFileSync(file, built.bytes);
  const analysed = analyseModel(file, {}, {}, { vectorOps });
  const structure = analyseStructure(analysed.inferred, analysed.layers);
  const byName = new Map(analysed.layers.map((l, i) => [l.name, i]));
  return {
    ...analysed,
    file,
    structure,
    params: built.params,
    name: (i) => (i === undefined || i < 0 ? '-' : (analysed.layers[i]?.name ?? '?')),
    index: (name) => {
      const i = byName.get(name);
      if (i === undefined) throw new Error(`no layer ${name}`);
      return i;
    },
  };
}
