/**
 * The one path from a command to the process's exit code. Each command's run function returns
 * its code; commander drops what an action returns, so actions are registered through
 * `returningExitCode`, which hands the code to `runCli` (main.ts), whose caller sets
 * `process.exitCode` once. Thrown errors take the same path: `runCli` maps them to 2 (bad input)
 * or 1 (a bug). Nothing else sets `process.exitCode`.
 */

/** 0: success; 2: bad input, or (check-trace) defects found; 1 (a bug) comes only from `runCli`. */
export type ExitCode = 0 | 2;

export const SUCCESS: ExitCode = 0;
export const FAILURE: ExitCode = 2;

let returned: ExitCode = SUCCESS;

/** A commander action that records the code its run function returns. */
export function returningExitCode<A extends unknown[]>(run: (...args: A) => Promise<ExitCode>): (...args: A) => Promise<void> {
  return async (...args: A): Promise<void> => {
    returned = await run(...args);
  };
}

/** The code the last action returned (0 if none ran: help, version), reset for the next command line. */
export function takeReturnedExitCode(): ExitCode {
  const code = returned;
  returned = SUCCESS;
  return code;
}
