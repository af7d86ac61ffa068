/**
 * Limits of ASTRA-sim 2.x that two stages keep: schedule/ numbers what it writes under them and
 * check/ reports a trace that crosses them. Kept at the root because check/ imports no stage.
 */

/** Native send/recv tags must stay below this: ASTRA-sim's own tags start here (Sys.hh; docs/astra-sim-formats.md F.1). */
export const MAX_TAG = 500_000_000;
