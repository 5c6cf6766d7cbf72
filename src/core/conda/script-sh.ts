import {quoteSh} from '../text/quote.js';
import {HOOK_MARKER, VARS, type HookInfo} from './names.js';
import {hookLayout, goneWarning} from './layout.js';

/*
 * POSIX sh: conda and micromamba source `.sh` hooks in bash, zsh and plain /bin/sh (dash),
 * so no bashisms (no arrays, [[ ]], local, ${x//}). Every expansion of a variable that may be
 * unset uses ${X-} / ${X+x} / ${X:+...} so `set -u` is safe, every statement is inside
 * if/fi so `set -e` cannot stop a sourcing shell, and the scripts unset their temporaries.
 */

const TEMPS = '_cudaenv_dir _cudaenv_bin _cudaenv_lib _cudaenv_rest _cudaenv_out _cudaenv_el _cudaenv_found';

/** Removes the first entry equal to $entryVar from the colon list in `name`, keeping empty entries. */
function dropEntry(name: string, entryVar: string): string {
  return `if [ -n "\${${name}+x}" ]; then
  _cudaenv_rest="\${${name}}:"; _cudaenv_out=; _cudaenv_found=
  while [ -n "$_cudaenv_rest" ]; do
    _cudaenv_el="\${_cudaenv_rest%%:*}"
    _cudaenv_rest="\${_cudaenv_rest#*:}"
    if [ -z "$_cudaenv_found" ] && [ "x$_cudaenv_el" = "x\${${entryVar}-}" ]; then _cudaenv_found=1; else _cudaenv_out="$_cudaenv_out:$_cudaenv_el"; fi
  done
  if [ -n "$_cudaenv_found" ]; then export ${name}="\${_cudaenv_out#:}"; fi
fi`;
}

/** After removing our entry: a list that was unset before activation and is empty again becomes unset. */
function unsetIfEmpty(name: string, flag: string): string {
  return `if [ -n "\${${flag}-}" ] && [ -z "\${${name}-}" ]; then unset ${name}; fi`;
}

/** One line of JSON; `!` escaped because tcsh applies history substitution even to comment lines. */
export function encodeMarker(info: HookInfo): string {
  return JSON.stringify(info).replaceAll('!', '\\u0021');
}

/** The comment block every hook file starts with; `status` reads the marker line. */
export function hookHeader(kind: 'activate' | 'deactivate', shellNote: string, info: HookInfo): string {
  return `# cudaenv conda hook (${kind}; ${shellNote}).
# Written by \`cudaenv conda hook install\`: reinstall or uninstall it rather than editing.
${HOOK_MARKER}${encodeMarker(info)}
`;
}

export function activateSh(info: HookInfo): string {
  return hookHeader('activate', 'POSIX sh, sourced by bash, zsh and dash', info) + activateShBody(info);
}

export function deactivateSh(info: HookInfo): string {
  return hookHeader('deactivate', 'POSIX sh, sourced by bash, zsh and dash', info) + deactivateShBody();
}

/** The activation logic; also what the fish and csh hooks run in a /bin/sh child. */
export function activateShBody(info: HookInfo): string {
  const {bin, lib} = hookLayout(info);
  const ld = lib === undefined ? '' : `
  export LD_LIBRARY_PATH="$_cudaenv_lib\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export ${VARS.ldAdded}="$_cudaenv_lib"`;
  return `_cudaenv_dir=${quoteSh(info.toolkit)}
_cudaenv_bin=${quoteSh(bin)}
_cudaenv_lib=${quoteSh(lib ?? '')}
if [ -n "\${${VARS.stalePath}+x}" ]; then
${dropEntry('PATH', VARS.stalePath)}
unset ${VARS.stalePath}
fi
if [ -d "$_cudaenv_dir" ]; then
  if [ -z "\${${VARS.saved}-}" ]; then
    if [ -n "\${CUDA_HOME+x}" ]; then export ${VARS.oldCudaHome}="$CUDA_HOME"; fi
    if [ -n "\${CUDA_PATH+x}" ]; then export ${VARS.oldCudaPath}="$CUDA_PATH"; fi
    if [ -z "\${PATH+x}" ]; then export ${VARS.pathUnset}=1; fi
    if [ -z "\${LD_LIBRARY_PATH+x}" ]; then export ${VARS.ldUnset}=1; fi
    export ${VARS.saved}=1
  fi
  if [ -n "\${${VARS.pathAdded}+x}" ]; then
${dropEntry('PATH', VARS.pathAdded)}
  unset ${VARS.pathAdded}
  fi
  if [ -n "\${${VARS.ldAdded}+x}" ]; then
${dropEntry('LD_LIBRARY_PATH', VARS.ldAdded)}
  unset ${VARS.ldAdded}
  ${unsetIfEmpty('LD_LIBRARY_PATH', VARS.ldUnset)}
  fi
  export PATH="$_cudaenv_bin\${PATH:+:$PATH}"
  export ${VARS.pathAdded}="$_cudaenv_bin"${ld}
  export CUDA_HOME="$_cudaenv_dir"
  export CUDA_PATH="$_cudaenv_dir"
else
  printf '%s\\n' ${quoteSh(goneWarning(info))} >&2
fi
unset ${TEMPS}
`;
}

/** The deactivation logic; independent of the version (it undoes what is recorded). */
export function deactivateShBody(): string {
  return `if [ -n "\${${VARS.saved}-}" ]; then
  if [ -n "\${${VARS.pathAdded}+x}" ]; then
${dropEntry('PATH', VARS.pathAdded)}
    if [ -n "\${CONDA_PREFIX-}" ]; then
      case ":\${PATH-}:" in
        *":$CONDA_PREFIX/bin:"*) export ${VARS.stalePath}="$${VARS.pathAdded}" ;;
      esac
    fi
    unset ${VARS.pathAdded}
  fi
  ${unsetIfEmpty('PATH', VARS.pathUnset)}
  if [ -n "\${${VARS.ldAdded}+x}" ]; then
${dropEntry('LD_LIBRARY_PATH', VARS.ldAdded)}
    unset ${VARS.ldAdded}
  fi
  ${unsetIfEmpty('LD_LIBRARY_PATH', VARS.ldUnset)}
  if [ -n "\${${VARS.oldCudaHome}+x}" ]; then export CUDA_HOME="$${VARS.oldCudaHome}"; unset ${VARS.oldCudaHome}; else unset CUDA_HOME; fi
  if [ -n "\${${VARS.oldCudaPath}+x}" ]; then export CUDA_PATH="$${VARS.oldCudaPath}"; unset ${VARS.oldCudaPath}; else unset CUDA_PATH; fi
  unset ${VARS.saved} ${VARS.pathUnset} ${VARS.ldUnset}
fi
unset ${TEMPS}
`;
}
