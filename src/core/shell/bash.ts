import {PosixFamilyShell} from './posix-family.js';

export class BashShell extends PosixFamilyShell {
  readonly name = 'bash' as const;

  protected readFile(): string {
    // At most 4097 bytes (C locale: bytes, not characters), and never past a NUL byte: bash
    // drops NULs, so a file of zeros would otherwise be read to its end at every prompt.
    // Stopping at a NUL before 4097 bytes marks the content with \\001, which the parser
    // refuses as binary data, as the CLI does.
    return `_cudaenv_readfile() {
  local LC_ALL=C
  _cudaenv_c=
  if IFS= read -r -d '' -n 4097 _cudaenv_c < "$1" 2>/dev/null && [ \${#_cudaenv_c} -lt 4097 ]; then
    _cudaenv_c+=$'\\001'
  fi
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
