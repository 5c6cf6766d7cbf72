import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';

/**
 * Builds real shared libraries with gcc for the loader-model tests, and asks the real loader
 * (`ldd -r`, `python3 -c 'import ctypes'`) what it makes of them.
 */
export function haveCommand(cmd: string, args: string[] = ['--version']): boolean {
  const r = spawnSync(cmd, args, {stdio: 'ignore'});
  return r.status === 0;
}

export const HAVE_GCC = haveCommand('gcc');
export const HAVE_LDD = haveCommand('ldd');
/** gcc -m32 without multilib can still build a libc-free shared object. */
export const HAVE_M32 = HAVE_GCC && (() => {
  const r = spawnSync('sh', ['-c', 'echo "int f(void){return 0;}" | gcc -m32 -shared -nostdlib -x c -o /dev/null -'], {stdio: 'ignore'});
  return r.status === 0;
})();

export interface LibSpec {
  /** Output file (absolute). */
  out: string;
  /** C source. */
  source: string;
  soname?: string;
  /** Libraries to link against: absolute paths of .so files (their soname becomes DT_NEEDED). */
  link?: string[];
  /** DT_RPATH (`rpath`) or DT_RUNPATH (`runpath`) value, `$ORIGIN` kept literally. */
  rpath?: string;
  runpath?: string;
  /** A version script body. */
  versionScript?: string;
  m32?: boolean;
  nodeflib?: boolean;
  /** Build an executable instead of a shared object. */
  executable?: boolean;
  extra?: string[];
  /** Where gcc runs (relative library paths in `extra` are recorded as written). */
  cwd?: string;
}

export function buildLib(spec: LibSpec): string {
  mkdirSync(dirname(spec.out), {recursive: true});
  const src = `${spec.out}.c`;
  writeFileSync(src, spec.source);
  const args = spec.executable ? ['-o', spec.out, src] : ['-shared', '-fPIC', '-o', spec.out, src];
  if (spec.m32) args.push('-m32', '-nostdlib');
  if (spec.soname) args.push(`-Wl,-soname,${spec.soname}`);
  if (spec.versionScript) {
    const map = `${spec.out}.map`;
    writeFileSync(map, spec.versionScript);
    args.push(`-Wl,--version-script,${map}`);
  }
  if (spec.rpath !== undefined) args.push('-Wl,--disable-new-dtags', `-Wl,-rpath,${spec.rpath}`);
  if (spec.runpath !== undefined) args.push('-Wl,--enable-new-dtags', `-Wl,-rpath,${spec.runpath}`);
  if (spec.nodeflib) args.push('-Wl,-z,nodefaultlib');
  for (const lib of spec.link ?? []) args.push(lib);
  args.push(...(spec.extra ?? []));
  const r = spawnSync('gcc', args, {encoding: 'utf8', cwd: spec.cwd});
  if (r.status !== 0) throw new Error(`gcc ${args.join(' ')} failed:\n${r.stderr}`);
  return spec.out;
}

export interface LoaderVerdict {
  /** "name => path" (or "name => not found") lines, without the vDSO and ld.so. */
  libs: string[];
  /** "VERSION required-by-object" */
  versions: string[];
  /** "symbol@version object" ("symbol@" when unversioned) */
  symbols: string[];
  raw: string;
}

