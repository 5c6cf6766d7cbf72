import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {createPublicKey} from 'node:crypto';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../../helpers/cli.js';
import {have} from '../../helpers/capabilities.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {RELEASE_PUBLIC_KEY} from '../../../src/core/self/release-key.js';
import {makeTestKey, SIGN_RELEASE} from '../../exe/release.js';

/** The one trusted release key (issue 46): the executable's and install.sh's are the same ed25519 key. */

test('install.sh carries the same ed25519 public key as the executable', () => {
  const text = readFileSync(join(REPO_ROOT, 'install.sh'), 'utf8');
  const m = /^RELEASE_KEY='(-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----)'$/m.exec(text);
  expect(m).not.toBeNull();
  expect(`${m![1]}\n`).toBe(RELEASE_PUBLIC_KEY);
  const key = createPublicKey(RELEASE_PUBLIC_KEY);
  expect(key.asymmetricKeyType).toBe('ed25519');
});

testIf(have('openssl'), 'needs openssl')('scripts/sign-release.sh refuses a private key that is not the release key\'s, and signs with its own pair', () => {
  const tmp = makeTempDir('cudaenv-sign-');
  try {
    const dir = join(tmp.dir, 'release');
    mkdirSync(dir);
    writeFileSync(join(dir, 'SHA256SUMS'), `${'0'.repeat(64)}  VERSION\n`);
    const key = makeTestKey(tmp.dir);
    const r = spawnSync('sh', [SIGN_RELEASE, key.privateFile, dir], {encoding: 'utf8'});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`the private key ${key.privateFile} is not the release key's private half (its public key differs from src/core/self/release-key.ts): SHA256SUMS not signed`);
    const ok = spawnSync('sh', [SIGN_RELEASE, key.privateFile, dir, key.publicFile], {encoding: 'utf8'});
    expect([ok.status, ok.stderr]).toEqual([0, `sign-release: signed ${dir}/SHA256SUMS (${dir}/SHA256SUMS.sig)\n`]);
    expect(readFileSync(join(dir, 'SHA256SUMS.sig'))).toHaveLength(64);
  } finally {
    tmp.cleanup();
  }
});
