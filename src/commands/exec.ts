import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError, UsageError} from '../core/errors.js';
import {quoteSh} from '../core/text/quote.js';
import {loadSettings} from '../core/store/settings.js';
import {toolkitEnvironment, type LdLibraryPathPolicy} from '../core/shell/toolkit-env.js';
import {runForeground} from '../core/system/run-child.js';
import {notInstalledError, resolveSpec} from '../core/selection/resolve.js';
import {requireSelection} from '../core/selection/select.js';
import {parseSpec, prefixedVersion, tryParseSpec} from '../core/versions/spec.js';

export default class Exec extends CudaenvCommand {
  static override summary = 'Run a command with a CUDA version\'s environment.';
  static override description = 'The command starts at the first word that is not a flag of exec\'s (`--` before it is optional). PATH gains the version\'s bin, CUDA_HOME and CUDA_PATH point at it, and LD_LIBRARY_PATH follows the policy. Signals pass through; the exit status is the command\'s.';
  static override examples = ['<%= config.bin %> exec -- nvcc --version', '<%= config.bin %> exec --cuda 12.4 nvcc --version', '<%= config.bin %> exec --cuda 12.4 -- make'];
  static override strict = false;
  static override enableJsonFlag = false;
  static override flags = {
    cuda: Flags.string({description: 'version spec to use instead of the active one'}),
    'ld-library-path': Flags.string({options: ['prepend', 'none'], description: 'whether to add the version\'s lib64 to LD_LIBRARY_PATH'}),
    isolate: Flags.boolean({description: 'run in a private mount namespace where /usr/local/cuda is this version (root, or unprivileged user namespaces)'}),
  };

  async run(): Promise<void> {
    const {flags, argv} = await this.parse(Exec);
    // The words after `--` as typed: oclif's non-strict argv reorders repeated words
    // (`-- sh -c 'echo $1' sh x` reached sh as `sh sh -c ... x`).
    const dashes = this.argv.indexOf('--');
    const [command, ...args] = dashes >= 0 ? this.argv.slice(dashes + 1) : (argv as string[]);
    if (!command) throw new UsageError('no command given', 'Usage: cudaenv exec [--cuda SPEC] -- CMD [ARGS...]');
    let dir: string | undefined;
    if (flags.cuda) {
      const r = resolveSpec(this.paths, parseSpec(flags.cuda));
      if (!r.system && !r.label) throw notInstalledError(r, '--cuda');
      dir = r.label ? `${this.paths.versions}/${r.label}` : undefined;
    } else {
      dir = requireSelection(this.paths).path;
    }
    const policy = (flags['ld-library-path'] ?? (await loadSettings(this.paths)).get('ldLibraryPath') ?? 'prepend') as LdLibraryPathPolicy;
    const env = toolkitEnvironment(process.env, dir, this.paths.versions, policy);
    if (flags.isolate) {
      if (!dir) throw new UsageError('--isolate needs a CUDA version, and the selection is `system`', 'Name one: cudaenv exec --isolate --cuda 12.4 -- CMD');
      const {runIsolated} = await import('../core/link/isolate.js');
      process.exitCode = await runIsolated({versionDir: dir, command, args, env}, flags.cuda ?? dir.split('/').pop()!);
      return;
    }
    // The check line is for a person at a terminal; scripts and pipelines keep a clean stderr.
    if (dir && process.stderr.isTTY) await (await import('../core/shell/switch-check.js')).reportSwitchCheck(this.paths, dir, env);
    try {
      process.exitCode = await runForeground(command, args, env);
    } catch (error) {
      throw (flags.cuda === undefined ? versionAsCommand(error, command, args) : undefined) ?? error;
    }
  }
}

/**
 * nvm's habit (`nvm exec 18 node app.js`): a version written where exec takes the command. Only
 * once no such command exists (a program named 12.4 still runs), the error says how to write it.
 */
function versionAsCommand(error: unknown, command: string, words: string[]): CudaenvError | undefined {
  // `cudaenv exec 13.0 -- nvcc --version`: the `--` belongs before the command, where the hint puts it.
  const dashed = words[0] === '--';
  const args = dashed ? words.slice(1) : words;
  if (!(error instanceof CudaenvError) || error.code !== 'command-not-found' || args.length === 0) return undefined;
  const kind = tryParseSpec(command)?.kind;
  const version = kind === 'version' || kind === 'latest' || kind === 'system' ? command : prefixedVersion(command);
  if (version === undefined) return undefined;
  return new CudaenvError(error.message, {
    hint: `To run ${args[0]} with CUDA ${version}, name the version with --cuda: cudaenv exec --cuda ${version} ${dashed ? '-- ' : ''}${args.map(quoteSh).join(' ')}`,
    exitCode: error.exitCode, code: error.code,
  });
}
