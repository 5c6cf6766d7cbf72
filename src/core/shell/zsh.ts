import {PosixFamilyShell} from './posix-family.js';

export class ZshShell extends PosixFamilyShell {
  readonly name = 'zsh' as const;

  protected readFile(): string {
    // \`read -k 4097\` reads at most 4097 bytes (C locale) from the redirected file; zsh keeps
    // NUL bytes, which are marked with \\001 so that the parser refuses them as binary data.
    return `_cudaenv_readfile() {
  local LC_ALL=C
  _cudaenv_c=
  IFS= read -r -k 4097 -u 0 _cudaenv_c < "$1" 2>/dev/null
  [[ $_cudaenv_c != *$'\\0'* ]] || _cudaenv_c+=$'\\001'
  return 0
}`;
  }

  protected installHook(): string {
    // precmd runs before every prompt (it sees cd, edits of .cuda-version and `export`);
    // chpwd makes a cd inside a function or script-like line switch at once as well.
    // The shared code is written for default zsh options: run it under \`emulate -L zsh\` so
    // that a user's nounset, ksh_arrays or sh_word_split cannot change its meaning. The hook
    // keeps $? for the prompt (emulate itself resets it).
    return `functions[_cudaenv_hook_body]=\${functions[_cudaenv_hook]}
_cudaenv_hook() { local st=$?; emulate -L zsh; _cudaenv_hook_body; return $st; }
functions[_cudaenv_cli]=\${functions[cudaenv]}
cudaenv() { emulate -L zsh; _cudaenv_cli "$@"; }
autoload -Uz add-zsh-hook
add-zsh-hook precmd _cudaenv_hook
add-zsh-hook chpwd _cudaenv_hook
`;
  }
}
