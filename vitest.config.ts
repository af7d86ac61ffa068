import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // The README and CLI-fidelity suites run their CLI batches in beforeAll: ~9 s on a loaded 2-core machine, near the 10 s default.
    hookTimeout: 60_000,
    pool: 'threads',
  },
});
