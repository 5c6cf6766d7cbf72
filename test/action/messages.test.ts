import {describe, expect, test} from '@jest/globals';
import {inActionTerms} from '../../src/action/messages.js';

describe('inActionTerms', () => {
  test.each([
    ['Check the network connection and the mirror (--mirror, CUDAENV_MIRROR).', 'Check the network connection and the mirror (the mirror input).'],
    ['Check --mirror / CUDAENV_MIRROR.', 'Check the mirror input.'],
    ['Try again later, or use another mirror (--mirror).', 'Try again later, or use another mirror (the mirror input).'],
    ['check the cuDNN mirror (setting cudnnMirror, CUDAENV_CUDNN_MIRROR).', 'check the cuDNN mirror (the cudnn-mirror input).'],
    ['Releases looked at: 9.1.0. Try another --cudnn spec.', 'Releases looked at: 9.1.0. Try another cudnn input.'],
    ['Example: --components cuda_nvcc,cuda_cudart', 'Example: components: cuda_nvcc,cuda_cudart'],
    ['Install the components separately (--components) or report the conflict.', 'Install the components separately (the components input) or report the conflict.'],
    ['the mirror http://127.0.0.1:8/ offers no CUDA release matching 11.2', 'the mirror http://127.0.0.1:8/ offers no CUDA release matching 11.2'],
  ])('%s', (from, to) => {
    expect(inActionTerms(from)).toBe(to);
  });
});
