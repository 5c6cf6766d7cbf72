import {afterAll, describe, expect, test} from '@jest/globals';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';

describe('unknown commands and extra arguments', () => {
  const {dir, cleanup} = makeTempDir();
  const env = cliEnv(dir);
  afterAll(cleanup);

  test('an unknown command is a usage error that says where the list is', () => {
    const r = runCli(['nosuch'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('cudaenv: there is no command "nosuch"\nSee `cudaenv --help` for the list of commands.\n');
  });

  test('an argument a command does not take is named, as typed', () => {
    const r = runCli(['ls', 'extra'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('cudaenv: ls does not take the argument "extra"\nSee `cudaenv ls --help`.\n');
  });
});
