/** ESM TypeScript through @swc/jest; run with NODE_OPTIONS=--experimental-vm-modules (see npm test). */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {'^(\\.{1,2}/.*)\\.js$': '$1'},
  transform: {'^.+\\.ts$': ['@swc/jest', {jsc: {parser: {syntax: 'typescript'}, target: 'es2022'}}]},
  testTimeout: 60000,
  // Tests spawn real shells, compilers and servers, and wait on them (prompts, loopback servers, fish's
  // whole-second clock): on CI's 2 cores, two workers left a tenth of the CPU idle (793 s of wall time,
  // 1,416 CPU-seconds); a third fills those waits without running many suites at once.
  maxWorkers: 3,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.cjs'],
  // The caller's environment (CUDAENV_*, CUDA_HOME, LD_LIBRARY_PATH, HOME...) never reaches a test: see docs/testing.md.
  globalSetup: '<rootDir>/test/helpers/global-setup.mjs',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.mjs',
};
