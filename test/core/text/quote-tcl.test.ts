import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {quoteTcl} from '../../../src/core/text/quote.js';
import {testIf} from '../../helpers/skip.js';

const HAVE_TCLSH = spawnSync('tclsh', [], {input: 'exit 0\n'}).status === 0;

/** Values a modulefile may carry, each read back by the real Tcl interpreter. */
const VALUES = [
  '', 'plain', '/shared/my cudaenv/versions/12.4.1', 'my "store" \\ $HOME', '[exec rm -rf /]', '{unbalanced', 'a}b{c', '\\',
  'end\\', 'tab\there', 'new\nline', 'cr\rlf', '\u0001\u001f\u007f', 'ünïcödé 🙂', '$env(HOME)', ';puts pwned', '"', '\\"', 'a\\\nb',
];

testIf(HAVE_TCLSH, 'needs tclsh (apt-get install tcl)')('quoteTcl: tclsh reads every value back exactly, substituting nothing', () => {
  const script = ['fconfigure stdout -translation binary -encoding utf-8', ...VALUES.map((v) => `puts -nonewline ${quoteTcl(v)}; puts -nonewline \\0`)].join('\n');
  // The script is read in the system encoding, which Tcl takes from the locale.
  const r = spawnSync('tclsh', [], {input: script, encoding: 'utf8', env: {...process.env, LC_ALL: 'C.UTF-8'}});
  expect(r.stderr).toBe('');
  expect(r.stdout.split('\0').slice(0, -1)).toEqual(VALUES);
});
