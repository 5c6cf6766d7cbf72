import {spawnSync} from 'node:child_process';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {quoteCsh, quoteFish, quoteSh} from '../../../src/core/text/quote.js';

/*
 * Drives conda's documented activation sequence in a real shell: a `conda` function that
 * evaluates what fixtures/fake-conda.mjs prints (as conda's shell function evaluates
 * `conda shell.<shell> activate ...`), and `dump NAME` writing the exported environment.
 */

export const FAKE_CONDA = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'fake-conda.mjs');

export type ShellName = 'bash' | 'zsh' | 'dash' | 'fish' | 'tcsh';
export const SHELLS: ShellName[] = ['bash', 'zsh', 'dash', 'fish', 'tcsh'];
export type Family = 'posix' | 'fish' | 'csh';
export const familyOf = (shell: ShellName): Family => (shell === 'fish' ? 'fish' : shell === 'tcsh' ? 'csh' : 'posix');

export function hasShell(shell: ShellName): boolean {
  return spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
}

export type Step = {conda: string[]} | {dump: string} | {raw: Record<Family, string>};

/** The program, in the shell's language, running the steps; `set -eu` in the sh family. */
export function driver(shell: ShellName, steps: Step[], outDir: string): string {
  const family = familyOf(shell);
  const node = process.execPath;
  const lines: string[] = [];
  const q = family === 'posix' ? quoteSh : family === 'fish' ? quoteFish : quoteCsh;
  if (family === 'posix') {
    lines.push('set -eu');
    lines.push(`conda() { _fake_out=$(${q(node)} ${q(FAKE_CONDA)} posix "$@"); eval "$_fake_out"; unset _fake_out; }`);
    lines.push(`dump() { /usr/bin/env -0 > ${q(outDir)}/"$1".env; }`);
  } else if (family === 'fish') {
    lines.push(`function conda; ${q(node)} ${q(FAKE_CONDA)} fish $argv | source; end`);
    lines.push(`function dump; /usr/bin/env -0 > ${q(outDir)}/$argv[1].env; end`);
  }
  let n = 0;
  for (const step of steps) {
    if ('conda' in step) {
      const args = step.conda.map(q).join(' ');
      if (family === 'csh') {
        const tmp = q(join(outDir, `step${n++}.csh`));
        lines.push(`${q(node)} ${q(FAKE_CONDA)} csh ${args} > ${tmp}`, `source ${tmp}`);
      } else {
        lines.push(`conda ${args}`);
      }
    } else if ('dump' in step) {
      const file = q(join(outDir, `${step.dump}.env`));
      lines.push(family === 'csh' ? `/usr/bin/env -0 > ${file}` : `dump ${q(step.dump)}`);
    } else {
      lines.push(step.raw[family]);
    }
  }
  // The run's status is then the last step's only if a step stops the script (set -e).
  lines.push(family === 'csh' ? 'exit 0' : 'true');
  return `${lines.join('\n')}\n`;
}

export interface ShellRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the driver as a script file (tcsh and fish read it like a sourced file). */
export function runDriver(shell: ShellName, script: string, outDir: string, env: NodeJS.ProcessEnv): ShellRun {
  mkdirSync(outDir, {recursive: true});
  const file = join(outDir, `driver.${familyOf(shell)}`);
  writeFileSync(file, script);
  const args = shell === 'tcsh' ? ['-f', file] : shell === 'fish' ? ['--no-config', file] : shell === 'zsh' ? ['-f', file] : [file];
  const r = spawnSync(shell, args, {env, encoding: 'utf8', timeout: 120000});
  return {status: r.status, stdout: r.stdout, stderr: r.stderr};
}

/** A dumped environment: NAME -> value. */
export function readDump(outDir: string, name: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of readFileSync(join(outDir, `${name}.env`), 'utf8').split('\0')) {
    if (!entry) continue;
    const eq = entry.indexOf('=');
    map.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return map;
}

/** Variables that differ (absent counts as different from empty), ignoring the shell's own `_`. */
export function envDiff(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    if (key === '_') continue;
    if (a.get(key) !== b.get(key)) out.push(`${key}: ${JSON.stringify(a.get(key))} -> ${JSON.stringify(b.get(key))}`);
  }
  return out.sort();
}
