/** ESM TypeScript through @swc/jest; run with NODE_OPTIONS=--experimental-vm-modules (see npm test). */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {'^(\\.{1,2}/.*)\\.js$': '$1'},
  transform: {'^.+\\.ts$': ['@swc/jest', {jsc: {parser: {syntax: 'typescript'}, target: 'es2022'}}]},
  testTimeout: 60000,
  // Tests spawn real shells, compilers and servers; two cores cannot run many suites at once.
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/helpers/summary-reporter.cjs'],
  // The caller's environment (CUDAENV_*, CUDA_HOME, LD_LIBRARY_PATH, HOME...) never reaches a test: see docs/testing.md.
  globalSetup: '<rootDir>/test/helpers/global-setup.mjs',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.mjs',
};
