import {quoteSh} from './quote.js';
import {assertLabel, CODE_MARKER, shellScript, type InitOptions, type Shell, type ShellName} from './shell.js';

/** bash and zsh share shims/shell/posix.sh; each adds its file reader and prompt hook. */
export abstract class PosixFamilyShell implements Shell {
  abstract readonly name: ShellName;
  /** Defines `_cudaenv_readfile FILE` (-> _cudaenv_c, at most 4097 bytes, no process). */
  protected abstract readFile(): string;
  /** Installs `_cudaenv_hook` so it runs before every prompt, keeping the user's hooks. */
  protected abstract installHook(): string;

  init(options: InitOptions): string {
    return [
      `# cudaenv ${this.name} integration: eval "$(cudaenv init ${this.name})" in ~/.${this.name}rc`,
      `_CUDAENV_SHELL=${this.name}`,
      `_CUDAENV_BIN=${quoteSh(options.bin)}`,
      `_CUDAENV_DEFAULT_DIR=${quoteSh(options.defaultDir)}`,
      shellScript('posix.sh'),
      this.readFile(),
      this.installHook(),
    ].join('\n');
  }

  use(label: string, policy: 'prepend' | 'none'): string {
    const l = quoteSh(assertLabel(label));
    return [
      CODE_MARKER,
      `_cudaenv_switch ${l} ${policy === 'none' ? 'none' : 'prepend'} pin`,
      '_cudaenv_keynow; _cudaenv_key=$_cudaenv_k',
      `_cudaenv_report ${l}`,
      '',
    ].join('\n');
  }

  deactivate(): string {
    return `${CODE_MARKER}\n_cudaenv_deactivate; _cudaenv_keynow; _cudaenv_key=$_cudaenv_k\n`;
  }

  quote(value: string): string {
    return quoteSh(value);
  }
}
