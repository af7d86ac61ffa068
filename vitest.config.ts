import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // beforeAll hooks that run a batch of CLI commands (test/cli/readme.test.ts) take as long as a test.
    hookTimeout: 60_000,
    pool: 'threads',
  },
});
