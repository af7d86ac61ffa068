import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // beforeAll hooks that run a batch of CLI commands (test/cli/readme.test.ts) take as long as a test.
    hookTimeout: 60_000,
    // Worker processes, not threads: test/helpers/cli-batch.ts runs command lines in the test's own
    // process, each in its folder (process.chdir, which a worker thread may not call).
    pool: 'forks',
    // Each worker loads the sources once for all its files instead of once per file (half the
    // suite's CPU time was module loading). Tests that change process state put it back.
    isolate: false,
    // Transformed modules cached on disk between runs (node_modules/.experimental-vitest-cache, keyed
    // by content: a changed file is transformed again; `npx vitest --clearCache` empties it).
    experimental: { fsModuleCache: true },
  },
});
