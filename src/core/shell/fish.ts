import {quoteFish} from '../text/quote.js';
import {assertLabel, CODE_MARKER, shellScript, shellScriptPath, type InitOptions, type Shell, type UseOptions} from './shell.js';

export class FishShell implements Shell {
  readonly name = 'fish' as const;

  private settings(options: InitOptions): string[] {
    return [
      `set -g _CUDAENV_BIN ${quoteFish(options.bin)}`,
      `set -g _CUDAENV_DEFAULT_DIR ${quoteFish(options.defaultDir)}`,
    ];
  }

  init(options: InitOptions): string {
    return [
      '# cudaenv fish integration: `cudaenv init fish | source` in ~/.config/fish/config.fish',
      ...this.settings(options),
      shellScript('cudaenv.fish'),
    ].join('\n');
  }

  startFile(options: InitOptions): string {
    const file = quoteFish(shellScriptPath('cudaenv.fish'));
    return [
      '# cudaenv fish integration, written by `cudaenv init fish` (and rewritten whenever it runs).',
      '# config.fish sources it: source ~/.cudaenv/shell/init.fish 2>/dev/null; or cudaenv init fish | source',
      '# It sets this installation\'s settings and sources its shell code, so a new shell starts no',
      '# Node.js process and an upgrade in place takes effect at once. Where those files have gone',
      '# (cudaenv moved or removed) it returns 1, and the line falls back to `cudaenv init`,',
      '# which writes this file again.',
      ...this.settings(options),
      // No `return` outside a function: fish before 3.4 refuses it (Ubuntu 22.04 has 3.3).
      `if test -r ${file}; and test -f ${quoteFish(options.bin)}`,
      `    source ${file}`,
      'else',
      '    false',
      'end',
      '',
    ].join('\n');
  }

  use(label: string, policy: 'prepend' | 'none', options: UseOptions = {}): string {
    const l = quoteFish(assertLabel(label));
    return [
      CODE_MARKER,
      '_cudaenv_mark',
      `_cudaenv_switch ${l} ${policy === 'none' ? 'none' : 'prepend'} pin`,
      '_cudaenv_keynow; set -g _cudaenv_key "$_cudaenv_k"',
      ...(options.quiet ? [] : ['_cudaenv_note use']),
      `_cudaenv_report ${l}`,
      ...(options.json === undefined ? [] : [`printf '%s\\n' ${quoteFish(options.json)}`]),
      '',
    ].join('\n');
  }

  deactivate(options: UseOptions = {}): string {
    return `${CODE_MARKER}\n_cudaenv_mark; _cudaenv_deactivate; _cudaenv_keynow; set -g _cudaenv_key "$_cudaenv_k"\n${options.quiet ? '' : '_cudaenv_note deactivate\n'}`;
  }

  quote(value: string): string {
    return quoteFish(value);
  }
}
