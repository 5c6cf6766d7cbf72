# cudaenv shell integration: the part bash and zsh share. `cudaenv init bash|zsh` prints the
# settings (_CUDAENV_SHELL, _CUDAENV_BIN, _CUDAENV_DEFAULT_DIR), this file and bash.sh or zsh.sh
# (the shell's file reader and hooks); the file it writes in the store, init.bash|init.zsh,
# sets the same settings and sources these files from this installation.
#
# Rules this code keeps:
# - The prompt hook runs on shell builtins only: no command substitution, no external program.
#   It starts the CLI only when the version actually changes and the check result is not cached.
# - Data read from files (.cuda-version, the store) is parsed, never evaluated. `eval` appears
#   only with variable NAMES from the fixed list below, never with a value.
# - State lives in exported variables, so a child shell knows what was added. Two layers may
#   each want a version: this shell's (`cudaenv use`, the auto-switch) and an active conda
#   environment's cudaenv hook (src/core/conda/script-sh.ts writes the same logic in POSIX sh).
#   Only one version is ever on the variables, whole (bin on PATH, lib on LD_LIBRARY_PATH,
#   CUDA_HOME and CUDA_PATH), chosen as `cudaenv current` chooses: the shell's when
#   CUDAENV_VERSION is set, else the conda hook's, else the shell's auto-switched one.
#   Closing the layers in any order gives back the variables as they were before the first.
#   _CUDAENV_<VAR>_SAVED  "x<value>" if VAR was set before the first layer opened, "u" if unset
#   _CUDAENV_PATH_ADDED, _CUDAENV_LD_LIBRARY_PATH_ADDED  the entries on the variables now ('' none)
#   _CUDAENV_APPLIED  the shell layer: the version label (or "system") this shell is switched to
#   _CUDAENV_SHELL_HOME, _CUDAENV_SHELL_LIB  its directory and lib entry ('' for system / none)
#   _CUDAENV_CONDA_PATH_ADDED, _CUDAENV_CONDA_LD_ADDED  the conda layer: its bin and lib entry

_CUDAENV_CTL=$'\001\002\003\004\005\006\007\010\013\014\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037\177'
_CUDAENV_VERSION_RE='^(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,5}))?)?$'
# A suffixed label (12.4.1-local, `cudaenv add DIR --as`) too; its letters spelt out, as no locale may widen a range.
_CUDAENV_SPEC_RE='^(latest|system|(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,5}))?)?|(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,5})-[abcdefghijklmnopqrstuvwxyz][abcdefghijklmnopqrstuvwxyz0123456789]{0,15}|[A-Za-z][A-Za-z0-9_.-]{0,62})$'
_CUDAENV_KV_RE='^[a-z][a-z0-9_-]{0,31}=[A-Za-z0-9._+-]{0,64}$'
# Valid UTF-8 (bytes, C locale): the CLI and the shims refuse a file that is not UTF-8 text.
_CUDAENV_UTF8_RE=$'^([\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf][\x80-\xbf]|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf])*$'
_CUDAENV_NONE_RE='"ldLibraryPath"[[:space:]]*:[[:space:]]*"none"'
_CUDAENV_QUIET_RE='"quiet"[[:space:]]*:[[:space:]]*true'

_cudaenv_store() { _cudaenv_r=${CUDAENV_DIR:-$_CUDAENV_DEFAULT_DIR}; [ "$_cudaenv_r" = / ] || _cudaenv_r=${_cudaenv_r%/}; }

# A strict spec: what src/core/versions/spec.ts accepts (`default` is reserved).
_cudaenv_valid_spec() {
  [ "$1" != default ] && [[ $1 =~ $_CUDAENV_SPEC_RE ]]
}

# v12.4, cuda-12.4, CUDA12.4 (nvm's v18, /usr/local/cuda-12.4): the version
# (src/core/versions/spec.ts prefixedVersion) -> _cudaenv_b.
_cudaenv_prefixed() {
  local bare=$1
  case $bare in
    [vV][0-9]*) bare=${bare#?} ;;
    [cC][uU][dD][aA][-_][0-9]*) bare=${bare#?????} ;;
    [cC][uU][dD][aA][0-9]*) bare=${bare#????} ;;
    *) return 1 ;;
  esac
  [[ $bare =~ $_CUDAENV_VERSION_RE ]] || return 1
  _cudaenv_b=$bare
}