/** What `ldd -r` says about `path` with this LD_LIBRARY_PATH (undefined: unset). */
export function lddVerdict(path: string, ldLibraryPath?: string, cwd?: string, extraEnv: NodeJS.ProcessEnv = {}): LoaderVerdict {
  const env: NodeJS.ProcessEnv = {...process.env};
  delete env.LD_LIBRARY_PATH;
  delete env.LD_PRELOAD;
  Object.assign(env, extraEnv);
  if (ldLibraryPath !== undefined) env.LD_LIBRARY_PATH = ldLibraryPath;
  const r = spawnSync('ldd', ['-r', path], {encoding: 'utf8', env, cwd});
  const raw = `${r.stdout}\n${r.stderr}`;
  const libs = new Set<string>();
  const versions = new Set<string>();
  const symbols = new Set<string>();
  const preloads = new Set((extraEnv.LD_PRELOAD ?? '').split(/[ :]/).filter(Boolean));
  for (const line of raw.split('\n')) {
    let m = /^\t(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$/.exec(line);
    if (m) {
      if (m[1].startsWith('ld-linux') || m[1] === 'linux-vdso.so.1') continue;
      libs.add(`${m[1]} => ${m[2]}`);
      continue;
    }
    // "\tNAME (0x...)": name and path are the same string (a cwd-relative find, a preload by path).
    m = /^\t(\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (m) {
      if (!m[1].includes('ld-linux') && m[1] !== 'linux-vdso.so.1' && !preloads.has(m[1])) libs.add(`${m[1]} => ${m[1]}`);
      continue;
    }
    m = /version `([^']+)' not found \(required by (.+)\)$/.exec(line);
    if (m) {
      versions.add(`${m[1]} ${m[2]}`);
      continue;
    }
    m = /^undefined symbol: ([^,\t]+)(?:, version (\S+))?\t\((.+)\)$/.exec(line);
    if (m) symbols.add(`${m[1]}@${m[2] ?? ''} ${m[3]}`);
  }
  return {libs: [...libs].sort(), versions: [...versions].sort(), symbols: [...symbols].sort(), raw};
}

/** dlopen with RTLD_NOW through python's ctypes: null when it loads, else the loader's message. */
export function ctypesLoad(path: string, ldLibraryPath?: string): string | null {
  const env: NodeJS.ProcessEnv = {...process.env};
  delete env.LD_LIBRARY_PATH;
  if (ldLibraryPath !== undefined) env.LD_LIBRARY_PATH = ldLibraryPath;
  const r = spawnSync('python3', ['-c', 'import ctypes, sys\ntry:\n  ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n  print(e); sys.exit(3)', path], {encoding: 'utf8', env});
  if (r.status === 0) return null;
  return (r.stdout + r.stderr).trim();
}

export const HAVE_PYTHON = haveCommand('python3');

export function write(path: string, text: string): string {
  mkdirSync(dirname(path), {recursive: true});
  writeFileSync(path, text);
  return path;
}

export {join};

/**
 * ldd (trace mode) prints a reference to a library it could not find with or without its version,
 * depending on vna_other indexes (dl-version.c sizes l_versions from the found providers only).
 * A real process stops at the missing library first, so compare those references without versions.
 */
export function withoutMissingVersions(symbols: string[], missingRefs: Set<string>): string[] {
  return [...new Set(symbols.map((line) => {
    const m = /^([^@]+)@\S* (.+)$/.exec(line);
    return m && missingRefs.has(`${m[1]} ${m[2]}`) ? `${m[1]}@ ${m[2]}` : line;
  }))].sort();
}

/**
 * A program that dlopens argv[1] with RTLD_NOW | RTLD_GLOBAL, as a plugin host does, and prints
 * "OK" or "ERR <dlerror()>" (exit 3): the real loader's verdict on the --exe model.
 */
export function buildDlopenDriver(path: string): string {
  mkdirSync(dirname(path), {recursive: true});
  writeFileSync(`${path}.c`, '#include <dlfcn.h>\n#include <stdio.h>\nint main(int c, char **v) {\n  void *h = dlopen(v[1], RTLD_NOW | RTLD_GLOBAL);\n' +
    '  if (!h) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n');
  const cc = spawnSync('gcc', ['-o', path, `${path}.c`], {encoding: 'utf8'});
  if (cc.status !== 0) throw new Error(`cannot build the dlopen driver: ${cc.stderr}`);
  return path;
}

/**
 * The same driver for glibc releases older than the host's: every symbol it uses is bound to its
 * GLIBC_2.2.5 version (the host's crt1.o and dlopen would need GLIBC_2.34), it has a _start of
 * its own, and it needs libdl.so.2, where dlopen lives before 2.34.
 */
export function buildPortableDlopenDriver(path: string, options: {execStack?: boolean} = {}): string {
  mkdirSync(dirname(path), {recursive: true});
  const symvers = ['dlopen', 'dlerror', 'printf', 'puts', '__libc_start_main'].map((f) => `__asm__(".symver ${f},${f}@GLIBC_2.2.5");\n`).join('');
  // The x86-64 ABI entry (glibc's start.S): argc, argv and rtld_fini (%rdx) to __libc_start_main.
  const start = ['xor %ebp, %ebp', 'mov %rdx, %r9', 'pop %rsi', 'mov %rsp, %rdx', 'and $-16, %rsp', 'push %rax', 'push %rsp',
    'xor %r8d, %r8d', 'xor %ecx, %ecx', 'lea main(%rip), %rdi', 'call *__libc_start_main@GOTPCREL(%rip)', 'hlt'].map((i) => `\\t${i}\\n`).join('');
  writeFileSync(`${path}.c`, 'extern void *dlopen(const char *, int);\nextern char *dlerror(void);\nextern int printf(const char *, ...);\n' + symvers +
    'int main(int c, char **v) {\n  void *h = dlopen(v[1], 0x2 | 0x100);\n  if (!h) { printf("ERR %s\\n", dlerror()); return 3; }\n  printf("OK\\n");\n  return 0;\n}\n' +
    `__asm__(".text\\n.globl _start\\n.type _start,@function\\n_start:\\n${start}");\n`);
  const cc = spawnSync('gcc', ['-O', '-fno-stack-protector', '-nostartfiles', ...(options.execStack ? ['-z', 'execstack'] : []), '-o', path, `${path}.c`,
    '-Wl,--no-as-needed', '/lib/x86_64-linux-gnu/libdl.so.2'], {encoding: 'utf8'});
  if (cc.status !== 0) throw new Error(`cannot build the portable dlopen driver: ${cc.stderr}`);
  return path;
}
