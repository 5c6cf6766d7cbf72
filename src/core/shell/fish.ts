import {quoteFish} from './quote.js';
import {assertLabel, CODE_MARKER, shellScript, type InitOptions, type Shell} from './shell.js';

export class FishShell implements Shell {
  readonly name = 'fish' as const;

  init(options: InitOptions): string {
    return [
      '# cudaenv fish integration: `cudaenv init fish | source` in ~/.config/fish/config.fish',
      `set -g _CUDAENV_BIN ${quoteFish(options.bin)}`,
      `set -g _CUDAENV_DEFAULT_DIR ${quoteFish(options.defaultDir)}`,
      shellScript('cudaenv.fish'),
    ].join('\n');
  }

  use(label: string, policy: 'prepend' | 'none'): string {
    const l = quoteFish(assertLabel(label));
    return [
      CODE_MARKER,
      `_cudaenv_switch ${l} ${policy === 'none' ? 'none' : 'prepend'} pin`,
      '_cudaenv_keynow; set -g _cudaenv_key "$_cudaenv_k"',
      `_cudaenv_report ${l}`,
      '',
    ].join('\n');
  }

  deactivate(): string {
    return `${CODE_MARKER}\n_cudaenv_deactivate; _cudaenv_keynow; set -g _cudaenv_key "$_cudaenv_k"\n`;
  }

  quote(value: string): string {
    return quoteFish(value);
  }
}
