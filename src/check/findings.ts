/**
 * What a trace check reports: one Finding per way ASTRA-sim 2.x would crash, hang or mis-time a
 * trace set (docs/astra-sim-formats.md Parts B and F). Findings are data; formatting them is the CLI's job, but the
 * one-line form lives here so every user prints them the same way.
 */

/**
 * What ASTRA-sim does with the defect. `misread`: an older feeder reads the value as 0 (B.5).
 * `mixed-set`: the files on disk are not one set written together (a file the manifest does not
 * list or lists with another size, an interrupted write, a stray rank file); ASTRA-sim runs
 * whatever mix it is given.
 */
export type Effect = 'crash' | 'hang' | 'mis-time' | 'misread' | 'mixed-set';

export type FindingKind =
  | 'missing-file' | 'unreadable-file' | 'unlisted-file' | 'stray-file' | 'manifest'
  | 'duplicate-id' | 'unknown-dependency' | 'dependency-cycle'
  | 'unknown-node-type'
  | 'attribute-kind' | 'missing-attribute' | 'cpu-op-comm'
  | 'comm-size' | 'comm-type' | 'involved-dim'
  | 'no-work'
  | 'send-src' | 'recv-dst' | 'comm-tag' | 'peer-rank' | 'unmatched-send' | 'unmatched-recv'
  | 'pg-name' | 'unknown-group' | 'not-in-group' | 'collective-mismatch' | 'collective-missing'
  | 'group-id' | 'group-ranks' | 'groups-file';

export interface Finding {
  kind: FindingKind;
  effect: Effect;
  /** The rank whose file holds the defect; absent for findings about the comm-groups file. */
  rank?: number;
  /** The file, for findings about a file that has no rank (a stray name, the manifest). */
  file?: string;
  node?: { id: number; name: string };
  message: string;
}

/** `rank R node ID (NAME): what is wrong`, `rank R: ...`, `FILE: ...` or `comm groups: ...`. */
export function formatFinding(f: Finding): string {
  const where =
    f.rank === undefined ? (f.file ?? 'comm groups') : f.node === undefined ? `rank ${f.rank}` : `rank ${f.rank} node ${f.node.id} (${f.node.name})`;
  return `${where}: ${f.message}`;
}

/** Findings in rank, then node-id order; groups-file findings first. */
export function sortFindings(findings: Finding[]): Finding[] {
  const rank = (f: Finding): number => f.rank ?? -1;
  const node = (f: Finding): number => f.node?.id ?? -1;
  return findings.sort((a, b) => rank(a) - rank(b) || node(a) - node(b));
}
