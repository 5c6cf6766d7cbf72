import {chmodSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

export interface FakeToolkitOptions {
  /** Release label written to version.json (omit for none). */
  version?: string;
  /** What bin/nvcc --version reports, as MAJOR.MINOR.BUILD (default from version). */
  nvccVersion?: string | null;
  /** Full libcudart version in the file name, e.g. 12.4.127 (default from version). */
  cudartVersion?: string | null;
  /** Extra programs in bin/ that print their name and arguments. */
  programs?: string[];
}

/**
 * A toolkit laid out like NVIDIA's: bin/nvcc printing a real-looking --version,
 * lib64/libcudart.so.X.Y.Z with its link chain, include/cuda_runtime_api.h, version.json.
 */
export function makeFakeToolkit(dir: string, options: FakeToolkitOptions = {}): string {
  const version = options.version;
  const [maj, min] = (version ?? options.nvccVersion ?? options.cudartVersion ?? '12.4.1').split('.');
  mkdirSync(join(dir, 'bin'), {recursive: true});
  mkdirSync(join(dir, 'lib64'), {recursive: true});
  mkdirSync(join(dir, 'include'), {recursive: true});
  if (version) writeFileSync(join(dir, 'version.json'), JSON.stringify({cuda: {name: 'CUDA SDK', version}, cuda_cudart: {name: 'CUDA Runtime (cudart)', version: `${maj}.${min}.127`}}, null, 2));
  const nvccVersion = options.nvccVersion === undefined ? `${maj}.${min}.131` : options.nvccVersion;
  if (nvccVersion) {
    const [a, b] = nvccVersion.split('.');
    writeExecutable(join(dir, 'bin', 'nvcc'), `#!/bin/sh
if [ "$1" = "--version" ]; then
cat <<'OUT'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release ${a}.${b}, V${nvccVersion}
Build cuda_${a}.${b}.r${a}.${b}/compiler.34097967_0
OUT
exit 0
fi
echo "nvcc ${nvccVersion} from $0 $*"
`);
  }
  for (const program of options.programs ?? []) {
    writeExecutable(join(dir, 'bin', program), `#!/bin/sh\necho "${program} from $0 $*"\n`);
  }
  const cudart = options.cudartVersion === undefined ? `${maj}.${min}.127` : options.cudartVersion;
  if (cudart) {
    const major = cudart.split('.')[0];
    writeFileSync(join(dir, 'lib64', `libcudart.so.${cudart}`), 'not a real library\n');
    symlinkSync(`libcudart.so.${cudart}`, join(dir, 'lib64', `libcudart.so.${major}`));
    symlinkSync(`libcudart.so.${major}`, join(dir, 'lib64', 'libcudart.so'));
  }
  writeFileSync(join(dir, 'include', 'cuda_runtime_api.h'), `#define CUDART_VERSION ${Number(maj) * 1000 + Number(min) * 10}\n`);
  return dir;
}

function writeExecutable(path: string, text: string): void {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}
