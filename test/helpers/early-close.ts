/** Runs a command whose reader takes one chunk of stdout and closes its end, as `| head -1` does. */
import { spawn } from 'node:child_process';

export async function runWithReaderClosingEarly(args: readonly string[], cwd: string): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, args, { cwd });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.once('data', () => child.stdout.destroy());
  const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { status, stderr };
}
