/**
 * Issue 46, as it was found: alice may run `sudo cudaenv link *` and `sudo cudaenv unlink *`, and
 * plants links, files and records in her own store to turn root against the machine. Each test
 * is an attack that worked before cudaenv's root rules (docs/security.md) and must fail now; the
 * sandbox (sandbox.ts) keeps the machine's real /etc, /usr/local and loader cache out of reach.
 */
import {afterAll, expect, test} from '@jest/globals';
import {existsSync, readlinkSync, statSync} from 'node:fs';
import {createHash} from 'node:crypto';
import {describeIf} from '../helpers/skip.js';
import {runSandbox, SANDBOX_NEEDS, SANDBOX_OK} from './sandbox.js';

function hostState(): Record<string, unknown> {
  let cuda: string | null = null;
  try {
    cuda = readlinkSync('/usr/local/cuda');
  } catch {
    cuda = existsSync('/usr/local/cuda') ? 'not a link' : null;
  }
  const st = statSync('/etc');
  return {cuda, etc: `${st.uid}:${st.mode}`, ldCache: statSync('/etc/ld.so.cache', {throwIfNoEntry: false})?.mtimeMs ?? null,
    sudoers: existsSync('/etc/sudoers.d/cudaenv-test'), alice: existsSync('/var/lib/cudaenv')};
}

const key = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
const STORE = '"$T/home/alice/.cudaenv"';

/** alice's store with her own toolkit 12.4.1 (hers: she can change every file in it). */
const ALICE_TOOLKIT = `make_toolkit ${STORE}/versions/12.4.1 alice:alice 12.4.1; chown alice:alice ${STORE} ${STORE}/versions`;
/** A toolkit of root's, as a system package or a root-owned store has, registered in alice's store. */
const ROOT_TOOLKIT = `make_toolkit /usr/local/cuda-12.4 root:root 12.4.1; as_alice "$CE" add /usr/local/cuda-12.4 >/dev/null 2>&1 || echo ADD-FAILED`;

