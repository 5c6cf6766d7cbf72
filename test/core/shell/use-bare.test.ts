/**
 * A bare `cudaenv use` (no version) outside any project, in real interactive bash, zsh and fish
 * (issue 44, item 6). As `nvm use` without an .nvmrc, it is an error that says why and what to
 * run; it pins nothing, so the auto-switch on cd keeps working. It used to pin the global default
 * (`system` here) silently, and no later cd switched the shell again.
 */
import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf} from '../../helpers/skip.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {have, makeStore, runInteractive, tracked, writeRc, type ShellName} from './shell-harness.js';

for (const shell of ['bash', 'zsh', 'fish'] as ShellName[]) {
  describeIf(have(shell), `needs ${shell} (apt-get install ${shell})`)(`${shell}: a bare cudaenv use outside any project`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let store: string;
    let home: string;
    beforeAll(async () => {
      tmp = makeTempDir('cudaenv-use-bare-');
      store = join(tmp.dir, 'store');
      await makeStore(store, ['11.8.0', '12.4.1']);
      home = join(tmp.dir, 'home');
      mkdirSync(home);
      mkdirSync(join(tmp.dir, 'outside'));
      mkdirSync(join(tmp.dir, 'proj'));
      writeFileSync(join(tmp.dir, 'proj', '.cuda-version'), '11.8\n');
      writeRc(shell, home);
    });
    afterAll(() => tmp.cleanup());

    test.each(['system', '12'])('global default %s: an error naming the directory and the fixes; pins nothing; cd still switches', (global) => {
      expect(runCli(['global', global], {env: cliEnv(store)}).status).toBe(0);
      const snaps = join(tmp.dir, `snaps-${global}`);
      mkdirSync(snaps);
      const status = shell === 'fish' ? '$status' : '$?';
      const r = runInteractive(shell, home, store, [
        'cudaenv use',
        `echo "use-exit=${status}"`,
        `env -0 > '${snaps}/after-use'`,
        `cd '${tmp.dir}/proj'`,
        `env -0 > '${snaps}/in-proj'`,
      ], {}, join(tmp.dir, 'outside'));
      expect(r.stdout).toContain('use-exit=2');
      expect(r.stderr).toContain(`cudaenv: no version to use: there is no .cuda-version in ${join(tmp.dir, 'outside')} or a parent directory`);
      expect(r.stderr).toContain(`The global default (${global === 'system' ? 'system' : '12, now 12.4.1'}) applies wherever this shell has not pinned a version; \`cudaenv deactivate\` returns this shell to it.`);
      expect(r.stderr).toContain(`\`cudaenv use ${global}\` pins it for this shell`);
      // Nothing pinned: no CUDAENV_VERSION, and the project's .cuda-version switches the shell on cd.
      expect(tracked(join(snaps, 'after-use')).CUDAENV_VERSION).toBeUndefined();
      expect(tracked(join(snaps, 'in-proj'))).toMatchObject({CUDA_HOME: join(store, 'versions', '11.8.0'), CUDAENV_VERSION: undefined});
    }, 60000);
  });
}

// The command itself, as a script runs it, says the same.
test('bare use with a global default: exit 2 with the same message, with or without --json', async () => {
  const tmp = makeTempDir('cudaenv-use-bare-cli-');
  try {
    const store = join(tmp.dir, 'store');
    await makeStore(store, ['12.4.1']);
    const env = cliEnv(store, {CUDAENV_SHELL: 'bash'});
    expect(runCli(['global', 'system'], {env}).status).toBe(0);
    const r = runCli(['use'], {env, cwd: tmp.dir});
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`no .cuda-version in ${tmp.dir} or a parent directory`);
    const j = runCli(['use', '--json'], {env, cwd: tmp.dir});
    expect(j.status).toBe(2);
    expect(JSON.parse(j.stdout)).toMatchObject({ok: false, error: {code: 'usage', message: `no version to use: there is no .cuda-version in ${tmp.dir} or a parent directory`}});
  } finally {
    tmp.cleanup();
  }
});