# The nearest .cuda-version at or above $PWD -> _cudaenv_f ('' when none). A link to nothing
# (a loop, a missing target) is found too (-L), and refused by _cudaenv_load, as the CLI refuses
# it: passing over it would switch to the file above it or to the global default.
_cudaenv_find() {
  local d=${PWD%/}
  _cudaenv_f=
  while :; do
    if [ -e "$d/.cuda-version" ] || [ -L "$d/.cuda-version" ]; then _cudaenv_f=$d/.cuda-version; return 0; fi
    [ -n "$d" ] || return 0
    d=${d%/*}
  done
}

# Reads FILE refusing what is not a readable regular file -> _cudaenv_c (content, at most
# 4097 bytes, so a huge file costs nothing) and _cudaenv_e (the problem, '' when none).
_cudaenv_load() {
  _cudaenv_c=
  _cudaenv_e=
  if [ -L "$1" ] && [ ! -e "$1" ]; then _cudaenv_e='is a symbolic link that cannot be followed (its target is missing or out of reach, or the links loop)'
  elif [ -d "$1" ]; then _cudaenv_e='is a directory, not a file'
  elif [ ! -f "$1" ]; then _cudaenv_e='is not a regular file (a FIFO, socket or device)'
  elif [ ! -r "$1" ]; then _cudaenv_e='cannot be read (permission denied)'
  else _cudaenv_readfile "$1"
  fi
}

# Parses a .cuda-version's text exactly as src/core/versions/version-file.ts does:
# the first line that is not blank or a comment is the spec; key=value lines may follow.
# -> _cudaenv_s (spec) or _cudaenv_e (the problem); status 1 on a problem.
_cudaenv_parse() {
  local LC_ALL=C
  local rest line n=0
  _cudaenv_s=
  _cudaenv_e=
  if [ "${#1}" -gt 4096 ]; then _cudaenv_e='holds more than 4096 bytes'; return 1; fi
  if [[ $1 == *["$_CUDAENV_CTL"]* ]]; then _cudaenv_e='contains control characters or binary data'; return 1; fi
  if ! [[ $1 =~ $_CUDAENV_UTF8_RE ]]; then _cudaenv_e='is not UTF-8 text (a binary file?)'; return 1; fi
  # Named as the CLI names it (a BOM would otherwise show up invisibly inside the quoted line).
  if [[ $1 == $'\xef\xbb\xbf'* ]]; then _cudaenv_e='starts with a byte-order mark (BOM); save it as UTF-8 without one'; return 1; fi
  rest=$1$'\n'
  while [ -n "$rest" ]; do
    line=${rest%%$'\n'*}
    rest=${rest#*$'\n'}
    n=$((n + 1))
    line=${line#"${line%%[![:space:]]*}"}
    line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] || continue
    case $line in '#'*) continue ;; esac
    if [ -z "$_cudaenv_s" ]; then
      if _cudaenv_valid_spec "$line"; then _cudaenv_s=$line
      else _cudaenv_e="line $n \"${line:0:40}\" is not a CUDA version spec"; return 1
      fi
    elif ! [[ $line =~ $_CUDAENV_KV_RE ]]; then
      _cudaenv_e="line $n \"${line:0:40}\" is neither a comment nor key=value"; return 1
    fi
  done
  [ -n "$_cudaenv_s" ] || { _cudaenv_e='holds no version spec'; return 1; }
}

# Removes the first occurrence of ENTRY from the colon list VALUE -> _cudaenv_r.
_cudaenv_rm_entry() {
  local v=$1 e=$2
  _cudaenv_r=$v
  [ -n "$e" ] || return 0
  if [ "$v" = "$e" ]; then _cudaenv_r=
  elif [ "${v#"$e":}" != "$v" ]; then _cudaenv_r=${v#"$e":}
  elif [[ $v == *":$e:"* ]]; then _cudaenv_r=${v%%":$e:"*}:${v#*":$e:"}
  elif [ "${v%":$e"}" != "$v" ]; then _cudaenv_r=${v%":$e"}
  fi
}

# ENTRY first in the colon list VALUE -> _cudaenv_r (an empty list gains no empty entry).
_cudaenv_prepend() {
  if [ -z "$1" ]; then _cudaenv_r=$2; else _cudaenv_r=$2:$1; fi
}

# Only the fixed names PATH LD_LIBRARY_PATH CUDA_HOME CUDA_PATH CUDAENV_VERSION reach eval.
_cudaenv_save() {
  eval "if [ -n \"\${$1+x}\" ]; then export _CUDAENV_$1_SAVED=\"x\$$1\"; else export _CUDAENV_$1_SAVED=u; fi"
}
_cudaenv_restore() {
  eval "case \${_CUDAENV_$1_SAVED-u} in x*) export $1=\"\${_CUDAENV_$1_SAVED#x}\" ;; *) unset $1 ;; esac"
}
# A list that ends up empty is unset again if it was unset before the first switch.
_cudaenv_setlist() {
  local was
  eval "was=\${_CUDAENV_$1_SAVED-u}"
  if [ -z "$2" ] && [ "$was" = u ]; then unset "$1"; else export "$1=$2"; fi
}

# The layer whose version the variables carry -> _cudaenv_h (its directory, '' for none) and
# _cudaenv_li (its lib entry, '' under the `none` policy): the shell's when CUDAENV_VERSION is
# set or no conda hook is active, else the conda hook's.
_cudaenv_effective() {
  if [ -n "${_CUDAENV_APPLIED-}" ] && { [ -n "${CUDAENV_VERSION-}" ] || [ -z "${_CUDAENV_CONDA_PATH_ADDED-}" ]; }; then
    _cudaenv_h=${_CUDAENV_SHELL_HOME-}; _cudaenv_li=${_CUDAENV_SHELL_LIB-}
  elif [ -n "${_CUDAENV_CONDA_PATH_ADDED-}" ]; then
    _cudaenv_h=${_CUDAENV_CONDA_PATH_ADDED%/bin}; _cudaenv_li=${_CUDAENV_CONDA_LD_ADDED-}
  else
    _cudaenv_h=; _cudaenv_li=
  fi
}

# Puts the effective layer's version on the variables, replacing exactly the entries put there
# before; with no layer left, everything is as before the first one opened.
_cudaenv_apply() {
  local p l
  _cudaenv_effective
  if [ -z "${_CUDAENV_PATH_SAVED-}" ]; then
    [ -n "$_cudaenv_h" ] || return 0
    _cudaenv_save PATH; _cudaenv_save LD_LIBRARY_PATH; _cudaenv_save CUDA_HOME
    _cudaenv_save CUDA_PATH; _cudaenv_save CUDAENV_VERSION
  fi
  _cudaenv_rm_entry "${PATH-}" "${_CUDAENV_PATH_ADDED-}"; p=$_cudaenv_r
  _cudaenv_rm_entry "${LD_LIBRARY_PATH-}" "${_CUDAENV_LD_LIBRARY_PATH_ADDED-}"; l=$_cudaenv_r
  if [ -n "$_cudaenv_h" ]; then
    _cudaenv_prepend "$p" "$_cudaenv_h/bin"
    export PATH="$_cudaenv_r" _CUDAENV_PATH_ADDED="$_cudaenv_h/bin" _CUDAENV_LD_LIBRARY_PATH_ADDED="$_cudaenv_li"
    if [ -n "$_cudaenv_li" ]; then _cudaenv_prepend "$l" "$_cudaenv_li"; export LD_LIBRARY_PATH="$_cudaenv_r"
    else _cudaenv_setlist LD_LIBRARY_PATH "$l"
    fi
    export CUDA_HOME="$_cudaenv_h" CUDA_PATH="$_cudaenv_h"
  else
    export _CUDAENV_PATH_ADDED= _CUDAENV_LD_LIBRARY_PATH_ADDED=
    _cudaenv_setlist PATH "$p"
    _cudaenv_setlist LD_LIBRARY_PATH "$l"
    _cudaenv_restore CUDA_HOME
    _cudaenv_restore CUDA_PATH
  fi
  if [ -z "${_CUDAENV_APPLIED-}" ] && [ -z "${_CUDAENV_CONDA_PATH_ADDED-}" ]; then
    unset _CUDAENV_PATH_SAVED _CUDAENV_LD_LIBRARY_PATH_SAVED _CUDAENV_CUDA_HOME_SAVED \
      _CUDAENV_CUDA_PATH_SAVED _CUDAENV_CUDAENV_VERSION_SAVED _CUDAENV_PATH_ADDED _CUDAENV_LD_LIBRARY_PATH_ADDED
  fi
}

# _cudaenv_apply only where the variables do not carry the effective layer's version already
# (a conda switch whose PATH conda exported after the hook's deactivate script, say).
_cudaenv_sync() {
  _cudaenv_effective
  if [ -n "$_cudaenv_h" ]; then
    [ "$_cudaenv_h/bin" = "${_CUDAENV_PATH_ADDED-}" ] && [ "$_cudaenv_li" = "${_CUDAENV_LD_LIBRARY_PATH_ADDED-}" ] && return 0
  else
    [ -n "${_CUDAENV_PATH_ADDED-}${_CUDAENV_LD_LIBRARY_PATH_ADDED-}" ] || return 0
  fi
  _cudaenv_apply
}

# _cudaenv_switch LABEL|system POLICY(prepend|none) MODE(pin|restore|keep): the shell layer.
# MODE says what CUDAENV_VERSION becomes: the label (`cudaenv use`), its value before the
# first switch (auto-switch), or unchanged (the user set it).
_cudaenv_switch() {
  local root dir
  _cudaenv_store; root=$_cudaenv_r
  if [ -z "${_CUDAENV_PATH_SAVED-}" ]; then
    _cudaenv_save PATH; _cudaenv_save LD_LIBRARY_PATH; _cudaenv_save CUDA_HOME
    _cudaenv_save CUDA_PATH; _cudaenv_save CUDAENV_VERSION
  fi
  if [ "$1" = system ]; then
    export _CUDAENV_SHELL_HOME= _CUDAENV_SHELL_LIB=
  else
    dir=$root/versions/$1
    export _CUDAENV_SHELL_HOME="$dir" _CUDAENV_SHELL_LIB=
    if [ "$2" != none ]; then
      if [ -d "$dir/lib64" ]; then export _CUDAENV_SHELL_LIB="$dir/lib64"; else export _CUDAENV_SHELL_LIB="$dir/lib"; fi
    fi
  fi
  case $3 in
    pin) export CUDAENV_VERSION="$1" ;;
    restore) _cudaenv_restore CUDAENV_VERSION ;;
  esac
  export _CUDAENV_APPLIED="$1"
  _cudaenv_apply
}

# Closes the shell layer: CUDAENV_VERSION as before the first switch, and the variables carry
# the conda hook's version if one is active, else are as before cudaenv; entries the user
# added meanwhile stay.
_cudaenv_deactivate() {
  [ -n "${_CUDAENV_APPLIED-}" ] || return 0
  _cudaenv_restore CUDAENV_VERSION
  unset _CUDAENV_APPLIED _CUDAENV_SHELL_HOME _CUDAENV_SHELL_LIB
  _cudaenv_apply
}

# Spec -> _cudaenv_r: the label, "system", or '' (not installed; _cudaenv_e may say why).
# Aliases are plain files under aliases/, versions come from switch/index (written by
# `cudaenv rehash` from the resolve/ links), so this lists no directory.
_cudaenv_resolve() {
  local spec=$1 root depth=0 label
  _cudaenv_store; root=$_cudaenv_r
  _cudaenv_r=
  _cudaenv_e=
  _cudaenv_gone=
  _cudaenv_idx=
  if [ -f "$root/switch/index" ]; then _cudaenv_readfile "$root/switch/index"; _cudaenv_idx=$_cudaenv_c; fi
  while :; do
    case $spec in
      system) _cudaenv_r=system; return 0 ;;
      latest|[0-9]*)
        _cudaenv_final=$spec
        case $_cudaenv_idx in
          *" $spec="*) label=${_cudaenv_idx#*" $spec="}; label=${label%%[[:space:]]*}
            if [ -d "$root/versions/$label" ]; then _cudaenv_r=$label; else _cudaenv_gone=$label; fi ;;
        esac
        return 0 ;;
    esac
    depth=$((depth + 1))
    if [ $depth -gt 8 ]; then _cudaenv_e="alias $1 loops or nests more than 8 deep"; return 1; fi
    _cudaenv_load "$root/aliases/$spec"
    # A site store's alias (issue 45: mirrored into site/aliases/) where the user has none of that name.
    if [ -n "$_cudaenv_e" ] && [ -f "$root/site/aliases/$spec" ]; then _cudaenv_load "$root/site/aliases/$spec"; fi
    if [ -n "$_cudaenv_e" ]; then _cudaenv_e=; _cudaenv_final=; return 0; fi
    spec=$_cudaenv_c
    spec=${spec#"${spec%%[![:space:]]*}"}
    spec=${spec%"${spec##*[![:space:]]}"}
    if ! _cudaenv_valid_spec "$spec"; then _cudaenv_e="alias file $root/aliases/${1} does not hold a version spec"; return 1; fi
  done
}

# Whether an active conda environment's cudaenv hook chose the toolkit (STORE_ROOT) -> _cudaenv_cl,
# its version: _CUDAENV_CONDA_PATH_ADDED is <store>/versions/LABEL/bin (anything else is ignored,
# as src/core/versions/select.ts and the shims ignore it).
_cudaenv_conda() {
  [ -n "${CONDA_PREFIX-}" ] && [ -n "${_CUDAENV_CONDA_PATH_ADDED-}" ] || return 1
  _cudaenv_cl=${_CUDAENV_CONDA_PATH_ADDED#"$1/versions/"}
  [ "$_cudaenv_cl" != "$_CUDAENV_CONDA_PATH_ADDED" ] && [ "${_cudaenv_cl%/bin}" != "$_cudaenv_cl" ] || return 1
  _cudaenv_cl=${_cudaenv_cl%/bin}
  case $_cudaenv_cl in [0-9]*.*.*) _cudaenv_valid_spec "$_cudaenv_cl" ;; *) return 1 ;; esac
}

# What decides the version now, read with builtins only -> _cudaenv_k. The index's generation
# (a hash of switch/index) is part of the key, so installing or removing a version is
# picked up at the next prompt.
_cudaenv_keynow() {
  local root
  _cudaenv_store; root=$_cudaenv_r
  _cudaenv_gen=
  if [ -f "$root/switch/generation" ]; then _cudaenv_readfile "$root/switch/generation"; _cudaenv_gen=$_cudaenv_c; fi
  if [ -n "${CUDAENV_VERSION-}" ]; then
    _cudaenv_k="e$CUDAENV_VERSION"
  elif _cudaenv_conda "$root"; then
    _cudaenv_k="c$_cudaenv_cl"
  else
    _cudaenv_find
    if [ -n "$_cudaenv_f" ]; then
      _cudaenv_load "$_cudaenv_f"
      _cudaenv_k="f$_cudaenv_f/$_cudaenv_e/$_cudaenv_c"
    elif [ -f "$root/global" ]; then
      _cudaenv_readfile "$root/global"
      _cudaenv_k="g$_cudaenv_c"
    elif [ -f "$root/site/global" ]; then
      _cudaenv_readfile "$root/site/global"
      _cudaenv_k="s$_cudaenv_c"
    else
      _cudaenv_k=d
    fi
  fi
  _cudaenv_k="$_cudaenv_k|$PWD|$root|$_cudaenv_gen"
}

# The prompt hook. Unchanged key: return at once (the common case, no process, no write).
_cudaenv_hook() {
  local st=$?
  _cudaenv_quiet=
  if [ -n "${_CUDAENV_PATH_ADDED-}" ] && [ ! -d "${_CUDAENV_PATH_ADDED%/bin}" ]; then _cudaenv_removed; fi
  _cudaenv_store
  if _cudaenv_sitecheck "$_cudaenv_r"; then _cudaenv_sitesync "$_cudaenv_r"; fi
  _cudaenv_keynow
  if [ "$_cudaenv_k" != "${_cudaenv_key-}" ]; then
    _cudaenv_key=$_cudaenv_k
    _cudaenv_synced=
    _cudaenv_autoswitch
    # The switch brought the site mirror up to date (_cudaenv_sitemiss): the key it left is the
    # one this prompt saw, so the next prompt that changes nothing does not switch (or say) again.
    if [ -n "$_cudaenv_synced" ]; then _cudaenv_keynow; _cudaenv_key=$_cudaenv_k; fi
  fi
  _cudaenv_quiet=
  return $st
}

# Whether the site stores (issue 45) changed since the store's mirror of them was made
# (switch/sites, written by the CLI: the CUDAENV_SITE_DIRS it was made for, then each site store
# and the first line of its switch/generation). Status 0: changed.
#
# The shell never touches a site store itself: a read of a network mount whose server is down
# blocks, and no builtin can be interrupted there, so the prompt would hang for good. What lies in
# the user's own store is compared with builtins at each prompt (a new CUDAENV_SITE_DIRS or list
# file: status 0). A prompt that changes nothing starts no process: by default the sites
# themselves are not looked at a prompt at all (a version the site adds is found when the hook
# cannot resolve the spec in effect, _cudaenv_sitemiss, or by any cudaenv command). Only with
# CUDAENV_SITE_CHECK_INTERVAL=N set (an opt-in; 0: at each prompt) are the sites' generations
# read, by one /bin/sh child (_cudaenv_siteprobe: builtins only, as the CLI's look in
# src/core/store/site.ts) killed at CUDAENV_SITE_TIMEOUT_MS, at most once every N seconds, timed
# by the shell's own clock ($SECONDS). A site that did not answer gives one line, and is looked
# at again a minute later.
_cudaenv_siteprobe='for d do g=-
  if [ -d "$d" ] && [ -r "$d" ] && [ -x "$d" ] && [ -d "$d/versions" ] && [ -r "$d/versions" ] && [ -x "$d/versions" ] && [ -e "$d/switch/generation" ] && [ ! -d "$d/switch/generation" ]; then IFS= read -r g < "$d/switch/generation" || :; g=${g:--}; fi
  printf "%s\t%s\n" "$d" "$g"
done'
_cudaenv_sitecheck() {
  local root=$1 f=${CUDAENV_SITE_DIRS_FILE:-/etc/cudaenv/site-dirs} rest body line want out ms every r st n src
  if [ ! -f "$root/switch/sites" ]; then
    [ -n "${CUDAENV_SITE_DIRS-}" ] || { [ -z "${CUDAENV_SITE_DIRS+x}" ] && [ -s "$f" ]; }
    return
  fi
  if [ -n "${CUDAENV_SITE_DIRS+x}" ]; then want="e$CUDAENV_SITE_DIRS"
  else want=u; [ ! "$f" -nt "$root/switch/sites" ] || return 0
  fi
  _cudaenv_readfile "$root/switch/sites"; rest=${_cudaenv_c%$'\001'}
  line=${rest%%$'\n'*}; rest=${rest#*$'\n'}
  [ "$line" = "$want" ] || return 0
  [ -n "$rest" ] || return 1
  every=${CUDAENV_SITE_CHECK_INTERVAL-}
  case $every in ''|*[!0-9]*) return 1 ;; esac
  [ -z "${_cudaenv_sitenext-}" ] || (( SECONDS >= _cudaenv_sitenext )) || return 1
  _cudaenv_sitenext=$((SECONDS + every))
  ms=${CUDAENV_SITE_TIMEOUT_MS-}
  case $ms in ''|0|*[!0-9]*) ms=3000 ;; esac
  r=$((ms % 1000 + 1000))
  body=$rest
  set --
  while [ -n "$rest" ]; do line=${rest%%$'\n'*}; rest=${rest#*$'\n'}; set -- "$@" "${line%%$'\t'*}"; done
  out=$(command timeout -s KILL "$((ms / 1000)).${r#1}" /bin/sh -c "$_cudaenv_siteprobe" cudaenv-site-probe "$@" 2>/dev/null)
  st=$?
  case $st in
    124|137)
      # Killed at the timeout: the store that did not answer is the one after those printed.
      n=0; rest=$out
      while [ -n "$rest" ]; do n=$((n + 1)); case $rest in *$'\n'*) rest=${rest#*$'\n'} ;; *) rest= ;; esac; done
      [ $n -ge $# ] || shift $n
      (( every >= 60 )) || _cudaenv_sitenext=$((SECONDS + 60))
      if [ "${_cudaenv_sitehung-}" != "$1" ]; then
        _cudaenv_sitehung=$1
        src=$f; [ -z "${CUDAENV_SITE_DIRS+x}" ] || src=CUDAENV_SITE_DIRS
        printf 'cudaenv: warning: site store %s (%s) did not answer within %s ms (a network mount that hangs?); this shell goes on with what your store %s holds and looks again in a minute: fix the mount, or remove it from %s\n' "$1" "$src" "$ms" "$root" "$src" >&2
      fi
      return 1 ;;
    125|126|127)
      # No timeout(1) here: the shell does not look at the sites (cudaenv commands still do).
      _cudaenv_sitenext=$((SECONDS + 3600))
      if [ "${_cudaenv_sitehung-}" != - ]; then
        _cudaenv_sitehung=-
        printf 'cudaenv: warning: this shell cannot look at the site stores without timeout(1) (status %s); a change the site makes is seen at your next cudaenv command: install coreutils\n' "$st" >&2
      fi
      return 1 ;;
  esac
  _cudaenv_sitehung=
  [ "$out"$'\n' != "$body" ]
}

# The site stores changed: the CLI brings the store's mirror of them up to date (one process, once
# per change; a failure is not retried in this shell until the stores change again). With a second
# argument, the guard is the caller's own (_cudaenv_sitemiss) and the sync runs.
_cudaenv_sitesync() {
  local sig="${CUDAENV_SITE_DIRS-u}|"
  if [ -z "${2-}" ]; then
    if [ -f "$1/switch/sites" ]; then _cudaenv_readfile "$1/switch/sites"; sig+=$_cudaenv_c; fi
    [ "$sig" != "${_cudaenv_sitetried-}" ] || return 0
    _cudaenv_sitetried=$sig
  fi
  command "$_CUDAENV_BIN" rehash >/dev/null
}

# The spec in effect names nothing the store's index knows (ROOT SPEC): where a site store is
# configured (a mirror in switch/sites, CUDAENV_SITE_DIRS, or the site list file), the version may
# be one the site added since the mirror was made, as the hook does not look at the sites at a
# prompt. One `cudaenv rehash` (its look at the sites bounded by CUDAENV_SITE_TIMEOUT_MS) brings
# the mirror up to date; status 0: it ran, resolve again. Once per spec and state of the store
# (CUDAENV_SITE_DIRS, switch/sites, switch/generation) in this shell: a spec no site has is not
# looked for again at each prompt, and a prompt that changes nothing starts no process.
_cudaenv_sitestate() {
  _cudaenv_ss="$2|${CUDAENV_SITE_DIRS-u}|"
  if [ -f "$1/switch/sites" ]; then _cudaenv_readfile "$1/switch/sites"; _cudaenv_ss+=$_cudaenv_c; fi
  _cudaenv_ss+='|'
  if [ -f "$1/switch/generation" ]; then _cudaenv_readfile "$1/switch/generation"; _cudaenv_ss+=$_cudaenv_c; fi
}
_cudaenv_sitemiss() {
  local f=${CUDAENV_SITE_DIRS_FILE:-/etc/cudaenv/site-dirs}
  # Not in a subshell or command substitution ($(cd proj && pwd)): it starts no process, and would
  # forget that it looked.
  [ "${BASH_SUBSHELL:-${ZSH_SUBSHELL:-0}}" = 0 ] || return 1
  [ -f "$1/switch/sites" ] || [ -n "${CUDAENV_SITE_DIRS-}" ] || { [ -z "${CUDAENV_SITE_DIRS+x}" ] && [ -f "$f" ]; } || return 1
  _cudaenv_sitestate "$1" "$2"
  [ "$_cudaenv_ss" != "${_cudaenv_sitemissed-}" ] || return 1
  _cudaenv_sitesync "$1" "$2"
  _cudaenv_sitestate "$1" "$2"
  _cudaenv_sitemissed=$_cudaenv_ss
  _cudaenv_synced=1
}

# The version on the variables has gone (`cudaenv uninstall`, or its directory removed by hand):
# one line, then the layer that chose it is closed, so that nothing points into the removed
# directory, and the auto-switch falls back to what is selected here (without a second line
# about the missing version).
_cudaenv_removed() {
  local dir=${_CUDAENV_PATH_ADDED%/bin} label
  label=${dir##*/}
  printf 'cudaenv: CUDA %s was removed (%s is gone); this shell no longer uses it and falls back to what is selected here (`cudaenv current` says what); reinstall it with `cudaenv install %s`\n' "$label" "$dir" "$label" >&2
  if [ -n "${_CUDAENV_APPLIED-}" ] && [ "${_CUDAENV_SHELL_HOME-}" = "$dir" ]; then
    _cudaenv_restore CUDAENV_VERSION
    unset _CUDAENV_APPLIED _CUDAENV_SHELL_HOME _CUDAENV_SHELL_LIB
  fi
  if [ "${_CUDAENV_CONDA_PATH_ADDED-}" = "$dir/bin" ]; then unset _CUDAENV_CONDA_PATH_ADDED _CUDAENV_CONDA_LD_ADDED; fi
  _cudaenv_apply
  _cudaenv_key=
  _cudaenv_quiet=1
}

