import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';
export default mergeConfig(base, defineConfig({ test: { setupFiles: ['/tmp/tests-prof/setup-cpu.ts'] } }));
