// What CI must cover. When CI is set (CI=true, as .ci/run and CI services set it), every skipped
// test fails the run unless its reason (the "[skipped: ...]" that test/helpers/skip.ts puts in the
// name) matches one of these patterns. A skip with no reason never matches. So root, mount
// namespaces, ptrace, the cross binutils, gcc -m32, every shell, Lmod and the real CUDA libraries
// are all required in CI: .ci/run installs and checks them. Add to this list only what CI cannot
// have, with why.
'use strict';

const ALLOWED_IN_CI = [
  // NVIDIA's toolkit under /usr/local exists on developer machines with a GPU, not in CI.
  {pattern: /^optional: no real CUDA toolkit at /, why: 'a real NVIDIA toolkit is not part of CI'},
  // cuBLASLt and PyTorch's libtorch_cuda (660 MB of downloads, 1.6 GB unpacked) for the device-code
  // oracle's largest files (issue 33); CI compares cuBLAS, cuFFT, NCCL and cuSPARSE already.
  {pattern: /^optional: the large CUDA libraries are not fetched/, why: 'CI keeps to the smaller real libraries to stay within its time'},
  // Debian trixie's PyTorch 2.6 with CUDA 12.4.1 as a system image (bench/fetch-torch.sh: 259
  // packages, 6.8 GB unpacked, its libtorch_cuda alone 1.2 GB): the run-time loads of libtorch_cuda,
  // libc10_cuda and libcublasLt are read from it (issue 43), and a chroot of it is the real run.
  // CI covers the same readers on the fixtures' libcudart, libcublas and libnccl.
  {pattern: /^optional: the PyTorch image is not fetched/, why: 'the 6.8 GB PyTorch image is a benchmark fixture, never fetched in CI'},
  // Releases no current Debian release carries (glibc 2.39 and 2.27, fish 3.3, bash 4.3, zsh 5.4.2
  // and 5.1.1, cuobjdump 13.1) come only from Ubuntu's archive, fetched only where
  // CUDAENV_UBUNTU_MIRROR names it (test/fixtures/fetch-cuda-libs.sh): CI uses Debian's archive
  // alone. Where the variable is set, the reason is not optional and the skip fails CI.
  {pattern: /^optional: another distribution's archive is not named/, why: 'CI fetches from the Debian archive its own apt uses, and names no other'},
];

/** True when the run is CI's (strict about skips). CI=false or CI=0 turns it off. */
function isCi(env = process.env) {
  const v = (env.CI ?? '').trim().toLowerCase();
  return v !== '' && v !== 'false' && v !== '0';
}

/** The reason skip.ts put in a skipped test's name (or one of its describe blocks), or null. */
function skipReason(titles) {
  for (const t of [...titles].reverse()) {
    const m = /\[skipped: (.*)\]$/.exec(t);
    if (m) return m[1];
  }
  return null;
}

function allowedInCi(reason) {
  return reason !== null && ALLOWED_IN_CI.some((a) => a.pattern.test(reason));
}

module.exports = {ALLOWED_IN_CI, isCi, skipReason, allowedInCi};
