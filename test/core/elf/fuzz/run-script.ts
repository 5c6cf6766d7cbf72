import {spawn} from 'node:child_process';
import {writeFileSync} from 'node:fs';
import {join} from 'node:path';

let scriptCount = 0;

/**
 * Runs a shell script written to a file in `dir` (not `sh -c`: hundreds of fuzz cases exceed the
 * argument size limit), asynchronously so that two can build at once; stdout and stderr together.
 */
export function runScript(dir: string, script: string): Promise<{code: number; out: string}> {
  const file = join(dir, `script-${scriptCount++}.sh`);
  writeFileSync(file, script);
  return new Promise((done) => {
    const child = spawn('sh', [file], {stdio: ['ignore', 'pipe', 'pipe']});
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => done({code: code ?? -1, out}));
  });
}
