import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

/*
 * A conda-like prefix: conda-meta/, bin/, and one package's own activation scripts named as
 * conda-forge's cuda-nvcc names them (`~cuda-nvcc_activate.*`, meant to run after the other
 * packages' scripts). The package script saves LD_LIBRARY_PATH once, prepends its own lib
 * and logs the LD_LIBRARY_PATH it saw to $TRACE_FILE, so a test can see which ran first.
 */
export function makeCondaPrefix(prefix: string, name: string): string {
  mkdirSync(join(prefix, 'conda-meta'), {recursive: true});
  writeFileSync(join(prefix, 'conda-meta', 'history'), '');
  mkdirSync(join(prefix, 'bin'), {recursive: true});
  const act = join(prefix, 'etc', 'conda', 'activate.d');
  const deact = join(prefix, 'etc', 'conda', 'deactivate.d');
  mkdirSync(act, {recursive: true});
  mkdirSync(deact, {recursive: true});
  const lib = `/pkg/${name}/lib`;
  const saved = `_PKG_${name}_SAVED`;
  const ld = `_PKG_${name}_LD`;
  writeFileSync(join(act, '~cuda-nvcc_activate.sh'), `if [ -z "\${${saved}-}" ]; then
  export ${saved}=1
  if [ -n "\${LD_LIBRARY_PATH+x}" ]; then export ${ld}="$LD_LIBRARY_PATH"; fi
fi
printf 'pkg-activate ${name} LD=%s\\n' "\${LD_LIBRARY_PATH-<unset>}" >> "$TRACE_FILE"
export LD_LIBRARY_PATH="${lib}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
`);
  writeFileSync(join(deact, '~cuda-nvcc_deactivate.sh'), `printf 'pkg-deactivate ${name} LD=%s\\n' "\${LD_LIBRARY_PATH-<unset>}" >> "$TRACE_FILE"
if [ -n "\${${saved}-}" ]; then
  if [ -n "\${${ld}+x}" ]; then export LD_LIBRARY_PATH="$${ld}"; unset ${ld}; else unset LD_LIBRARY_PATH; fi
  unset ${saved}
fi
`);
  writeFileSync(join(act, '~cuda-nvcc_activate.fish'), `if not set -q ${saved}
  set -gx ${saved} 1
  if set -q LD_LIBRARY_PATH; set -gx ${ld} "$LD_LIBRARY_PATH"; end
end
if set -q LD_LIBRARY_PATH; echo "pkg-activate ${name} LD=$LD_LIBRARY_PATH" >> $TRACE_FILE; else; echo "pkg-activate ${name} LD=<unset>" >> $TRACE_FILE; end
if test -n "$LD_LIBRARY_PATH"; set -gx LD_LIBRARY_PATH ${lib} $LD_LIBRARY_PATH; else; set -gx LD_LIBRARY_PATH ${lib}; end
`);
  writeFileSync(join(deact, '~cuda-nvcc_deactivate.fish'), `if set -q LD_LIBRARY_PATH; echo "pkg-deactivate ${name} LD=$LD_LIBRARY_PATH" >> $TRACE_FILE; else; echo "pkg-deactivate ${name} LD=<unset>" >> $TRACE_FILE; end
if set -q ${saved}
  if set -q ${ld}; set -gx LD_LIBRARY_PATH "$${ld}"; set -e ${ld}; else; set -e LD_LIBRARY_PATH; end
  set -e ${saved}
end
`);
  writeFileSync(join(act, '~cuda-nvcc_activate.csh'), `if ( ! $?${saved} ) then
  setenv ${saved} 1
  if ( $?LD_LIBRARY_PATH ) then
    setenv ${ld} $LD_LIBRARY_PATH:q
  endif
endif
if ( $?LD_LIBRARY_PATH ) then
  printf 'pkg-activate ${name} LD=%s\\n' $LD_LIBRARY_PATH:q >> $TRACE_FILE:q
  if ( $LD_LIBRARY_PATH:q == "" ) then
    setenv LD_LIBRARY_PATH ${lib}
  else
    setenv LD_LIBRARY_PATH ${lib}:$LD_LIBRARY_PATH:q
  endif
else
  printf 'pkg-activate ${name} LD=<unset>\\n' >> $TRACE_FILE:q
  setenv LD_LIBRARY_PATH ${lib}
endif
`);
  writeFileSync(join(deact, '~cuda-nvcc_deactivate.csh'), `if ( $?LD_LIBRARY_PATH ) then
  printf 'pkg-deactivate ${name} LD=%s\\n' $LD_LIBRARY_PATH:q >> $TRACE_FILE:q
else
  printf 'pkg-deactivate ${name} LD=<unset>\\n' >> $TRACE_FILE:q
endif
if ( $?${saved} ) then
  if ( $?${ld} ) then
    setenv LD_LIBRARY_PATH $${ld}:q
    unsetenv ${ld}
  else
    unsetenv LD_LIBRARY_PATH
  endif
  unsetenv ${saved}
endif
`);
  return prefix;
}
