import {closeSync, existsSync, openSync, readdirSync, readSync} from 'node:fs';
import {join} from 'node:path';
import type {DriverFact} from './driver.js';
import {driverSupport, parseToolkit} from '../versions/driver-table.js';
import {describeToolkit, describeToolkitDir, nvccToolkitRoot, toolkitOfNvcc, type ToolkitDir} from './toolkit.js';
import {sysPath, sysRealpath} from './sysroot.js';
import {firstOnPath} from '../system/python-env.js';
import {quoteSh} from '../text/quote.js';
import type {DoctorContext, Finding} from './types.js';

export interface TorchFact {
  /** torch/version.py that was read. */
  file: string;
  version: string | null;
  /** MAJOR.MINOR the wheel was built for; null for a CPU (or ROCm) build. */
  cuda: string | null;
  hip: string | null;
  /**
   * Where its CUDA libraries come from: pip's nvidia-* wheels beside it (site-packages/nvidia),
   * its own torch/lib (older wheels bundled them), or the system (a distribution's build, such as
   * Debian's python3-torch-cuda, whose torch/lib links to libraries of system packages).
   */
  libraries?: 'wheels' | 'bundled' | 'system';
}

/** TorchFact.libraries for a torch in `sitePackages`. */
function torchLibraries(sitePackages: string): NonNullable<TorchFact['libraries']> {
  if (existsSync(join(sitePackages, 'nvidia'))) return 'wheels';
  try {
    if (readdirSync(join(sitePackages, 'torch', 'lib')).some((n) => /^libcudart[.-]/.test(n))) return 'bundled';
  } catch {
    // no torch/lib
  }
  return 'system';
}

/** Where a CUDA build of torch takes its CUDA libraries from, in words. */
export function torchLibrariesWords(torch: TorchFact): string {
  return torch.libraries === 'system' ? 'the system\'s CUDA libraries (a distribution\'s build: they come from system packages, found through ld.so.cache)'
    : torch.libraries === 'bundled' ? 'the CUDA libraries in its torch/lib'
    : 'its pip CUDA libraries';
}

/**
 * torch/version.py, read as text (importing torch would load its CUDA libraries, which is
 * what may be broken). tools/generate_torch_version.py writes `cuda: Optional[str] = '12.4'`
 * (older releases `cuda = '11.8'`), `None` for CPU builds.
 */
export function parseTorchVersionPy(text: string): Omit<TorchFact, 'file'> {
  const value = (name: string): string | null => {
    const m = new RegExp(`^${name}\\s*(?::[^=\\n]*)?=\\s*(?:'([^'\\n]*)'|"([^"\\n]*)"|None)\\s*(?:#.*)?$`, 'm').exec(text);
    if (!m) return null;
    return m[1] ?? m[2] ?? null;
  };
  const cuda = value('cuda');
  return {
    version: value('__version__'),
    cuda: cuda && /^\d+\.\d+(\.\d+)?$/.test(cuda) ? cuda : null,
    hip: value('hip'),
  };
}

function readHead(path: string, max = 64 * 1024): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, 0);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** The first torch in sys.path order, as Python would import it. */
export function findTorch(sitePackages: string[]): TorchFact | undefined {
  for (const sp of sitePackages) {
    const file = join(sp, 'torch', 'version.py');
    const text = readHead(file);
    if (text !== undefined) return {file, ...parseTorchVersionPy(text), libraries: torchLibraries(sp)};
  }
  return undefined;
}

/**
 * The toolkit torch.utils.cpp_extension builds with (its `_find_cuda_home`): CUDA_HOME,
 * else CUDA_PATH, else the parent of `which nvcc`'s directory, else /usr/local/cuda.
 */
export function cppExtensionToolkit(ctx: DoctorContext): (ToolkitDir & {how: string}) | undefined {
  for (const key of ['CUDA_HOME', 'CUDA_PATH'] as const) {
    const value = ctx.env[key];
    if (value) return {...describeToolkitDir(ctx, value), how: `${key}=${value}`};
  }
  const nvcc = firstOnPath(['nvcc'], ctx.env.PATH);
  if (nvcc) {
    const root = describeToolkitDir(ctx, nvccToolkitRoot(nvcc));
    const how = `parent of \`which nvcc\` (${nvcc})`;
    // CUDA_HOME becomes /usr/local for a /usr/local/bin/nvcc wrapper or link, but cpp_extension checks and
    // runs $CUDA_HOME/bin/nvcc, i.e. the toolkit that nvcc hands over to: its version is the one compared.
    if (root.version || !root.real) return {...root, how};
    const ran = toolkitOfNvcc(ctx, nvcc);
    return ran.version ? {...root, version: ran.version, versionSource: ran.versionSource, how: `${how}, which runs ${ran.real ?? ran.dir}'s nvcc`} : {...root, how};
  }
  const usr = describeToolkitDir(ctx, '/usr/local/cuda', true);
  if (usr.real) return {...usr, dir: sysPath(ctx, '/usr/local/cuda'), how: '/usr/local/cuda'};
  return undefined;
}

