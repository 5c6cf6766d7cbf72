import {quoteCsh, quoteFish} from '../text/quote.js';
import {SHARED_STATE, VARS, type HookInfo} from './names.js';
import {activateShBody, deactivateShBody, hookHeader} from './script-sh.js';

/*
 * fish and csh hooks run the POSIX logic in a /bin/sh child and apply the variables it
 * leaves, printed as fish or csh commands. One implementation of the save/restore rules
 * serves every shell, and csh, which cannot split a colon list holding spaces or quotes
 * without help, needs no list handling of its own. Cost: one sh process per (de)activation.
 */

/** Every variable a hook may change: the four it manages, the conda layer and the state it shares with the shell integration. */
export const MANAGED_VARS: readonly string[] = ['PATH', 'LD_LIBRARY_PATH', 'CUDA_HOME', 'CUDA_PATH', ...Object.values(VARS), ...SHARED_STATE];

/**
 * sh code printing each managed variable as a command of the target shell: set with its
 * exact value, or unset. The quoting rules are those of quoteFish / quoteCsh, in sh.
 */
function emitter(target: 'fish' | 'csh'): string {
  const set = target === 'fish' ? 'set -gx' : 'setenv';
  const unset = target === 'fish' ? 'set -e' : 'unsetenv';
  // Per character: fish escapes \ and ' inside single quotes; csh closes the quote for ',
  // and escapes ! (history) and newline.
  const cases = target === 'fish'
    ? `"'") _cudaenv_r="$_cudaenv_r\\\\'" ;;
      '\\') _cudaenv_r="$_cudaenv_r\\\\\\\\" ;;`
    : `"'") _cudaenv_r="$_cudaenv_r'\\\\''" ;;
      '!') _cudaenv_r="$_cudaenv_r\\\\!" ;;
      '
') _cudaenv_r="$_cudaenv_r\\\\
" ;;`;
  return `
_cudaenv_quote() {
  _cudaenv_s=$1; _cudaenv_r=
  while [ -n "$_cudaenv_s" ]; do
    _cudaenv_t=\${_cudaenv_s#?}; _cudaenv_c=\${_cudaenv_s%"$_cudaenv_t"}; _cudaenv_s=$_cudaenv_t
    case $_cudaenv_c in
      ${cases}
      *) _cudaenv_r="$_cudaenv_r$_cudaenv_c" ;;
    esac
  done
  printf "'%s'" "$_cudaenv_r"
}
for _cudaenv_v in ${MANAGED_VARS.join(' ')}; do
  if eval "[ -n \\"\\\${$_cudaenv_v+x}\\" ]"; then
    printf '${set} %s ' "$_cudaenv_v"
    eval "_cudaenv_quote \\"\\$$_cudaenv_v\\""
    printf '\\n'
  else
    printf '${unset} %s\\n' "$_cudaenv_v"
  fi
done
`;
}

function fishScript(body: string): string {
  return `/bin/sh -c ${quoteFish(body + emitter('fish'))} | source\n`;
}

/**
 * csh: backquotes cannot carry this code (inside them csh re-reads quotes, `!` and globs), and a
 * builtin cannot read a pipe (`| source` runs in a child), so the sh child writes the commands
 * into a file that csh sources. The file is in a directory `mktemp -d` creates for this one run
 * (a random name under $TMPDIR or /tmp, mode 0700, refusing what exists), never at a name another
 * user could guess and make first (issue 46: /tmp/cudaenv-conda.<pid> could be pre-created, and
 * the switch was then skipped). The child writes only into a directory that is this user's, and
 * csh sources the file only when the child succeeded; the directory is removed either way.
 */
function cshScript(body: string): string {
  const child = `umask 077
if [ $# -ne 1 ] || [ ! -d "$1" ] || [ -L "$1" ] || [ ! -O "$1" ]; then
  printf 'cudaenv: mktemp -d made no private temporary directory (is $TMPDIR, or /tmp where it is unset, writable?); the conda CUDA hook did nothing\\n' >&2
  exit 1
fi
set -C
( ${body}
${emitter('csh')}
) > "$1/commands.csh"
`;
  return `set _cudaenv_tmp = "\`mktemp -d -t cudaenv-conda.XXXXXXXXXX\`"
/bin/sh -c ${quoteCsh(child)} sh $_cudaenv_tmp:q
if ( $status == 0 ) then
  source $_cudaenv_tmp:q/commands.csh
endif
if ( $#_cudaenv_tmp == 1 ) then
  /bin/rm -rf -- $_cudaenv_tmp:q
endif
unset _cudaenv_tmp
`;
}

export function activateFish(info: HookInfo): string {
  return hookHeader('activate', 'fish; the logic runs in /bin/sh', info) + fishScript(activateShBody(info));
}

export function deactivateFish(info: HookInfo): string {
  return hookHeader('deactivate', 'fish; the logic runs in /bin/sh', info) + fishScript(deactivateShBody());
}

export function activateCsh(info: HookInfo): string {
  return hookHeader('activate', 'csh/tcsh; the logic runs in /bin/sh', info) + cshScript(activateShBody(info));
}

export function deactivateCsh(info: HookInfo): string {
  return hookHeader('deactivate', 'csh/tcsh; the logic runs in /bin/sh', info) + cshScript(deactivateShBody());
}

