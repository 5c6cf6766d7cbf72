import {PosixFamilyShell} from './posix-family.js';

export class BashShell extends PosixFamilyShell {
  readonly name = 'bash' as const;

  protected readFile(): string {
    // `read -N` stops after 4097 bytes (C locale: bytes, not characters): a huge file costs nothing.
    return `_cudaenv_readfile() {
  local LC_ALL=C
  _cudaenv_c=
  IFS= read -r -N 4097 _cudaenv_c < "$1" 2>/dev/null
  return 0
}`;
  }

  protected installHook(): string {
    // PROMPT_COMMAND may be a string or (bash >= 5.1) an array: keep what the user had, run
    // first so that the user's commands still see the status of the last command.
    return `if [[ -n \${PROMPT_COMMAND+x} && \${PROMPT_COMMAND@a} == *a* ]]; then
  case " \${PROMPT_COMMAND[*]} " in *" _cudaenv_hook "*) ;; *) PROMPT_COMMAND=(_cudaenv_hook "\${PROMPT_COMMAND[@]}") ;; esac
else
  case ";\${PROMPT_COMMAND-};" in
    *";_cudaenv_hook;"*) ;;
    ";;") PROMPT_COMMAND=_cudaenv_hook ;;
    *) PROMPT_COMMAND="_cudaenv_hook;\${PROMPT_COMMAND}" ;;
  esac
fi
`;
  }
}
