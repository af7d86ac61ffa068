/** Every fixture is accounted for in manifest.json, and every manifest entry names something. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturePath } from './helpers/models.js';

interface Entry {
  path: string;
  source: string;
  guards: string;
}

const manifest = JSON.parse(readFileSync(fixturePath('manifest.json'), 'utf8')) as { entries: Entry[] };

/** Fixture paths one level below each top folder (folders of cases count as one entry). */
function fixtureFiles(): string[] {
  const root = fixturePath('');
  const out: string[] = [];
  for (const top of readdirSync(root, { withFileTypes: true })) {
    if (!top.isDirectory()) continue;
    for (const entry of readdirSync(join(root, top.name))) out.push(`${top.name}/${entry}`);
  }
  return out;
}

function matches(pattern: string, path: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
  return regex.test(path);
}

describe('fixture manifest', () => {
  it('lists every fixture with its source and what it guards', () => {
    const unlisted = fixtureFiles().filter((f) => !manifest.entries.some((e) => matches(e.path, f)));
    expect(unlisted).toEqual([]);
    for (const e of manifest.entries) expect(e.source.length * e.guards.length).toBeGreaterThan(0);
  });

  it('names only fixtures that exist', () => {
    const files = fixtureFiles();
    const dangling = manifest.entries.filter((e) => !existsSync(fixturePath(e.path)) && !files.some((f) => matches(e.path, f)));
    expect(dangling).toEqual([]);
  });
});