describeIf(SANDBOX_OK, SANDBOX_NEEDS)('sudo cudaenv link / unlink cannot be turned against the machine (real sudo, users, ldconfig, update-alternatives)', () => {
  const hostBefore = hostState();
  afterAll(() => {
    // Every scenario wrote /usr/local/cuda, /etc and the loader cache of its sandbox only.
    expect(hostState()).toEqual(hostBefore);
  });

  test('1: a store whose links/ is a link to /etc: root neither writes there nor gives /etc away', () => {
    const r = runSandbox(`
      ${ALICE_TOOLKIT}
      as_alice ln -s /etc ${STORE}/links
      sudo_alice link 12.4.1; echo "exit=$?"
      echo "etc-owner=$(stat -c %U /etc)"
      echo "alice-files-in-etc=$(find /etc -xdev -user alice | wc -l)"
      echo "usr-local-cuda=$(readlink /usr/local/cuda || echo none)"
    `);
    expect(r.stdout).toContain('etc-owner=root');
    expect(r.stdout).toContain('alice-files-in-etc=0');
    expect(r.stdout).toContain('usr-local-cuda=none');
    expect(r.stdout).toMatch(/exit=[1-9]/);
    expect(r.stderr).toContain(`refusing to link CUDA 12.4.1 as root: `);
    expect(r.stderr).toContain('is not root\'s alone');
    expect(r.stderr).toContain('sudo CUDAENV_DIR=/opt/cudaenv cudaenv install 12.4.1');
  });

  test('1, allowed: a root-owned toolkit is linked, its record is root\'s in /var/lib/cudaenv, and alice\'s planted links/ is never followed', () => {
    const r = runSandbox(`
      ${ROOT_TOOLKIT}
      as_alice ln -s /etc ${STORE}/links
      sudo_alice link 12.4.1 >/dev/null; echo "exit=$?"
      echo "usr-local-cuda=$(readlink /usr/local/cuda)"
      echo "records=$(find /var/lib/cudaenv/links -type f -user root -name '*.json' | wc -l)"
      echo "etc-owner=$(stat -c %U /etc)"
      echo "root-files-in-store=$(find ${STORE} -user root | wc -l)"
      sudo_alice unlink; echo "unlink-exit=$?"
      echo "after-unlink=$(readlink /usr/local/cuda || echo none)"
      echo "records-after=$(find /var/lib/cudaenv/links -type f -name '*.json' | wc -l)"
    `);
    expect(r.stdout).toContain('exit=0');
    expect(r.stdout).toContain('usr-local-cuda=/usr/local/cuda-12.4');
    expect(r.stdout).toContain('records=1');
    expect(r.stdout).toContain('etc-owner=root');
    expect(r.stdout).toContain('root-files-in-store=0');
    expect(r.stdout).toContain('unlink-exit=0');
    expect(r.stdout).toContain('after-unlink=none');
    expect(r.stdout).toContain('records-after=0');
    expect(r.stdout).not.toContain('ADD-FAILED');
  });

  test('2 and 9: a record planted as a link to a root-only file is neither written, given away nor printed', () => {
    const r = runSandbox(`
      ${ROOT_TOOLKIT}
      printf 'TOPSECRET-%s\\n' 42 > /etc/cudaenv-test-secret; chmod 600 /etc/cudaenv-test-secret
      as_alice mkdir -p ${STORE}/links
      as_alice ln -s /etc/cudaenv-test-secret ${STORE}/links/${key('/usr/local/cuda')}.json
      for ms in 0 1 2 3; do as_alice ln -s /etc/cudaenv-test-secret ${STORE}/links/${key('/usr/local/cuda')}.json.$$.$ms.tmp; done
      sudo_alice link 12.4.1; echo "exit=$?"
      sudo_alice unlink; echo "unlink-exit=$?"
      echo "secret=$(cat /etc/cudaenv-test-secret) $(stat -c '%U %a' /etc/cudaenv-test-secret)"
    `);
    expect(r.stdout).toContain('exit=0');
    expect(r.stdout).toContain('unlink-exit=0');
    expect(r.stdout).toContain('secret=TOPSECRET-42 root 600');
    expect(`${r.stdout}${r.stderr}`.match(/TOPSECRET/g)).toHaveLength(1);
  });

  test('3: a version that is a link to alice\'s script, and --target in /etc/profile.d: nothing is linked', () => {
    const r = runSandbox(`
      as_alice mkdir -p ${STORE}/versions
      as_alice sh -c 'printf "echo owned\\n" > "$HOME/zz.sh"'
      as_alice ln -s "$T/home/alice/zz.sh" ${STORE}/versions/12.4.1
      sudo_alice link 12.4.1 --target /etc/profile.d/zz.sh; echo "exit=$?"
      echo "profile=$(ls /etc/profile.d/zz.sh 2>/dev/null || echo absent)"
      make_toolkit /usr/local/cuda-12.4 root:root 12.4.1
      as_alice rm ${STORE}/versions/12.4.1
      as_alice "$CE" add /usr/local/cuda-12.4 >/dev/null 2>&1
      sudo_alice link 12.4.1 --target /etc/profile.d/zz.sh; echo "root-toolkit-exit=$?"
      sudo_alice link 12.4.1 --target /usr/local/bin/cudaenv-test-nvcc; echo "usr-local-bin-exit=$?"
      echo "profile2=$(ls /etc/profile.d/zz.sh 2>/dev/null || echo absent) $(ls /usr/local/bin/cudaenv-test-nvcc 2>/dev/null || echo absent)"
    `);
    expect(r.stdout).toMatch(/exit=[1-9]/);
    expect(r.stdout).toContain('profile=absent');
    expect(r.stdout).toMatch(/root-toolkit-exit=[1-9]/);
    expect(r.stdout).toMatch(/usr-local-bin-exit=[1-9]/);
    expect(r.stdout).toContain('profile2=absent absent');
    expect(r.stderr).toContain('is not a directory');
    expect(r.stderr).toContain('refusing to link /etc/profile.d/zz.sh as root: it is in /etc, the system\'s own configuration');
  });

  test('3: as root, --target is a link cudaenv made or nothing, under /usr/local or /opt', () => {
    const r = runSandbox(`
      ${ROOT_TOOLKIT}
      mkdir -p /opt/app-1; ln -s /opt/app-1 /opt/app
      sudo_alice link 12.4.1 --target /opt/app; echo "foreign-link-exit=$?"
      echo "app=$(readlink /opt/app)"
      sudo_alice link 12.4.1 --target /opt/cuda; echo "absent-exit=$?"
      sudo_alice link 12.4.1 --target /opt/cuda >/dev/null; echo "again-exit=$?"
      echo "cuda=$(readlink /opt/cuda)"
      sudo_alice link 12.4.1 --target "$T/home/alice/cuda"; echo "home-exit=$?"
      echo "home=$(ls "$T/home/alice/cuda" 2>/dev/null || echo absent)"
    `);
    expect(r.stdout).toMatch(/foreign-link-exit=[1-9]/);
    expect(r.stdout).toContain('app=/opt/app-1');
    expect(r.stderr).toContain('refusing to replace /opt/app as root: it is a link cudaenv did not make');
    expect(r.stdout).toContain('absent-exit=0');
    expect(r.stdout).toContain('again-exit=0');
    expect(r.stdout).toContain('cuda=/usr/local/cuda-12.4');
    expect(r.stdout).toMatch(/home-exit=[1-9]/);
    expect(r.stdout).toContain('home=absent');
    expect(r.stderr).toMatch(/refusing to link \S+\/home\/alice\/cuda as root: it is not under \/usr\/local or \/opt/);
  });

  test('4: alice\'s own toolkit never reaches the loader cache through /usr/local/cuda (real ldconfig)', () => {
    const r = runSandbox(`
      ${ALICE_TOOLKIT}
      echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/cuda-test.conf
      ldconfig
      sudo_alice link 12.4.1; echo "exit=$?"
      echo "usr-local-cuda=$(readlink /usr/local/cuda || echo none)"
      echo "cache-libz-from-alice=$(ldconfig -p | grep -c "$T/home/alice" )"
      echo "cache-libz-via-link=$(ldconfig -p | grep -c /usr/local/cuda/lib64)"
    `);
    expect(r.stdout).toMatch(/exit=[1-9]/);
    expect(r.stdout).toContain('usr-local-cuda=none');
    expect(r.stdout).toContain('cache-libz-from-alice=0');
    expect(r.stdout).toContain('cache-libz-via-link=0');
  });

  test('5: forged undo records in alice\'s store do not make root run update-alternatives', () => {
    const k = key('/usr/local/cuda');
    const record = JSON.stringify({target: '/usr/local/cuda', previous: {kind: 'alternatives', groups: [{name: 'cudaenv-test-editor', status: 'manual', value: '/bin/true'}]}, recordedAt: '2026-01-01T00:00:00Z'});
    const added = JSON.stringify({group: 'cudaenv-test-editor', path: '/bin/false', added: true});
    const r = runSandbox(`
      update-alternatives --install /usr/local/bin/cudaenv-test-editor cudaenv-test-editor /bin/true 10 >/dev/null
      update-alternatives --install /usr/local/bin/cudaenv-test-editor cudaenv-test-editor /bin/false 20 >/dev/null
      as_alice mkdir -p ${STORE}/links/${k}.added
      as_alice sh -c 'printf "%s\\n" "$1" > "$2"' sh '${record}' ${STORE}/links/${k}.json
      as_alice sh -c 'printf "%s\\n" "$1" > "$2"' sh '${added}' ${STORE}/links/${k}.added/x.json
      sudo_alice unlink; echo "exit=$?"
      echo "alternatives=$(update-alternatives --list cudaenv-test-editor | tr '\\n' ' ')"
      echo "status=$(update-alternatives --query cudaenv-test-editor | awk '/^Status:/ {print $2}')"
    `);
    expect(r.stdout).toMatch(/exit=[1-9]/);
    expect(r.stderr).toContain('cudaenv has not linked /usr/local/cuda: there is nothing to restore');
    expect(r.stdout).toContain('alternatives=/bin/false /bin/true ');
    expect(r.stdout).toContain('status=auto');
  });

  test('8: another user\'s links at every predictable temporary name in a shared --dir do not redirect an administrator\'s write', () => {
    // alice (the administrator, no root) writes modulefiles into a directory her group shares; bob
    // plants links at the names the old scheme used (.NAME.PID.MS.tmp) for her process's pid and
    // the next seconds, pointing at her private file, while her process is stopped.
    const r = runSandbox(`
      make_toolkit /usr/local/cuda-12.4 root:root 12.4.1
      as_alice "$CE" add /usr/local/cuda-12.4 >/dev/null 2>&1
      as_alice sh -c 'printf "private\\n" > "$HOME/private"; chmod 600 "$HOME/private"'
      groupadd hpc && usermod -aG hpc alice && usermod -aG hpc bob
      mkdir -p "$T"/shared/modules/cuda; chgrp hpc "$T"/shared/modules/cuda; chmod 2775 "$T"/shared/modules/cuda
      # A simple command, not the as_alice function: $! is then the pid node will have (each program execs the next).
      setpriv --reuid=alice --regid=alice --init-groups env -i HOME="$T/home/alice" PATH="$BASEPATH" "$CE" modulefiles --dir "$T"/shared/modules >/dev/null 2>&1 &
      pid=$!
      kill -STOP $pid
      as_bob node -e '
        const fs = require("fs"); const [pid, target, dir] = process.argv.slice(1); const now = Date.now();
        for (const name of ["12.4.1.lua", ".modulerc.lua"])
          for (let ms = now - 200; ms < now + 8000; ms++) fs.symlinkSync(target, dir + "/." + name + "." + pid + "." + ms + ".tmp");
      ' $pid "$T/home/alice/private" "$T/shared/modules/cuda"
      kill -CONT $pid
      wait $pid; echo "exit=$?"
      echo "private=$(cat "$T/home/alice/private") $(stat -c '%U %a' "$T/home/alice/private")"
      echo "written=$(grep -c prepend_path "$T"/shared/modules/cuda/12.4.1.lua) $(stat -c %U "$T"/shared/modules/cuda/12.4.1.lua)"
    `, {timeoutMs: 180_000});
    expect(r.stdout).toContain('exit=0');
    expect(r.stdout).toContain('private=private alice 600');
    expect(r.stdout).toMatch(/written=[1-9]\d* alice/);
  });
});
