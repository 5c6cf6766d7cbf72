# cudaenv shell integration, bash part (after posix.sh): the file reader, cd/pushd/popd, the prompt hook.

# At most 4097 bytes (C locale: bytes, not characters), and never past a NUL byte: bash
# drops NULs, so a file of zeros would otherwise be read to its end at every prompt.
# Stopping at a NUL before 4097 bytes marks the content with \001, which the parser
# refuses as binary data, as the CLI does.
_cudaenv_readfile() {
  local LC_ALL=C
  _cudaenv_c=
  if IFS= read -r -d '' -n 4097 _cudaenv_c < "$1" 2>/dev/null && [ ${#_cudaenv_c} -lt 4097 ]; then
    _cudaenv_c+=$'\001'
  fi
  return 0
}

# bash has no chpwd hook: as fnm does, cd, pushd and popd run the hook themselves, so that
# `cd proj && nvcc`, a function that cds and `(cd proj && nvcc)` get the project's version
# at once (zsh's chpwd and fish's PWD event do the same there). A cd, pushd or popd the user
# defined as a function is kept and called; loading this file twice wraps once.
_cudaenv_wrap() {
  local def
  case " ${_cudaenv_wrapped-} " in *" $1 "*) return 0 ;; esac
  if declare -F "$1" >/dev/null; then
    def=$(declare -f "$1")
    eval "_cudaenv_user_$1${def#"$1"}"
    eval "$1() { _cudaenv_user_$1 \"\$@\" || return; _cudaenv_hook; }"
  else
    eval "$1() { builtin $1 \"\$@\" || return; _cudaenv_hook; }"
  fi
  _cudaenv_wrapped="${_cudaenv_wrapped-} $1"
}
_cudaenv_wrap cd; _cudaenv_wrap pushd; _cudaenv_wrap popd

# And at every prompt, for everything else that changes the directory or the version file.
# PROMPT_COMMAND may be a string or (bash >= 5.1) an array: keep what the user had, run
# first so that the user's commands still see the status of the last command. ${var@a} is
# bash 4.4's: older bash (CentOS 7 has 4.2, and its /etc/bashrc sets PROMPT_COMMAND) stops
# reading this file at it, so it is asked only where an array can be PROMPT_COMMAND at all.
if (( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501 )) && [[ -n ${PROMPT_COMMAND+x} && ${PROMPT_COMMAND@a} == *a* ]]; then
  case " ${PROMPT_COMMAND[*]} " in *" _cudaenv_hook "*) ;; *) PROMPT_COMMAND=(_cudaenv_hook "${PROMPT_COMMAND[@]}") ;; esac
else
  case ";${PROMPT_COMMAND-};" in
    *";_cudaenv_hook;"*) ;;
    ";;") PROMPT_COMMAND=_cudaenv_hook ;;
    *) PROMPT_COMMAND="_cudaenv_hook;${PROMPT_COMMAND}" ;;
  esac
fi
