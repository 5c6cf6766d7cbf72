# cudaenv shell integration, zsh part (after posix.sh): the file reader and the hooks.

# `read -k 4097` reads at most 4097 bytes (C locale) from the redirected file; zsh keeps
# NUL bytes, which are marked with \001 so that the parser refuses them as binary data.
_cudaenv_readfile() {
  local LC_ALL=C
  _cudaenv_c=
  IFS= read -r -k 4097 -u 0 _cudaenv_c < "$1" 2>/dev/null
  [[ $_cudaenv_c != *$'\0'* ]] || _cudaenv_c+=$'\001'
  return 0
}

# precmd runs before every prompt (it sees edits of .cuda-version and `export`); chpwd makes
# cd, pushd and popd switch at once, also inside a function, a subshell or a one-line `&&`.
# The shared code is written for default zsh options: run it under `emulate -L zsh` so
# that a user's nounset, ksh_arrays or sh_word_split cannot change its meaning. The hook
# keeps $? for the prompt (emulate itself resets it). Loading this file twice wraps once.
if (( ! ${+functions[_cudaenv_hook_body]} )) || [[ ${functions[_cudaenv_hook]} != *_cudaenv_hook_body* ]]; then
  functions[_cudaenv_hook_body]=${functions[_cudaenv_hook]}
  _cudaenv_hook() { local st=$?; emulate -L zsh; _cudaenv_hook_body; return $st; }
fi
if (( ! ${+functions[_cudaenv_cli]} )) || [[ ${functions[cudaenv]} != *_cudaenv_cli* ]]; then
  functions[_cudaenv_cli]=${functions[cudaenv]}
  cudaenv() { emulate -L zsh; _cudaenv_cli "$@"; }
fi
# What add-zsh-hook does, without autoloading it (a search of $fpath in every new shell).
() {
  emulate -L zsh
  (( ${precmd_functions[(Ie)_cudaenv_hook]} )) || precmd_functions+=(_cudaenv_hook)
  (( ${chpwd_functions[(Ie)_cudaenv_hook]} )) || chpwd_functions+=(_cudaenv_hook)
}
