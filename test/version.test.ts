/** The version manifests record is package.json's. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { MODTRANS_VERSION } from '../src/version.js';
import { ROOT } from './helpers/models.js';

it('MODTRANS_VERSION is package.json version', () => {
  expect(MODTRANS_VERSION).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
});
