import {PosixFamilyShell} from './posix-family.js';

/** bash: shims/shell/posix.sh and shims/shell/bash.sh (reader, cd/pushd/popd, PROMPT_COMMAND). */
export class BashShell extends PosixFamilyShell {
  readonly name = 'bash' as const;
}
