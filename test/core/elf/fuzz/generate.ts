import {copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {rng} from '../../../helpers/rng.js';

export {rng};

/**
 * Random library graphs for the differential fuzzer (issue 12): 2-6 objects built with `as` and
 * `ld` (no libc: a few ms each), placed in search directories, hwcaps subdirectories and the
 * current directory, some shadowed by copies with other version nodes, reached through
 * RPATH/RUNPATH ($ORIGIN, relative, empty elements), LD_LIBRARY_PATH (':' and ';', empty
 * entries), slash DT_NEEDED names, NODEFLIB, missing names, objects that ask for an executable
 * stack, objects linked with -z now, initial-exec thread-local blocks, files that are no library
 * under a library's name, and LD_PRELOAD. Everything is derived from the seed.
 */

type Variant = 'full' | 'old' | 'unversioned' | 'nosym';
const DIRS = ['d0', 'd1', 'd2', 'd3'];

/**
 * What differs between the machines the cases are built for: the assembler's syntax, the binutils
 * to run, the subdirectories a library may be placed in below a search directory (the glibc-hwcaps
 * levels and legacy directories the loaders search, and some they do not), and a system library to
 * need (zlib, for DF_1_NODEFLIB). On aarch64 there are no glibc-hwcaps levels; its legacy
 * directories are tls/ and aarch64/ (up to 2.36; the CPU's atomics/ is left out: a model of an image
 * of another machine cannot know the CPU).
 */
export interface Machine {
  name: 'x86_64' | 'aarch64';
  as: string;
  ld: string;
  subs: readonly string[];
  zlib: string;
  call(sym: string): string;
  got(sym: string): string;
  initialExec(sym: string): string;
  /** The assembler's type marker prefix ('@' on x86, '%' on aarch64). */
  mark: '@' | '%';
}

export const X86_64: Machine = {
  name: 'x86_64', as: 'as', ld: 'ld', zlib: '/lib/x86_64-linux-gnu/libz.so.1', mark: '@',
  subs: ['', '', '', 'glibc-hwcaps/x86-64-v2', 'glibc-hwcaps/x86-64-v3', 'glibc-hwcaps/x86-64-v4', 'tls', 'x86_64'],
  call: (sym) => `\tcall ${sym}@PLT\n`,
  got: (sym) => `\tmovq ${sym}@GOTPCREL(%rip), %rax\n`,
  initialExec: (sym) => `\tmovq ${sym}@GOTTPOFF(%rip), %rax\n`,
};

/** aarch64, built by the cross binutils; `zlib`: the image's libz.so.1 to link against. */
export function aarch64(zlib: string): Machine {
  return {
    name: 'aarch64', as: 'aarch64-linux-gnu-as', ld: 'aarch64-linux-gnu-ld', zlib, mark: '%',
    subs: ['', '', '', 'glibc-hwcaps/x86-64-v3', 'tls', 'aarch64', 'tls/aarch64', 'tls'],
    call: (sym) => `\tbl ${sym}\n`,
    got: (sym) => `\tadrp x0, :got:${sym}\n\tldr x0, [x0, #:got_lo12:${sym}]\n`,
    initialExec: (sym) => `\tadrp x0, :gottprel:${sym}\n\tldr x0, [x0, #:gottprel_lo12:${sym}]\n`,
  };
}

export interface FuzzCase {
  seed: number;
  dir: string;
  /** The path given to both the loader and the model (may hold `..` after a symlink). */
  target: string;
  ldLibraryPath: string | undefined;
  /** LD_PRELOAD: a copy by path, a name searched like a DT_NEEDED one, or a file that is not there. */
  preload: string | undefined;
  /** What was generated, for the failure message. */
  description: string[];
}

/**
 * Writes the sources of one case under `dir` and returns the shell commands that build it
 * (run from `dir`), so that many cases build in one shell, and `place`, to call once that script
 * has run: it copies the built libraries to where they lie at run time (and writes the junk file),
 * in this process rather than with a `cp` per copy (about ten per case, over a thousand processes
 * per 108 cases). A full variant is linked straight to link/libfzK.so.1, where the links of the
 * objects that need it find it, and copied from there.
 */
/** Objects whose PT_GNU_STACK is left out (an executable stack), about one in seven. */
const asksExecStack = (seed: number, k: number): boolean => (seed + 3 * k) % 7 === 0;
/** Objects linked with -z now (their PLT slots bound while a program starts), about one in five. */
const bindsNow = (seed: number, k: number): boolean => (seed + 2 * k) % 5 === 1;
/**
 * Objects with a thread-local block their code reaches with the initial-exec model (a TPOFF
 * relocation, DF_STATIC_TLS), about six in thirteen, sized so that a dlopen of one to three of
 * them may overflow the static TLS surplus (about 1.7 KB); now and then aligned past the block's 64.
 */
const tlsBlock = (seed: number, k: number): {size: number; align: number} | null => {
  const h = (seed * 31 + k * 17) % 13;
  if (h >= 6) return null;
  return {size: [96, 400, 700, 900, 1100, 1650][h] + (seed % 5) * 8, align: h === 5 && seed % 3 === 0 ? 128 : h === 1 ? 64 : h === 4 ? 32 : 16};
};
/**
 * A file the loader cannot load under a library's name, about one case in nine: a text file (odd
 * seeds: "invalid ELF header") or an empty one ("file too short") named libfzK.so.1 in one of the
 * search directories, which stops the search there (and, in trace mode, the whole load).
 */
const junkFile = (seed: number, n: number): {k: number; dir: string; empty: boolean} | null =>
  (seed * 7 + 4) % 9 === 0 && n > 1 ? {k: 1 + (seed % (n - 1)), dir: DIRS[Math.floor(seed / 9) % DIRS.length], empty: seed % 2 === 0} : null;
/** An object that also reaches a dependency's thread-local variable with the initial-exec model (one need in three). */
const usesDependencyTls = (seed: number, k: number, j: number): boolean => (seed + k + 2 * j) % 3 === 0;

/**
 * `assembled`: the case's objects (var/*.o) are already there, copied from a build of the same seed
 * elsewhere (another image's copy of the case): `as` is not run again. The objects name no path (the
 * sources hold none, and `as` runs on relative names), so they are the ones `as` would make here;
 * everything that names the case's directory (the links: RPATH, slash DT_NEEDED names) is still made here.
 */
export function generateCase(seed: number, dir: string, m: Machine = X86_64, options: {assembled?: boolean} = {}): {fuzz: FuzzCase; script: string; place: () => void} {
  const assemble = (o: string, s: string): string[] => (options.assembled ? [] : [`${m.as} -o ${o} ${s}`]);
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const chance = (p: number) => r() < p;
  const n = 2 + Math.floor(r() * 5);
  const desc: string[] = [];
  const cmds: string[] = [];
  mkdirSync(join(dir, 'build', '$ORIGIN'), {recursive: true});
  for (const d of [...DIRS, 'top/inner', 'link', 'var']) mkdirSync(join(dir, d), {recursive: true});
  for (const d of DIRS) mkdirSync(join(dir, 'build', d), {recursive: true});
  // A copy of another image's case (options.assembled) already has it.
  rmSync(join(dir, 'sl'), {force: true});
  symlinkSync('top/inner', join(dir, 'sl'));

  const searchEntry = (): string => pick(['$ORIGIN/../d0', '$ORIGIN/../d1', `${dir}/d2`, `${dir}/d3`, '$ORIGIN', 'd1', '', `${dir}/d0`, '$ORIGIN/../../d2']);
  interface Need {to: number; form: 'name' | 'origin-slash' | 'abs'}
  const objs = Array.from({length: n}, (_, k) => ({
    k,
    needs: [] as Need[],
    extra: [] as string[],
    rpath: null as string | null,
    runpath: null as string | null,
    nodeflib: false,
    versioned: k === 0 ? false : chance(0.75),
    refs: [] as string[],
    gotRefs: [] as string[],
    dashU: [] as string[],
  }));
  for (const o of objs) {
    for (let j = o.k + 1; j < n; j++) {
      if (j === o.k + 1 || chance(0.35)) {
        const form = chance(0.12) ? 'origin-slash' : chance(0.08) ? 'abs' : 'name';
        o.needs.push({to: j, form});
        const syms = [`f${j}_s0`, `f${j}_s1`, `f${j}_s2`];
        o.refs.push(pick(syms));
        if (chance(0.5)) o.gotRefs.push(pick(syms));
        if (chance(0.15)) o.dashU.push(pick(syms));
      }
    }
    if (chance(0.08)) o.extra.push('libfzmissing.so.1');
    if (chance(0.1)) {
      o.extra.push('libz.so.1');
      o.nodeflib = chance(0.6);
    }
    if (chance(0.06)) o.refs.push('fz_nowhere');
    const entries = Array.from({length: 1 + Math.floor(r() * 3)}, searchEntry).join(':');
    if (o.k === 0 ? chance(0.85) : chance(0.35)) {
      if (chance(0.5)) o.rpath = entries;
      else o.runpath = entries;
    }
  }

  const source = (k: number, variant: Variant, o: (typeof objs)[number]): string => {
    const defs = variant === 'old' ? ['s0', 's1'] : variant === 'nosym' ? ['s0', 's2'] : ['s0', 's1', 's2'];
    let s = '\t.text\n';
    for (const d of defs) s += `\t.globl f${k}_${d}\n\t.type f${k}_${d},${m.mark}function\nf${k}_${d}:\n\tret\n`;
    s += `\t.globl f${k}_use\n\t.type f${k}_use,${m.mark}function\nf${k}_use:\n`;
    for (const ref of o.refs) s += m.call(ref);
    for (const ref of o.gotRefs) s += m.got(ref);
    const tls = tlsBlock(seed, k);
    if (tls) s += m.initialExec(`tv${k}`);
    for (const need of o.needs) if (tlsBlock(seed, need.to) && usesDependencyTls(seed, k, need.to)) s += m.initialExec(`tv${need.to}`);
    s += '\tret\n';
    if (tls) s += `\t.section .tbss,"awT",${m.mark}nobits\n\t.globl tv${k}\n\t.type tv${k},${m.mark}object\n\t.size tv${k},${tls.size}\n\t.balign ${tls.align}\ntv${k}:\n\t.zero ${tls.size}\n`;
    return s;
  };
  const versionScript = (k: number, variant: Variant): string | null => {
    if (variant === 'unversioned') return null;
    const tv = tlsBlock(seed, k) ? ` tv${k};` : '';
    if (variant === 'old') return `FZ${k}_1 { global: f${k}_s0; f${k}_s1; f${k}_use;${tv} local: *; };\n`;
    if (variant === 'nosym') return `FZ${k}_1 { global: f${k}_s0; f${k}_use;${tv} local: *; };\nFZ${k}_2 { global: f${k}_s2; } FZ${k}_1;\n`;
    return `FZ${k}_1 { global: f${k}_s0; f${k}_s1; f${k}_use;${tv} local: *; };\nFZ${k}_2 { global: f${k}_s2; } FZ${k}_1;\n`;
  };

  // Runtime placements: where each library's copies lie (the top object lies in top/).
  const placements: Array<{k: number; path: string; variant: Variant}> = [];
  for (let k = 1; k < n; k++) {
    const copies = chance(0.1) ? 0 : chance(0.45) ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const where = chance(0.12) ? '.' : `${pick(DIRS)}${(() => {
        const sub = pick(m.subs);
        return sub ? `/${sub}` : '';
      })()}`;
      const variant: Variant = c === 0 && chance(0.6) ? 'full' : pick(['full', 'old', 'unversioned', 'nosym'] as const);
      placements.push({k, path: `${where}/libfz${k}.so.1`, variant});
    }
  }
  // Slash DT_NEEDED targets must exist where the name points: put a full copy there.
  for (const o of objs) {
    for (const need of o.needs) {
      if (need.form === 'name') continue;
      const d = pick(DIRS);
      need.form === 'abs' ? (need as Need & {at?: string}).at = `${dir}/${d}/libfz${need.to}.so.1` : (need as Need & {at?: string}).at = d;
      placements.push({k: need.to, path: `${d}/libfz${need.to}.so.1`, variant: 'full'});
    }
  }

  // Build from the leaves up: each object links against its dependencies' full variants.
  const variantsOf = new Map<number, Set<Variant>>();
  for (const p of placements) {
    const set = variantsOf.get(p.k) ?? new Set<Variant>(['full']);
    set.add(p.variant);
    variantsOf.set(p.k, set);
  }
  variantsOf.set(0, new Set(['full']));
  // A library that exists only at link time: at run time nothing provides it.
  if (objs.some((o) => o.extra.includes('libfzmissing.so.1'))) {
    cmds.push('printf "\\t.text\\n" > var/missing.s', ...assemble('var/missing.o', 'var/missing.s'), `${m.ld} -shared -soname libfzmissing.so.1 -o link/libfzmissing.so.1 var/missing.o`);
  }
  for (let k = n - 1; k >= 0; k--) {
    const o = objs[k];
    for (const variant of variantsOf.get(k) ?? new Set<Variant>(['full'])) {
      const base = `var/k${k}-${variant}`;
      const out = variant === 'full' ? `link/libfz${k}.so.1` : `${base}.so`;
      writeFileSync(join(dir, `${base}.s`), source(k, variant, o));
      const map = o.versioned || variant !== 'full' ? versionScript(k, o.versioned ? variant : 'unversioned') : null;
      if (map) writeFileSync(join(dir, `${base}.map`), map);
      // ld runs in build/: a slash DT_NEEDED is recorded as the path it was given ('$ORIGIN/../d1/...').
      const args = [`(cd build && ${m.ld}`, '-shared', '-soname', `libfz${k}.so.1`, '-o', `${dir}/${out}`, `${dir}/${base}.o`];
      if (map) args.push('--version-script', `${dir}/${base}.map`);
      if (o.rpath !== null) args.push('--disable-new-dtags', '-rpath', `'${o.rpath}'`);
      if (o.runpath !== null) args.push('--enable-new-dtags', '-rpath', `'${o.runpath}'`);
      if (o.nodeflib) args.push('-z', 'nodefaultlib');
      // Without -z noexecstack an object from `as` has no PT_GNU_STACK: it asks for an executable
      // stack, which a dlopen refuses from glibc 2.41. Some objects keep asking (not drawn from the
      // generator, so every seed's graph stays what it was).
      if (!asksExecStack(seed, k)) args.push('-z', 'noexecstack');
      if (bindsNow(seed, k)) args.push('-z', 'now');
      for (const u of o.dashU) args.push('-u', u);
      args.push('--no-as-needed');
      for (const need of o.needs) {
        const at = (need as Need & {at?: string}).at;
        if (need.form === 'name') args.push(`${dir}/link/libfz${need.to}.so.1`);
        else if (need.form === 'abs') args.push(at!);
        else args.push(`'$ORIGIN/../${at}/libfz${need.to}.so.1'`);
      }
      for (const e of o.extra) args.push(e === 'libz.so.1' ? m.zlib : `${dir}/link/libfzmissing.so.1`);
      cmds.push(...assemble(`${base}.o`, `${base}.s`), `${args.join(' ')})`);
      if (variant === 'full') {
        // Soname-less stubs that give slash DT_NEEDED names (ld records the path it was given).
        for (const p of objs) {
          for (const need of p.needs) {
            if (need.to !== k || need.form === 'name') continue;
            const at = (need as Need & {at?: string}).at!;
            const stubAt = need.form === 'abs' ? at : `build/${at}/libfz${k}.so.1`;
            cmds.push(`${m.ld} -shared -o '${stubAt}' ${base}.o${map ? ` --version-script ${base}.map` : ''}`);
          }
        }
      }
    }
  }
  // The runtime copies, after every link (an abs stub may sit where a copy goes): made by `place`,
  // once the script has run. Their directories are made here.
  const built = (k: number, variant: Variant): string => join(dir, variant === 'full' ? `link/libfz${k}.so.1` : `var/k${k}-${variant}.so`);
  for (const p of placements) mkdirSync(join(dir, dirname(p.path)), {recursive: true});
  const junk = junkFile(seed, n);
  const place = (): void => {
    for (const p of placements) copyFileSync(built(p.k, p.variant), join(dir, p.path));
    copyFileSync(built(0, 'full'), join(dir, 'top', 'libfz0.so.1'));
    // After every copy: a junk file takes the place of any copy there.
    if (junk) writeFileSync(join(dir, junk.dir, `libfz${junk.k}.so.1`), junk.empty ? '' : 'not a library\n'.repeat(7));
  };

  const viaLink = chance(0.3);
  const target = viaLink ? `${dir}/sl/../libfz0.so.1` : `${dir}/top/libfz0.so.1`;
  let ldLibraryPath: string | undefined;
  if (chance(0.6)) {
    const parts = Array.from({length: 1 + Math.floor(r() * 3)}, () => pick([`${dir}/d0`, `${dir}/d1`, `${dir}/d2`, `${dir}/d3`, '', 'd3', `${dir}/d1/glibc-hwcaps/x86-64-v3`]));
    ldLibraryPath = parts.map((p, i) => (i === 0 ? '' : pick([':', ':', ';'])) + p).join('');
  }
  // One case in seven preloads something, decided without drawing from the generator (every
  // seed's graph stays what it was): a copy by its path (half of them), a library by name, or a
  // path where nothing is (ld.so warns and goes on).
  let preload: string | undefined;
  if ((seed * 5 + 2) % 7 === 0) {
    const kind = Math.floor(seed / 7) % 4;
    const copy = placements.length > 0 ? placements[seed % placements.length] : null;
    preload = !copy || kind === 3 ? `${dir}/var/libfznothere.so.1` : kind === 2 ? `libfz${copy.k}.so.1` : `${dir}/${copy.path.replace(/^\.\//, '')}`;
  }
  desc.push(`objects ${n}, target ${target}, LD_LIBRARY_PATH ${ldLibraryPath === undefined ? '(unset)' : JSON.stringify(ldLibraryPath)}` +
    `${preload === undefined ? '' : `, LD_PRELOAD ${preload}`}`);
  for (const o of objs) {
    desc.push(`  libfz${o.k}: needs ${o.needs.map((x) => `${x.to}/${x.form}`).join(',') || '-'}${o.extra.length ? ` +${o.extra.join(',')}` : ''}` +
      `${o.rpath !== null ? ` RPATH=${o.rpath}` : ''}${o.runpath !== null ? ` RUNPATH=${o.runpath}` : ''}${o.nodeflib ? ' NODEFLIB' : ''}` +
      `${o.versioned ? ' versioned' : ''}${asksExecStack(seed, o.k) ? ' execstack' : ''}${bindsNow(seed, o.k) ? ' -z now' : ''}` +
      `${tlsBlock(seed, o.k) ? ` tls=${tlsBlock(seed, o.k)!.size}/${tlsBlock(seed, o.k)!.align}` : ''} refs=${o.refs.join(',')}${o.gotRefs.length ? ` got=${o.gotRefs.join(',')}` : ''}${o.dashU.length ? ` -u ${o.dashU.join(',')}` : ''}`);
  }
  desc.push(`  copies: ${placements.map((p) => `${p.path}(${p.variant})`).join(' ')}${junk ? ` junk:${junk.dir}/libfz${junk.k}.so.1(${junk.empty ? 'empty' : 'text'})` : ''}`);
  return {fuzz: {seed, dir, target, ldLibraryPath, preload, description: desc}, script: `cd '${dir}' || exit 1\n${cmds.join('\n')}\n`, place};
}
