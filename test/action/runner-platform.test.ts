import {describe, expect, test} from '@jest/globals';
import {CudaenvError} from '../../src/core/errors.js';
import {runnerPlatform} from '../../src/action/runner-platform.js';

describe('runnerPlatform', () => {
  test('Linux x64 is linux-x86_64; Linux arm64 is linux-sbsa (a Jetson runner: linux-aarch64)', () => {
    expect(runnerPlatform('linux', 'x64')).toBe('linux-x86_64');
    expect(runnerPlatform('linux', 'arm64', () => false)).toBe('linux-sbsa');
    expect(runnerPlatform('linux', 'arm64', () => true)).toBe('linux-aarch64');
  });

  test.each([['darwin', 'arm64', 'macOS arm64'], ['win32', 'x64', 'Windows x64'], ['linux', 'ia32', 'Linux ia32'], ['freebsd', 'x64', 'freebsd x64']])(
    '%s %s fails at once, naming the runner and what to use', (os, arch, named) => {
      let error: unknown;
      try {
        runnerPlatform(os, arch);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CudaenvError);
      expect((error as CudaenvError).message).toBe(`cudaenv's action installs CUDA on Linux x86_64 and arm64 runners only; this runner is ${named}`);
      expect((error as CudaenvError).hint).toContain('runs-on: ubuntu-latest');
    });
});
