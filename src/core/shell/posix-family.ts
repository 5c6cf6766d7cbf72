import {quoteSh} from '../text/quote.js';
import {assertLabel, CODE_MARKER, shellScript, shellScriptPath, type InitOptions, type Shell, type ShellName, type UseOptions} from './shell.js';

/**
 * bash and zsh share shims/shell/posix.sh; each adds its own file (shims/shell/bash.sh,
 * zsh.sh): the file reader, and the hooks (bash: cd/pushd/popd and PROMPT_COMMAND; zsh:
 * chpwd and precmd).
 */
export abstract class PosixFamilyShell implements Shell {
  abstract readonly name: ShellName;

  private settings(options: InitOptions): string[] {
    return [
      `_CUDAENV_SHELL=${this.name}`,
      `_CUDAENV_BIN=${quoteSh(options.bin)}`,
      `_CUDAENV_DEFAULT_DIR=${quoteSh(options.defaultDir)}`,
    ];
  }

  init(options: InitOptions): string {
    return [
      `# cudaenv ${this.name} integration: eval "$(cudaenv init ${this.name})" in ~/.${this.name}rc`,
      ...this.settings(options),
      shellScript('posix.sh'),
      shellScript(`${this.name}.sh`),
    ].join('\n');
  }

  startFile(options: InitOptions): string {
    const files = [shellScriptPath('posix.sh'), shellScriptPath(`${this.name}.sh`)].map(quoteSh);
    return [
      `# cudaenv ${this.name} integration, written by \`cudaenv init ${this.name}\` (and rewritten whenever it runs).`,
      `# ~/.${this.name}rc sources it: . "\${CUDAENV_DIR:-$HOME/.cudaenv}/shell/init.${this.name}" 2>/dev/null || eval "$(cudaenv init ${this.name})"`,
      '# It sets this installation\'s settings and sources its shell code, so a new shell starts no',
      '# Node.js process and an upgrade in place takes effect at once. Where those files have gone',
      '# (cudaenv moved or removed) it returns 1, and the rc line falls back to `cudaenv init`,',
      '# which writes this file again.',
      ...this.settings(options),
      `if [ -r ${files[0]} ] && [ -r ${files[1]} ] && [ -f ${quoteSh(options.bin)} ]; then . ${files[0]} && . ${files[1]}; else return 1; fi`,
      '',
    ].join('\n');
  }

  use(label: string, policy: 'prepend' | 'none', options: UseOptions = {}): string {
    const l = quoteSh(assertLabel(label));
    return [
      CODE_MARKER,
      '_cudaenv_mark',
      `_cudaenv_switch ${l} ${policy === 'none' ? 'none' : 'prepend'} pin`,
      '_cudaenv_keynow; _cudaenv_key=$_cudaenv_k',
      ...(options.quiet ? [] : ['_cudaenv_note use']),
      `_cudaenv_report ${l}`,
      ...(options.json === undefined ? [] : [`printf '%s\\n' ${quoteSh(options.json)}`]),
      '',
    ].join('\n');
  }

  deactivate(options: UseOptions = {}): string {
    return `${CODE_MARKER}\n_cudaenv_mark; _cudaenv_deactivate; _cudaenv_keynow; _cudaenv_key=$_cudaenv_k\n${options.quiet ? '' : '_cudaenv_note deactivate\n'}`;
  }

  quote(value: string): string {
    return quoteSh(value);
  }
}