_cudaenv_autoswitch() {
  local spec origin mode=restore root policy=prepend
  _cudaenv_store; root=$_cudaenv_r
  if [ -n "${CUDAENV_VERSION-}" ]; then
    spec=$CUDAENV_VERSION; origin='set by CUDAENV_VERSION'; mode=keep
    if ! _cudaenv_valid_spec "$spec"; then
      printf 'cudaenv: CUDAENV_VERSION holds "%s", which is not a CUDA version spec\n' "${spec:0:40}" >&2
      return 0
    fi
  elif _cudaenv_conda "$root"; then
    # An active conda environment's cudaenv hook chose: its bin is first on PATH, and
    # `cudaenv current`, `which` and the shims report it. Its version is made whole where conda
    # left it otherwise (a switch: conda exports PATH after the hook's deactivate script).
    _cudaenv_sync
    return 0
  elif [ -n "$_cudaenv_f" ]; then
    if [ -z "$_cudaenv_e" ]; then _cudaenv_parse "$_cudaenv_c"; fi
    if [ -n "$_cudaenv_e" ]; then
      printf 'cudaenv: %s: %s; fix or remove it (the CUDA version is unchanged)\n' "$_cudaenv_f" "$_cudaenv_e" >&2
      return 0
    fi
    spec=$_cudaenv_s; origin="set by $_cudaenv_f"
  elif [ -f "$root/global" ] || [ -f "$root/site/global" ]; then
    # The user's global default, else a site store's (mirrored into site/global; issue 45).
    local gfile=$root/global
    [ -f "$gfile" ] || gfile=$root/site/global
    _cudaenv_readfile "$gfile"
    spec=$_cudaenv_c
    spec=${spec#"${spec%%[![:space:]]*}"}
    spec=${spec%"${spec##*[![:space:]]}"}
    origin="set by the global default $gfile"
    if ! _cudaenv_valid_spec "$spec"; then
      printf 'cudaenv: the global default in %s is not a CUDA version spec; run `cudaenv global 12.4`\n' "$gfile" >&2
      return 0
    fi
  else
    spec=system
  fi
  if ! _cudaenv_resolve "$spec"; then printf 'cudaenv: %s\n' "$_cudaenv_e" >&2; return 0; fi
  # Not in the index (or its toolkit gone): a site may have added (or removed) it since the mirror
  # was made. Once; builtins only after a removal (_cudaenv_quiet), where the fallback is no new spec.
  if [ -z "$_cudaenv_r" ] && [ -z "${_cudaenv_quiet-}" ] && _cudaenv_sitemiss "$root" "$spec"; then
    if ! _cudaenv_resolve "$spec"; then printf 'cudaenv: %s\n' "$_cudaenv_e" >&2; return 0; fi
  fi
  if [ -z "$_cudaenv_r" ]; then
    if [ -n "${_cudaenv_quiet-}" ]; then _cudaenv_sync
    elif [ -n "$_cudaenv_gone" ]; then
      printf 'cudaenv: CUDA %s (%s) resolves to %s, whose toolkit is gone; run `cudaenv rehash` to use the best version still installed\n' "$spec" "$origin" "$_cudaenv_gone" >&2
    elif [ -n "$_cudaenv_final" ]; then
      printf 'cudaenv: CUDA %s (%s) is not installed; install it with `cudaenv install %s`\n' "$spec" "$origin" "$_cudaenv_final" >&2
    elif _cudaenv_prefixed "$spec"; then
      printf 'cudaenv: no alias or version named %s (%s); write the version without its prefix: %s\n' "$spec" "$origin" "$_cudaenv_b" >&2
    else
      printf 'cudaenv: no alias or version named %s (%s); create the alias with `cudaenv alias %s 12.4`\n' "$spec" "$origin" "$spec" >&2
    fi
    return 0
  fi
  if [ "$_cudaenv_r" = "${_CUDAENV_APPLIED-}" ]; then _cudaenv_sync; return 0; fi
  if [ "$_cudaenv_r" = system ]; then
    if [ $mode = keep ]; then _cudaenv_switch system none keep; else _cudaenv_deactivate; fi
    return 0
  fi
  if [ -f "$root/config.json" ]; then
    _cudaenv_readfile "$root/config.json"
    if [[ $_cudaenv_c =~ $_CUDAENV_NONE_RE ]]; then policy=none; fi
  fi
  _cudaenv_switch "$_cudaenv_r" $policy $mode
  # In a subshell or command substitution ($(cd proj && pwd)) the switch is silent and starts
  # no process: the check line is for the interactive shell.
  [ "${BASH_SUBSHELL:-${ZSH_SUBSHELL:-0}}" = 0 ] || return 0
  _cudaenv_report "$_CUDAENV_APPLIED"
}

# One line after a switch: the check result from switch/check-LABEL when an entry
# matches this LD_LIBRARY_PATH and Python environment and none of its watched directories
# changed since it was written; otherwise the CLI runs the check (and caches it).
_cudaenv_report() {
  local root cache line want ok= hit= match=
  [ "$1" != system ] || return 0
  _cudaenv_store; root=$_cudaenv_r
  cache=$root/switch/check-$1
  if [ -n "${LD_LIBRARY_PATH+x}" ]; then want="s$LD_LIBRARY_PATH"; else want=u; fi
  # The Python environment as pythonKey (check-cache.ts) spells it: the first python3, else python,
  # of the PATH entries in turn, found with builtins.
  local rest=${PATH-}: dir py=
  while [ -n "${PATH-}" ] && [ -n "$rest" ]; do
    dir=${rest%%:*}; rest=${rest#*:}
    [ -n "$dir" ] || dir=.
    if [ -f "$dir/python3" ] && [ -x "$dir/python3" ]; then py=$dir/python3; break; fi
    if [ -f "$dir/python" ] && [ -x "$dir/python" ]; then py=$dir/python; break; fi
  done
  # A pyenv shim runs the version pyenv picks: PYENV_VERSION, else the nearest .python-version at
  # or above $PWD, else $PYENV_ROOT/version (the file and its first line).
  local pyv= f=
  case $py in
    "${PYENV_ROOT:-$HOME/.pyenv}"/shims/*)
      if [ -z "${PYENV_VERSION-}" ]; then
        dir=${PWD%/}
        while :; do
          if [ -f "$dir/.python-version" ]; then f=$dir/.python-version; break; fi
          [ -n "$dir" ] || break
          dir=${dir%/*}
        done
        [ -n "$f" ] || f=${PYENV_ROOT:-$HOME/.pyenv}/version
        if [ -f "$f" ] && [ -r "$f" ]; then { IFS= read -r pyv || :; } 2>/dev/null < "$f"; fi
        pyv=$f:$pyv
      fi ;;
  esac
  # The directory, where an empty or relative LD_LIBRARY_PATH entry (or a python found through a
  # relative PATH entry) makes the result depend on it (check-context.ts relativeTo).
  local here= e lrest
  if [ -n "${LD_LIBRARY_PATH-}" ]; then
    lrest=${LD_LIBRARY_PATH//;/:}:
    while [ -n "$lrest" ]; do
      e=${lrest%%:*}; lrest=${lrest#*:}
      case $e in /*) ;; *) here=$PWD; break ;; esac
    done
  fi
  case $py in '' | /*) ;; *) here=$PWD ;; esac
  want="K	$want	${VIRTUAL_ENV-}|${CONDA_PREFIX-}|$py|${PYENV_VERSION-}|${PYTHONPATH-}|$pyv|${LD_PRELOAD-}|${GLIBC_TUNABLES-}|${LD_BIND_NOW-}|$here"
  if [ -f "$cache" ] && [ -r "$cache" ]; then
    while IFS= read -r line; do
      case $line in
        K*) if [ -n "$match" ] && [ -n "$ok" ]; then break; fi
            if [ "$line" = "$want" ]; then match=1; ok=1; else match=; fi ;;
        W*) if [ -n "$match" ] && { [ ! -e "${line#W	}" ] || [ "${line#W	}" -nt "$cache" ]; }; then ok=; fi ;;
        M*) if [ -n "$match" ] && [ -e "${line#M	}" ]; then ok=; fi ;;
        L*) if [ -n "$match" ] && [ -n "$ok" ]; then hit=${line#L	}; break; fi ;;
      esac
    done < "$cache"
  fi
  if [ -n "$hit" ]; then printf '%s\n' "$hit" >&2
  else command "$_CUDAENV_BIN" switch-check "$1"
  fi
}

# Before `use` or `deactivate`: what the note after it compares with.
_cudaenv_mark() {
  _cudaenv_was=${_CUDAENV_APPLIED-}
  _cudaenv_ldwas=${_CUDAENV_LD_LIBRARY_PATH_ADDED-}
  if [ -n "${LD_LIBRARY_PATH+x}" ]; then _cudaenv_ldv="s$LD_LIBRARY_PATH"; else _cudaenv_ldv=u; fi
}

# After `use` or `deactivate`: one line on stderr saying what changed, unless quiet (--quiet,
# or `cudaenv config quiet true`, which the CLI reads for `use` and the function below for
# `deactivate`). $1: use|deactivate.
_cudaenv_note() {
  local ld
  if [ -n "${LD_LIBRARY_PATH+x}" ]; then ld="s$LD_LIBRARY_PATH"; else ld=u; fi
  if [ "$ld" = "$_cudaenv_ldv" ]; then ld='LD_LIBRARY_PATH untouched'
  elif [ "$1" = deactivate ]; then ld="LD_LIBRARY_PATH restored"
  elif [ -n "$_cudaenv_ldwas" ] && [ -n "${_CUDAENV_LD_LIBRARY_PATH_ADDED-}" ]; then ld="LD_LIBRARY_PATH: $_cudaenv_ldwas replaced by $_CUDAENV_LD_LIBRARY_PATH_ADDED"
  elif [ -n "${_CUDAENV_LD_LIBRARY_PATH_ADDED-}" ]; then ld="LD_LIBRARY_PATH: added $_CUDAENV_LD_LIBRARY_PATH_ADDED"
  else ld="LD_LIBRARY_PATH: removed $_cudaenv_ldwas"
  fi
  if [ "$1" = deactivate ]; then
    if [ -z "$_cudaenv_was" ]; then printf 'cudaenv: nothing to deactivate (no cudaenv version in this shell)\n' >&2; return 0; fi
    _cudaenv_store
    if [ -n "${_CUDAENV_PATH_ADDED-}" ] && _cudaenv_conda "$_cudaenv_r"; then
      printf 'cudaenv: deactivated CUDA %s; now CUDA %s of the conda environment %s (its cudaenv hook); %s\n' "$_cudaenv_was" "$_cudaenv_cl" "$CONDA_PREFIX" "$ld" >&2
      return 0
    fi
    printf 'cudaenv: deactivated CUDA %s (the shell is as before cudaenv); %s\n' "$_cudaenv_was" "$ld" >&2
  else
    printf 'cudaenv: now CUDA %s (was %s); %s\n' "${_CUDAENV_APPLIED-}" "${_cudaenv_was:-none}" "$ld" >&2
  fi
}

# The `cudaenv` command in this shell: `use` and `deactivate` change the shell itself.
cudaenv() {
  local out rc a quiet=
  case ${1-} in
    deactivate)
      for a in "${@:2}"; do
        case $a in -q|--quiet) quiet=1 ;; *) quiet=cli; break ;; esac
      done
      if [ "$quiet" != cli ]; then
        if [ -z "$quiet" ] && [ -f "${CUDAENV_DIR:-$_CUDAENV_DEFAULT_DIR}/config.json" ]; then
          _cudaenv_readfile "${CUDAENV_DIR:-$_CUDAENV_DEFAULT_DIR}/config.json"
          if [[ $_cudaenv_c =~ $_CUDAENV_QUIET_RE ]]; then quiet=1; fi
        fi
        _cudaenv_mark
        _cudaenv_deactivate; _cudaenv_keynow; _cudaenv_key=$_cudaenv_k
        [ -n "$quiet" ] || _cudaenv_note deactivate
        return 0
      fi ;;
    use)
      out=$(CUDAENV_SHELL=$_CUDAENV_SHELL command "$_CUDAENV_BIN" "$@"); rc=$?
      case $out in
        "# cudaenv-shell-code"*) eval "$out" ;;
        ?*) printf '%s\n' "$out" ;;
      esac
      return $rc ;;
  esac
  command "$_CUDAENV_BIN" "$@"
}
