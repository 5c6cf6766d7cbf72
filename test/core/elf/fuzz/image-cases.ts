import {dirname, join} from 'node:path';
import type {FuzzCase} from './generate.js';
import {inImage, inImageName, q} from './images.js';
import {runScript} from './run-script.js';
import {caseDisagreements, parseTrace, withoutPreloadWarnings, type Real, type RealDlopen} from './trace.js';

/**
 * The seeded fuzz cases run in a system image (loader-glibc-releases, loader-aarch64): each asked
 * of the image's ld.so in `ldd -r`'s trace mode and of a dlopen(RTLD_NOW | RTLD_GLOBAL) driver
 * there, and of the model (`check` and `check --exe`) with CUDAENV_SYSROOT set to the image.
 */

/**
 * Every third case asks for the original sorter (loaders without the tunable ignore it, so must the
 * model), every fifth forbids executable stacks (glibc.rtld.execstack=0, from 2.41; older releases
 * ignore it): then the fuzz objects that ask for an executable stack stop the run.
 */
export const imageTunables = (c: FuzzCase): string | undefined =>
  [c.seed % 3 === 0 ? 'glibc.rtld.dynamic_sort=1' : null, c.seed % 5 === 1 ? 'glibc.rtld.execstack=0' : null].filter((t) => t !== null).join(':') || undefined;

export interface ImageRun {
  /** The static chroot helper (images.ts buildRunin). */
  runin: string;
  root: string;
  /** The image's loader, as its programs name it (PT_INTERP). */
  interp: string;
  /** The dlopen driver inside the image (its host path names it there too). */
  driver: string;
  /** A qemu-user binary inside the image through which its programs run (another machine's image). */
  emulator?: string;
  /** Where the scripts are written. */
  scratch: string;
}

/** What the image's loader said about each case: its trace (and LD_DEBUG=files of it), and the driver's dlopen. */
export async function askInImage(run: ImageRun, cases: FuzzCase[]): Promise<{real: Map<number, Real>; dlopen: Map<number, RealDlopen>; files: Map<number, string>}> {
  const ask = (c: FuzzCase) => {
    const env: string[] = [];
    if (c.ldLibraryPath !== undefined) env.push(`LD_LIBRARY_PATH=${c.ldLibraryPath}`);
    if (imageTunables(c) !== undefined) env.push(`GLIBC_TUNABLES=${imageTunables(c)}`);
    if (c.preload !== undefined) env.push(`LD_PRELOAD=${c.preload}`);
    const trace = ['LD_TRACE_LOADED_OBJECTS=1', 'LD_WARN=yes', 'LD_BIND_NOW=yes', ...env];
    // The case's directory is the working directory (relative RPATH and LD_LIBRARY_PATH entries).
    const prefix = run.emulator ? [run.emulator] : [];
    const sh = (vars: string[], argv: string[]) => `${q(run.runin)} ${q(run.root)} ${q(c.dir)} ${vars.map(q).join(' ')} -- ${[...prefix, ...argv].map(q).join(' ')} 2>&1`;
    // What it mapped, from LD_DEBUG=files, to a file of its own beside the case (a path the image
    // and the host share), so that the trace output stays as ldd's.
    const debug = join(dirname(c.dir), `files-${c.seed}`);
    return `echo "@@T ${c.seed}"\n${sh([...trace, 'LD_DEBUG=files', `LD_DEBUG_OUTPUT=${debug}`], [run.interp, c.target])}\necho "@@TRC $?"\n` +
      `echo "@@F"\ncat ${q(debug)}.* 2>/dev/null\nrm -f ${q(debug)}.*\n` +
      `echo "@@D ${c.seed}"\n${sh(env, [run.driver, c.target])}\necho "@@RC $?"\n`;
  };
  const asked = await runScript(run.scratch, cases.map(ask).join(''));
  const real = new Map<number, Real>();
  const dlopen = new Map<number, RealDlopen>();
  const files = new Map<number, string>();
  for (const chunk of asked.out.split(/^@@T /m).slice(1)) {
    const seed = Number(chunk.slice(0, chunk.indexOf('\n')));
    const c = cases.find((x) => x.seed === seed)!;
    const [traced, dl] = chunk.slice(chunk.indexOf('\n') + 1).split(/^@@D \d+\n/m);
    const [trace, debug] = traced.split(/^@@F\n/m);
    real.set(seed, parseTrace(c.dir, trace, inImage(run.root), inImageName(run.root)));
    files.set(seed, debug ?? '');
    const rc = Number(/@@RC (\d+)/.exec(dl)?.[1] ?? -1);
    const message = withoutPreloadWarnings(dl.replace(/@@RC \d+\n?/, ''));
    const abort = /Inconsistency detected by ld\.so: [^:]+: \d+: (\w+): Assertion/.exec(message)?.[1] ?? null;
    dlopen.set(seed, {ok: rc === 0 && /^OK$/m.test(message), abort, message});
  }
  return {real, dlopen, files};
}

/** Every case where the model disagrees with what the image's loader said, described with its replay. */
export async function disagreementsInImage(
  image: {root: string; driver: string}, cases: FuzzCase[], real: Map<number, Real>, dlopen: Map<number, RealDlopen>, files?: Map<number, string>,
): Promise<string[]> {
  const failures: string[] = [];
  for (const c of cases) {
    const r = real.get(c.seed);
    const d = dlopen.get(c.seed);
    if (!r || !d) {
      failures.push(`seed ${c.seed}: the loader was not asked`);
      continue;
    }
    const opts = {targets: [c.target], ldLibraryPath: c.ldLibraryPath, cwd: c.dir, glibcTunables: imageTunables(c), sysroot: image.root, preload: c.preload === undefined ? undefined : [c.preload]};
    const diffs = await caseDisagreements(opts, r, d, files?.get(c.seed), image.driver, c.dir, inImage(image.root), inImageName(image.root));
    if (diffs.length > 0) {
      failures.push(`seed ${c.seed} (replay: CUDAENV_FUZZ_SEED=${c.seed} CUDAENV_FUZZ_CASES=1)${imageTunables(c) ? `, GLIBC_TUNABLES=${imageTunables(c)}` : ''}:\n${c.description.join('\n')}\n${diffs.join('\n')}\n--- ld.so trace output:\n${r.raw.trim()}\n--- dlopen:\n${d.message.trim()}`);
    }
  }
  return failures;
}

/**
 * Libraries the loader took from a subdirectory matching `sub` that it probes below a search
 * directory (not from an LD_LIBRARY_PATH entry that names such a subdirectory itself, nor an LD_PRELOAD path).
 */
export function probedIn(root: string, cases: FuzzCase[], real: Map<number, Real>, sub: RegExp): string[] {
  return cases.flatMap((c) => {
    const entries = new Set((c.ldLibraryPath ?? '').split(/[:;]/).map((e) => (e.startsWith('/') ? e : join(c.dir, e))));
    const preloaded = c.preload?.startsWith('/') ? inImage(root)(c.dir, c.preload) : null;
    return [...real.get(c.seed)!.libs].filter((p) => sub.test(p) && !entries.has(dirname(p)) && p !== preloaded);
  });
}
