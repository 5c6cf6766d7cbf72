import {afterAll, beforeAll, describe, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../../helpers/cli.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';

// Completion driven in the real shells: bash through COMP_WORDS and its compgen, fish through
// `complete -C`, zsh through bashcompinit (what its completion system calls on TAB) and through a
// real TAB typed into an interactive zsh on a pseudo-terminal (zpty).
const has = (shell: string): boolean => spawnSync(shell, ['-c', 'exit 0'], {stdio: 'ignore'}).status === 0;

describe('cudaenv completion', () => {
  const {dir, cleanup} = makeTempDir();
  afterAll(cleanup);
  const store = join(dir, 'store');
  const env = cliEnv(store, {PATH: '/usr/bin:/bin', HOME: dir});
  const scripts: Record<string, string> = {};

  beforeAll(() => {
    expect(runCli(['add', makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'})], {env}).status).toBe(0);
    expect(runCli(['alias', 'stable', '12.4'], {env}).status).toBe(0);
    for (const shell of ['bash', 'zsh', 'fish']) {
      const r = runCli(['completion', shell], {env});
      expect(r.status).toBe(0);
      scripts[shell] = join(dir, `completion.${shell}`);
      writeFileSync(scripts[shell]!, r.stdout);
    }
  });

  /** COMPREPLY for a command line as typed (a trailing space starts a new word). */
  const bash = (line: string): string[] => {
    const script = `source ${JSON.stringify(scripts.bash)}; read -ra COMP_WORDS <<< "$1"; [[ $1 == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _cudaenv_complete; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script, 'bash', line], {env, encoding: 'utf8'});
    return r.stdout.split('\n').filter(Boolean).sort();
  };

  testIf(has('bash'), 'needs bash')('bash: commands, flags, versions and aliases, releases for install', () => {
    expect(bash('cudaenv ins')).toEqual(['install']);
    expect(bash('cudaenv use ')).toEqual(['12.4.1', 'latest', 'stable', 'system']);
    expect(bash('cudaenv uninstall 12')).toEqual(['12.4.1']);
    expect(bash('cudaenv ls --s')).toEqual(['--system']);
    expect(bash('cudaenv exec --cuda st')).toEqual(['stable']);
    // No cached listing yet: the releases cudaenv knows.
    expect(bash('cudaenv install 12.4')).toEqual(['12.4.0', '12.4.1']);
    mkdirSync(join(store, 'cache'), {recursive: true});
    writeFileSync(join(store, 'cache', 'remote-versions'), '12.4.1\n12.9.9\n$(touch pwned)\n');
    expect(bash('cudaenv install 12.')).toEqual(['12.4.1', '12.9.9']);
    expect(bash('cudaenv help unin')).toEqual(['uninstall']);
  });

  // Issue 44, item 10: subcommands complete, and each argument offers what the command accepts.
  const subcommandCases: Array<[string, string[]]> = [
    ['cudaenv con', ['conda', 'config']],
    ['cudaenv conda ', ['hook']],
    ['cudaenv conda hook ', ['install', 'status', 'uninstall']],
    ['cudaenv conda hook install ', ['12.4.1', 'latest', 'stable']],
    ['cudaenv conda hook install --na', ['--name']],
    ['cudaenv cache ', ['clean']],
    ['cudaenv cache clean --', ['--json', '--partial']],
    // uninstall takes installed versions only (it refuses aliases, system and latest); unalias alias names.
    ['cudaenv uninstall ', ['12.4.1']],
    ['cudaenv unalias ', ['stable']],
    ['cudaenv link ', ['12.4.1', 'latest', 'stable']],
    ['cudaenv use ', ['12.4.1', 'latest', 'stable', 'system']],
  ];

  testIf(has('bash'), 'needs bash')('bash: conda, conda hook and cache offer their subcommands; uninstall only installed versions', () => {
    for (const [line, want] of subcommandCases) expect({line, got: bash(line)}).toEqual({line, got: want});
  });

  testIf(has('fish'), 'needs fish (apt-get install fish)')('fish: the same subcommands and arguments', () => {
    const fish = (line: string): string[] => {
      const r = spawnSync('fish', ['--no-config', '-c', `source ${scripts.fish}; complete -C ${JSON.stringify(line)}`], {env, encoding: 'utf8'});
      return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort();
    };
    for (const [line, want] of subcommandCases) expect({line, got: fish(line)}).toEqual({line, got: want});
  });

  testIf(has('fish'), 'needs fish (apt-get install fish)')('fish: complete -C', () => {
    const fish = (line: string): string[] => {
      const r = spawnSync('fish', ['--no-config', '-c', `source ${scripts.fish}; complete -C ${JSON.stringify(line)}`], {env, encoding: 'utf8'});
      return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort();
    };
    expect(fish('cudaenv ins')).toEqual(['install']);
    expect(fish('cudaenv use ')).toEqual(['12.4.1', 'latest', 'stable', 'system']);
    expect(fish('cudaenv ls --sy')).toEqual(['--system']);
    expect(fish('cudaenv install 12.9')).toEqual(['12.9.9']);
  });

  testIf(has('zsh'), 'needs zsh (apt-get install zsh)')('zsh: registered with the completion system, and offers versions and aliases', () => {
    const script = `source ${JSON.stringify(scripts.zsh)}; print -r -- "$_comps[cudaenv]"; setopt ksharrays; COMP_WORDS=(cudaenv use ""); COMP_CWORD=2; _cudaenv_complete; print -r -- "\${COMPREPLY[*]}"`;
    const r = spawnSync('zsh', ['-f', '-c', script], {env: {...env, ZDOTDIR: dir}, encoding: 'utf8'});
    const [registered, offered] = r.stdout.split('\n');
    expect(registered).toContain('_cudaenv_complete');
    expect(offered!.split(' ').sort()).toEqual(['12.4.1', 'latest', 'stable', 'system']);
  });

  const hasZpty = has('zsh') && spawnSync('zsh', ['-f', '-c', 'zmodload zsh/zpty'], {stdio: 'ignore'}).status === 0;
  testIf(hasZpty, 'needs zsh with its zpty module (apt-get install zsh)')('zsh: a real TAB in an interactive zsh with compinit (driven through zpty)', () => {
    // Each line is typed, TAB pressed, then ^T runs a widget that appends the edited line to a file.
    const out = join(dir, 'zsh-tab.txt');
    const lines = ['cudaenv use st', 'cudaenv ins', 'cudaenv ls --sy', 'cudaenv uninstall 12', 'cudaenv conda h'];
    const driver = `zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PS1='> '; autoload -Uz compinit; compinit -u -D; source \${(q)2}; dump() { print -r -- \\"<\\$BUFFER>\\" >> \${(q)1}; BUFFER=; }; zle -N dump; bindkey '^T' dump"
shift 2
for line in "$@"; do zpty -wn z "$line"$'\\t\\x14'; done
for i in {1..200}; do
  zpty -rt z junk 2>/dev/null
  [[ -f $out ]] && (( $(wc -l < $out) >= $# )) && break
  sleep 0.05
done
zpty -d z`;
    const r = spawnSync('zsh', ['-f', '-c', `out=$1; ${driver}`, 'zsh', out, scripts.zsh!, ...lines], {env: {...env, ZDOTDIR: dir}, encoding: 'utf8', timeout: 30000});
    expect(r.status).toBe(0);
    expect(readFileSync(out, 'utf8').split('\n').filter(Boolean)).toEqual([
      '<cudaenv use stable >', '<cudaenv install >', '<cudaenv ls --system >', '<cudaenv uninstall 12.4.1 >', '<cudaenv conda hook >',
    ]);
  });

  testIf(has('bash'), 'needs bash')('an unknown shell is refused with the ones there are', () => {
    const r = spawnSync(process.execPath, [CLI, 'completion', 'tcsh'], {env, encoding: 'utf8'});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('bash, zsh, fish');
  });
});
