import {PosixFamilyShell} from './posix-family.js';

/** zsh: shims/shell/posix.sh and shims/shell/zsh.sh (reader, chpwd and precmd). */
export class ZshShell extends PosixFamilyShell {
  readonly name = 'zsh' as const;
}
