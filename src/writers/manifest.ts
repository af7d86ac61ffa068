/**
 * The manifest of a multi-file output (a Chakra trace set, a SCALE-sim export or report set):
 * what was written, file by file with sizes, written last, so that a reader can tell the set on
 * disk from a mix of runs. `state: "committing"` marks a set whose files were being moved into
 * place (it lists the temp folder they come from, so the next run can finish the move).
 */

export type ManifestKind = 'chakra-trace-set' | 'scalesim-topologies' | 'scalesim-reports';

export interface ManifestFile {
  /** A name in the manifest's folder (no path). */
  name: string;
  bytes: number;
}

export interface Manifest {
  modtrans: string;
  kind: ManifestKind;
  state: 'complete' | 'committing';
  /** Trace sets: the number of rank files (ranks 0..ranks-1). */
  ranks?: number;
  /** What produced the set (model, hardware, plan, timing). */
  plan: Record<string, unknown>;
  files: ManifestFile[];
  /** While committing: the temp folder (in the manifest's folder) holding the new files. */
  temp?: string;
  /** While committing: files of an earlier set that this one removes. */
  remove?: string[];
}

/** The manifest as JSON: fields first, then one line per file. */
export function manifestJson(m: Manifest): string {
  const { files, remove, ...head } = m;
  const lines = [JSON.stringify(head, null, 2).replace(/\n}$/, ',')];
  if (remove !== undefined) lines.push(`  "remove": ${JSON.stringify(remove)},`);
  lines.push('  "files": [');
  lines.push(files.map((f) => `    ${JSON.stringify(f)}`).join(',\n'));
  lines.push('  ]', '}', '');
  return lines.join('\n');
}
