import {quoteSh} from '../text/quote.js';
import {HOOK_MARKER, SAVED_VARS, SHARED_STATE, SHELL_LAYER, VARS, type HookInfo} from './names.js';
import {hookLayout, goneWarning} from './layout.js';

/*
 * POSIX sh: conda and micromamba source `.sh` hooks in bash, zsh and plain /bin/sh (dash),
 * so no bashisms (no arrays, [[ ]], local, ${x//}). Every expansion of a variable that may be
 * unset uses ${X-} / ${X+x} / ${X:+...} so `set -u` is safe, every statement is inside
 * if/fi so `set -e` cannot stop a sourcing shell, and the scripts unset their temporaries.
 */

const TEMPS = '_cudaenv_dir _cudaenv_bin _cudaenv_lib _cudaenv_rest _cudaenv_out _cudaenv_el _cudaenv_found _cudaenv_h _cudaenv_li';

/** Removes the first entry equal to $entryVar (when that is not empty) from the colon list in `name`, keeping empty entries. */
function dropEntry(name: string, entryVar: string): string {
  return `if [ -n "\${${name}+x}" ] && [ -n "\${${entryVar}-}" ]; then
  _cudaenv_rest="\${${name}}:"; _cudaenv_out=; _cudaenv_found=
  while [ -n "$_cudaenv_rest" ]; do
    _cudaenv_el="\${_cudaenv_rest%%:*}"
    _cudaenv_rest="\${_cudaenv_rest#*:}"
    if [ -z "$_cudaenv_found" ] && [ "x$_cudaenv_el" = "x\${${entryVar}-}" ]; then _cudaenv_found=1; else _cudaenv_out="$_cudaenv_out:$_cudaenv_el"; fi
  done
  if [ -n "$_cudaenv_found" ]; then export ${name}="\${_cudaenv_out#:}"; fi
fi`;
}

const saved = (v: string) => `_CUDAENV_${v}_SAVED`;

/** A list that is empty and was unset before the first layer opened becomes unset again. */
function unsetIfEmpty(name: string): string {
  return `if [ -z "\${${name}-}" ] && [ "\${${saved(name)}-u}" = u ]; then unset ${name}; fi`;
}

function restore(name: string): string {
  return `case "\${${saved(name)}-u}" in x*) export ${name}="\${${saved(name)}#x}" ;; *) unset ${name} ;; esac`;
}

/**
 * The shared switch of shims/shell/posix.sh (_cudaenv_effective + _cudaenv_apply) in POSIX sh:
 * puts the effective layer's version on the variables, replacing exactly the entries put there
 * before; with no layer left, everything is as before the first one opened.
 */
function applySh(): string {
  const {applied, home, lib} = SHELL_LAYER;
  return `if [ -n "\${${applied}-}" ] && { [ -n "\${CUDAENV_VERSION-}" ] || [ -z "\${${VARS.pathAdded}-}" ]; }; then
  _cudaenv_h="\${${home}-}"; _cudaenv_li="\${${lib}-}"
elif [ -n "\${${VARS.pathAdded}-}" ]; then
  _cudaenv_h="\${${VARS.pathAdded}%/bin}"; _cudaenv_li="\${${VARS.ldAdded}-}"
else
  _cudaenv_h=; _cudaenv_li=
fi
if [ -z "\${_CUDAENV_PATH_SAVED-}" ] && [ -n "$_cudaenv_h" ]; then
${SAVED_VARS.map((v) => `  if [ -n "\${${v}+x}" ]; then export ${saved(v)}="x$${v}"; else export ${saved(v)}=u; fi`).join('\n')}
fi
if [ -n "\${_CUDAENV_PATH_SAVED-}" ]; then
${dropEntry('PATH', '_CUDAENV_PATH_ADDED')}
${dropEntry('LD_LIBRARY_PATH', '_CUDAENV_LD_LIBRARY_PATH_ADDED')}
  if [ -n "$_cudaenv_h" ]; then
    export PATH="$_cudaenv_h/bin\${PATH:+:$PATH}"
    export _CUDAENV_PATH_ADDED="$_cudaenv_h/bin"
    export _CUDAENV_LD_LIBRARY_PATH_ADDED="$_cudaenv_li"
    if [ -n "$_cudaenv_li" ]; then export LD_LIBRARY_PATH="$_cudaenv_li\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
    ${unsetIfEmpty('LD_LIBRARY_PATH')}
    export CUDA_HOME="$_cudaenv_h"
    export CUDA_PATH="$_cudaenv_h"
  else
    export _CUDAENV_PATH_ADDED=
    export _CUDAENV_LD_LIBRARY_PATH_ADDED=
    ${unsetIfEmpty('PATH')}
    ${unsetIfEmpty('LD_LIBRARY_PATH')}
    ${restore('CUDA_HOME')}
    ${restore('CUDA_PATH')}
  fi
  if [ -z "\${${applied}-}" ] && [ -z "\${${VARS.pathAdded}-}" ]; then
    unset ${SHARED_STATE.join(' ')}
  fi
fi`;
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
  return `_cudaenv_dir=${quoteSh(info.toolkit)}
_cudaenv_bin=${quoteSh(bin)}
_cudaenv_lib=${quoteSh(lib ?? '')}
if [ -d "$_cudaenv_dir" ]; then
  export ${VARS.pathAdded}="$_cudaenv_bin"
  export ${VARS.ldAdded}="$_cudaenv_lib"
else
  unset ${VARS.pathAdded} ${VARS.ldAdded}
  printf '%s\\n' ${quoteSh(goneWarning(info))} >&2
fi
${applySh()}
unset ${TEMPS}
`;
}

/**
 * The deactivation logic; independent of the version (it closes the conda layer). On a switch
 * or reactivation conda computed the PATH it exports after this script before the script ran
 * (conda/conda#3915; $CONDA_PREFIX/bin is then still on PATH): the variables are left as they
 * are, whole, for the next activation script or the shell's prompt hook to switch.
 */
export function deactivateShBody(): string {
  return `if [ -n "\${${VARS.pathAdded}+x}" ]; then
  unset ${VARS.pathAdded} ${VARS.ldAdded}
  _cudaenv_found=
  if [ -n "\${CONDA_PREFIX-}" ]; then
    case ":\${PATH-}:" in
      *":$CONDA_PREFIX/bin:"*) _cudaenv_found=1 ;;
    esac
  fi
  if [ -z "$_cudaenv_found" ]; then
${applySh()}
  fi
fi
unset ${TEMPS}
`;
}
