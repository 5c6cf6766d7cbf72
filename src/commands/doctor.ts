import {Flags} from '@oclif/core';
import {accessSync, constants, statSync} from 'node:fs';
import {resolve} from 'node:path';
import {CudaenvCommand} from '../cli/base.js';
import {UsageError} from '../core/errors.js';
import {hasErrors, renderReport, runDoctor, sortFindings, type DoctorReport} from '../core/doctor/index.js';
import {defaultDeps} from '../core/doctor/engine.js';
import {firstOnPath} from '../core/system/python-env.js';

export default class Doctor extends CudaenvCommand {
  static override summary = 'Explain this machine\'s CUDA state: driver, toolkits, environment, PyTorch, loader, conda.';
  static override description = 'Every relevant fact and every problem on one screen, each problem with its fix. ' +
    'Reads files only; it runs the Python interpreter once (for sys.path) and nvidia-smi only when no driver file tells the version. ' +
    'Exit status 1 when any finding is an error.';
  static override examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --python ~/venv/bin/python --json'];
  static override flags = {
    python: Flags.string({description: 'the interpreter whose environment is examined (default: the first python3/python on PATH)'}),
  };

  async run(): Promise<DoctorReport> {
    const {flags} = await this.parse(Doctor);
    const env = process.env;
    let python: string | undefined;
    if (flags.python !== undefined) {
      // A bare name (`--python python3.11`) is looked up on PATH, as the shell would run it.
      python = flags.python.includes('/') ? resolve(flags.python) : firstOnPath([flags.python], env.PATH) ?? resolve(flags.python);
      try {
        accessSync(python, constants.X_OK);
        if (!statSync(python).isFile()) throw new Error('not a file');
      } catch {
        throw new UsageError(`--python ${flags.python}: not an executable file`, 'Give the interpreter of the environment to examine, e.g. --python ~/venv/bin/python.');
      }
    }
    // CUDAENV_SYSROOT is for tests: a directory standing in for / when reading system files.
    const sysroot = env.CUDAENV_SYSROOT ?? '';
    if (sysroot) {
      let ok = false;
      try {
        ok = statSync(sysroot).isDirectory();
      } catch {
        // reported below
      }
      if (!ok) throw new UsageError(`CUDAENV_SYSROOT=${sysroot} is not a directory`, 'Unset CUDAENV_SYSROOT (it exists for tests only).');
    }
    const report = await runDoctor({env, cwd: process.cwd(), paths: this.paths, sysroot: sysroot ? resolve(sysroot) : '', python}, defaultDeps);
    report.findings = sortFindings(report.findings);
    if (hasErrors(report)) process.exitCode = 1;
    if (!this.jsonEnabled()) process.stdout.write(renderReport(report));
    return report;
  }
}
