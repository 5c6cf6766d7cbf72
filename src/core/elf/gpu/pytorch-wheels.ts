/**
 * The GPU architectures PyTorch's own CUDA wheels carry, per index (download.pytorch.org/whl/cuXXX),
 * with the releases that index served. Sources: pytorch/pytorch `.ci/manywheel/build_cuda.sh`
 * (TORCH_CUDA_ARCH_LIST per CUDA version: 12.6 "5.0;6.0;7.0;7.5;8.0;8.6;9.0", 12.8
 * "7.0;7.5;8.0;8.6;9.0;10.0;12.0", 12.9 the same with "12.0+PTX"), and for the older and newer
 * indexes the same script's history (git log -p of that file in pytorch/pytorch)
 * (11.8 added 3.7, CUDA 13.0 drops everything below 7.5). `ptx` is the architecture the wheel also
 * carries PTX for (JIT-compiled on newer GPUs), if any. SASS for X.Y runs on X.Z, Z >= Y.
 */
export interface PytorchIndex {
  index: string;
  cuda: string;
  sass: readonly string[];
  ptx: string | null;
  /** The torch releases published there, "2.7" onwards or a range. */
  torch: string;
}

export const PYTORCH_INDEXES: readonly PytorchIndex[] = [
  {index: 'cu118', cuda: '11.8', sass: ['3.7', '5.0', '6.0', '7.0', '7.5', '8.0', '8.6', '9.0'], ptx: null, torch: '2.0-2.7'},
  {index: 'cu121', cuda: '12.1', sass: ['5.0', '6.0', '7.0', '7.5', '8.0', '8.6', '9.0'], ptx: null, torch: '2.1-2.5'},
  {index: 'cu124', cuda: '12.4', sass: ['5.0', '6.0', '7.0', '7.5', '8.0', '8.6', '9.0'], ptx: null, torch: '2.4-2.6'},
  {index: 'cu126', cuda: '12.6', sass: ['5.0', '6.0', '7.0', '7.5', '8.0', '8.6', '9.0'], ptx: null, torch: '2.6 and later'},
  {index: 'cu128', cuda: '12.8', sass: ['7.0', '7.5', '8.0', '8.6', '9.0', '10.0', '12.0'], ptx: null, torch: '2.7 and later'},
  {index: 'cu129', cuda: '12.9', sass: ['7.0', '7.5', '8.0', '8.6', '9.0', '10.0', '12.0'], ptx: '12.0', torch: '2.8 and later'},
  {index: 'cu130', cuda: '13.0', sass: ['7.5', '8.0', '8.6', '9.0', '10.0', '12.0'], ptx: '12.0', torch: '2.9 and later'},
];

/** Whether SASS built for `built` runs on a GPU of compute capability `gpu` (same major, minor at most the GPU's). */
function sassRuns(built: string, gpu: string): boolean {
  const [bm, bn] = built.split('.').map(Number);
  const [gm, gn] = gpu.split('.').map(Number);
  return bm === gm && bn! <= gn!;
}

function atLeast(a: string, b: string): boolean {
  const [am, an] = a.split('.').map(Number);
  const [bm, bn] = b.split('.').map(Number);
  return am! > bm! || (am === bm && an! >= bn!);
}

/** The PyTorch indexes whose wheels run on this GPU (SASS for it, or PTX the GPU can JIT), newest first. */
export function pytorchIndexesFor(gpu: string): PytorchIndex[] {
  return PYTORCH_INDEXES.filter((p) => p.sass.some((s) => sassRuns(s, gpu)) || (p.ptx !== null && atLeast(gpu, p.ptx))).reverse();
}

/** The pip command for a PyTorch build from `index`. */
export function pytorchInstall(index: PytorchIndex): string {
  return `pip install torch --index-url https://download.pytorch.org/whl/${index.index}`;
}
