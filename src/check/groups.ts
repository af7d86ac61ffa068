/**
 * The comm-groups file of ASTRA-sim 2.x's --comm-group-configuration (docs/astra-sim-formats.md F.2):
 * `{"<id>": [global ranks...]}`, ids decimal strings of integers >= 1.
 */
import type { Finding } from './findings.js';

/** Group id -> member ranks (as listed). */
export type CommGroups = Map<number, number[]>;

/** Raw JSON form, as written to the file. */
export type CommGroupsJson = Record<string, unknown>;

/**
 * Validates the groups against the ranks that have a trace file. Groups with an unusable id are
 * left out of the map (ASTRA-sim aborts on them anyway); their findings say why.
 */
export function readCommGroups(raw: unknown, ranksWithFiles: ReadonlySet<number>, source?: string): { groups: CommGroups; findings: Finding[] } {
  const groups: CommGroups = new Map();
  const findings: Finding[] = [];
  const add = (kind: Finding['kind'], effect: Finding['effect'], message: string): void => void findings.push({ kind, effect, message });
  if (source?.includes('empty')) {
    add('groups-file', 'crash', `${source}: ASTRA-sim silently ignores a comm-group configuration whose path contains "empty" (F.2); rename it`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    add('groups-file', 'crash', 'the file must hold a JSON object {"<id>": [ranks...]}');
    return { groups, findings };
  }
  for (const [key, value] of Object.entries(raw as CommGroupsJson)) {
    if (!/^[0-9]+$/.test(key)) {
      add('group-id', 'crash', `group id "${key}" is not a decimal integer (ASTRA-sim parses ids with stoi)`);
      continue;
    }
    const id = Number(key);
    if (id < 1) {
      add('group-id', 'crash', `group id "${key}" must be >= 1 (CommunicatorGroup::set_id asserts id > 0)`);
      continue;
    }
    if (groups.has(id)) {
      add('group-id', 'crash', `group id "${key}" repeats group ${id}`);
      continue;
    }
    if (!Array.isArray(value) || value.some((r) => !Number.isSafeInteger(r) || (r as number) < 0)) {
      add('group-ranks', 'crash', `group ${key}: members must be a list of non-negative integer ranks`);
      continue;
    }
    const ranks = value as number[];
    if (ranks.length === 0) add('group-ranks', 'hang', `group ${key} has no members`);
    const seen = new Set<number>();
    for (const r of ranks) {
      if (seen.has(r)) add('group-ranks', 'hang', `group ${key} lists rank ${r} twice`);
      seen.add(r);
    }
    const missing = [...seen].filter((r) => !ranksWithFiles.has(r));
    if (missing.length > 0) {
      add('group-ranks', 'crash', `group ${key}: rank(s) ${listed(missing)} have no trace file`);
    }
    groups.set(id, ranks);
  }
  return { groups, findings };
}

/** Up to `max` items, then "... (N more)". */
export function listed(items: readonly (number | string)[], max = 8): string {
  const head = items.slice(0, max).join(', ');
  return items.length > max ? `${head}, ... (${items.length - max} more)` : head;
}