export function torchFindings(ctx: DoctorContext, torch: TorchFact | undefined, driver: DriverFact | undefined, cudaenvLabel: string | null): Finding[] {
  if (!torch) return [];
  const findings: Finding[] = [];
  const name = `torch ${torch.version ?? '(unknown version)'}`;
  if (!torch.cuda) {
    findings.push({
      id: 'pytorch.cpu-build',
      severity: 'info',
      title: torch.hip ? `${name} is a ROCm (HIP ${torch.hip}) build: it does not use CUDA` : `${name} is a CPU-only build: it cannot use the GPU`,
      evidence: [`${torch.file}: cuda = None`],
      fix: torch.hip ? null : 'For GPU support install a CUDA build, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu124',
    });
    return findings;
  }
  const built = parseToolkit(torch.cuda)!;
  if (driver) {
    const support = driverSupport(driver.version, torch.cuda);
    if (support.kind === 'too-old') {
      findings.push({
        id: 'pytorch.driver-too-old',
        severity: 'error',
        title: `${name} is built for CUDA ${torch.cuda}, which needs driver >= ${support.floor ?? support.required.driver}; this machine has ${driver.version}`,
        evidence: [torch.file, `driver ${driver.version} (${driver.evidence})`],
        fix: `Upgrade the driver, or install a torch build for an older CUDA (pip install torch --index-url https://download.pytorch.org/whl/cuXYZ)`,
      });
    }
  }
  const tk = cppExtensionToolkit(ctx);
  if (!tk?.real) {
    findings.push({
      id: 'pytorch.no-toolkit',
      severity: 'info',
      title: `${name} (CUDA ${torch.cuda}) runs on ${torchLibrariesWords(torch)}; building CUDA extensions needs a toolkit and none is found`,
      evidence: [tk ? `${tk.how}: ${tk.dir} does not exist` : 'no CUDA_HOME, CUDA_PATH, nvcc on PATH or /usr/local/cuda'],
      fix: `cudaenv install ${torch.cuda} && cudaenv use ${torch.cuda}`,
    });
    return findings;
  }
  const shimStore = ctx.paths.root;
  if (!ctx.env.CUDA_HOME && !ctx.env.CUDA_PATH && tk.real === sysPathReal(shimStore)) {
    findings.push({
      id: 'pytorch.shim-cuda-home',
      severity: 'warning',
      title: 'torch.utils.cpp_extension takes CUDA_HOME from nvcc\'s location, which is the cudaenv shim directory: it will look for nvcc in the store root and fail',
      evidence: [tk.how],
      fix: cudaenvLabel ? `cudaenv use ${cudaenvLabel} (sets CUDA_HOME), or export CUDA_HOME=${quoteSh(join(ctx.paths.versions, cudaenvLabel))}` : 'Set CUDA_HOME to a toolkit directory',
    });
    return findings;
  }
  const tkv = tk.version ? parseToolkit(tk.version) : undefined;
  const evidence = [`${torch.file}: cuda = '${torch.cuda}'`, `torch.utils.cpp_extension uses ${describeToolkit(tk)} (${tk.how})`];
  if (!tkv) {
    findings.push({id: 'pytorch.toolkit-version-unknown', severity: 'info', title: `The version of the toolkit torch would build extensions with cannot be told`, evidence, fix: null});
    return findings;
  }
  const fix = `cudaenv use ${torch.cuda} (install it first with \`cudaenv install ${torch.cuda}\` if needed)`;
  if (tkv.major !== built.major) {
    findings.push({
      id: 'pytorch.toolkit-major-mismatch',
      severity: 'error',
      title: `${name} is built for CUDA ${torch.cuda} but extensions would build with CUDA ${tk.version}: torch.utils.cpp_extension refuses a different major version`,
      evidence,
      fix,
    });
  } else if (tkv.minor !== built.minor) {
    findings.push({
      id: 'pytorch.toolkit-minor-mismatch',
      severity: 'warning',
      title: `${name} is built for CUDA ${torch.cuda} but extensions would build with CUDA ${tk.version} (same major: torch.utils.cpp_extension warns, builds usually work)`,
      evidence,
      fix,
    });
  }
  return findings;
}

function sysPathReal(path: string): string | undefined {
  return sysRealpath({sysroot: ''}, path);
}
