/**
 * The README's own lines, run as written (issue 44, item 8): the rc lines that put a clone's
 * bin/ on PATH, run from the clone (this checkout), then a new interactive shell started
 * elsewhere finds its cudaenv; and the quick start's first command builds once (`npm ci` builds
 * through `prepare`; install-methods.test.ts runs that line in a fresh clone).
 */
import {afterAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const have = (shell: string): boolean => spawnSync('sh', ['-c', `command -v ${shell}`], {stdio: 'ignore'}).status === 0;
const tmp = makeTempDir('cudaenv-readme-');
afterAll(tmp.cleanup);

/** The README's PATH line for SHELL, from the row of the installing table that puts the clone's bin/ on PATH. */
function pathLine(shell: 'bash' | 'zsh' | 'fish'): string {
  const row = readme.split('\n').find((l) => l.startsWith('| the clone\'s `bin/` on `PATH` |'));
  expect(row).toBeDefined();
  const m = new RegExp(`${shell} \`([^\`]+)\``).exec(row!);
  expect(m).not.toBeNull();
  return m![1]!;
}

for (const shell of ['bash', 'zsh', 'fish'] as const) {
  testIf(have(shell), `needs ${shell} (apt-get install ${shell})`)(`${shell}: the README's PATH line, run in the clone, gives a new shell started elsewhere the clone's cudaenv`, () => {
    const home = join(tmp.dir, `home-${shell}`);
    const elsewhere = join(tmp.dir, `elsewhere-${shell}`);
    mkdirSync(elsewhere, {recursive: true});
    mkdirSync(join(home, '.config', 'fish'), {recursive: true});
    mkdirSync(join(home, '.local', 'share', 'fish', 'generated_completions'), {recursive: true});
    const env = {HOME: home, PATH: '/usr/bin:/bin', TERM: 'dumb', LANG: 'C.UTF-8', XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local', 'share')};
    // Run verbatim, in the clone, by the shell the line is for.
    const add = spawnSync(shell, ['-c', pathLine(shell)], {cwd: REPO_ROOT, env, encoding: 'utf8'});
    expect({status: add.status, stderr: add.stderr}).toEqual({status: 0, stderr: ''});
    // A new interactive shell, started in another directory, reads its rc file.
    const check = 'command -v cudaenv; cudaenv --version';
    const r = spawnSync(shell, ['-i', '-c', check], {cwd: elsewhere, env, encoding: 'utf8', timeout: 60000});
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toBe(join(REPO_ROOT, 'bin', 'cudaenv'));
    expect(lines[1]).toMatch(/^cudaenv\/\d+\.\d+\.\d+ linux-/);
  }, 60000);
}

test('the quick start builds once: npm ci runs prepare, which builds, and the line runs no second build', () => {
  const block = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  expect(block).not.toBeNull();
  const first = block![1]!.split('\n')[0]!;
  expect(first.split(' && ')[0]).toBe('npm ci');
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {scripts: Record<string, string>};
  expect(pkg.scripts.prepare).toBe('node scripts/prepare.mjs');
  expect(readFileSync(join(REPO_ROOT, 'scripts', 'prepare.mjs'), 'utf8')).toContain("run([...npm, 'run', 'build'])");
  expect(first).not.toMatch(/npm run build|tsc/);
  expect(first).toMatch(/&& \.\/bin\/run\.js doctor$/);
});
