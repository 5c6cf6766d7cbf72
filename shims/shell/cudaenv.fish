# cudaenv fish integration (`cudaenv init fish | source` in ~/.config/fish/config.fish).
# The same rules and state variables as shims/shell/posix.sh: the prompt hook runs on fish
# builtins only, file contents are parsed and never evaluated, and the exported
# _CUDAENV_<VAR>_SAVED / _CUDAENV_*_ADDED / _CUDAENV_APPLIED / _CUDAENV_SHELL_* variables hold
# the state, shared with the conda hook's layer (_CUDAENV_CONDA_*): one version on the variables,
# whole, and the variables as before once every layer is closed.
# PATH and LD_LIBRARY_PATH are fish path variables (lists); they are handled as colon strings.

# A suffixed label (12.4.1-local, `cudaenv add DIR --as`) too.
set -g _CUDAENV_SPEC_RE '^(latest|system|(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,5}))?)?|(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,5})-[a-z][a-z0-9]{0,15}|[A-Za-z][A-Za-z0-9_.-]{0,62})$'
set -g _CUDAENV_KV_RE '^[a-z][a-z0-9_-]{0,31}=[A-Za-z0-9._+-]{0,64}$'
set -g _CUDAENV_CTL_RE '[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]'

function _cudaenv_store
    # A command substitution costs more in fish than the rest of this function: only when needed.
    if set -q CUDAENV_DIR; and test -n "$CUDAENV_DIR"
        set -g _cudaenv_r $CUDAENV_DIR
        string match -q -- '*/' $CUDAENV_DIR; and set -g _cudaenv_r (string trim -r -c / -- $CUDAENV_DIR | string collect)
    else
        set -g _cudaenv_r $_CUDAENV_DEFAULT_DIR
    end
end

function _cudaenv_valid_spec
    test "$argv[1]" != default; and string match -qr -- $_CUDAENV_SPEC_RE "$argv[1]"
end

function _cudaenv_trim
    string trim -- "$argv[1]"
end

function _cudaenv_find
    # The ancestors of $PWD, deepest first, computed once per directory: a command
    # substitution costs more in fish than all the tests of a prompt together.
    set -g _cudaenv_f ''
    if not set -q _cudaenv_dirs_pwd; or test "$_cudaenv_dirs_pwd" != "$PWD"
        set -l d ''
        set -g _cudaenv_dirs
        for part in (string split / -- $PWD)
            test -n "$part"; or continue
            set d "$d/$part"
            set -p _cudaenv_dirs $d
        end
        set -g _cudaenv_dirs_pwd $PWD
    end
    # -L too: a link to nothing (a loop, a missing target) is found, and refused by _cudaenv_load,
    # as the CLI refuses it, instead of switching to the file above it or to the global default.
    for d in $_cudaenv_dirs ''
        if test -e "$d/.cuda-version"; or test -L "$d/.cuda-version"
            set -g _cudaenv_f "$d/.cuda-version"
            return 0
        end
    end
end

# At most LIMIT bytes (4096 unless given) up to a NUL byte -> _cudaenv_c; status 2 when the
# file holds more. `read` without -n reads in blocks and stops at fish_read_limit (status
# 122), so a huge file costs nothing; `read -n` would read one byte per system call and drop
# bytes that are not UTF-8 without counting them (64 MB of them took a minute). Such bytes
# stay in the text as fish encodes them, for _cudaenv_parse to refuse. Data after a NUL
# marks the content with \x01, which the parser refuses as binary data, as the CLI does.
function _cudaenv_readfile
    set -g _cudaenv_c ''
    set -l fish_read_limit 4096
    set -q argv[2]; and set fish_read_limit $argv[2]
    set -l st 1
    begin
        read -z _cudaenv_c
        set st $status
        if test $st -eq 0
            read -z _cudaenv_more; or test $status -eq 122
            and set -g _cudaenv_c "$_cudaenv_c"\x01
        end
    end <$argv[1] 2>/dev/null
    test $st -ne 122; or return 2
    return 0
end

function _cudaenv_load
    set -g _cudaenv_c ''
    set -g _cudaenv_e ''
    if test -f "$argv[1]" -a -r "$argv[1]"
        _cudaenv_readfile $argv[1]; or set -g _cudaenv_e 'holds more than 4096 bytes'
    else if test -L "$argv[1]"; and not test -e "$argv[1]"
        set -g _cudaenv_e 'is a symbolic link that cannot be followed (its target is missing or out of reach, or the links loop)'
    else if test -d "$argv[1]"
        set -g _cudaenv_e 'is a directory, not a file'
    else if not test -f "$argv[1]"
        set -g _cudaenv_e 'is not a regular file (a FIFO, socket or device)'
    else
        set -g _cudaenv_e 'cannot be read (permission denied)'
    end
end

function _cudaenv_parse
    set -g _cudaenv_s ''
    set -g _cudaenv_e ''
    set -l text "$argv[1]"
    if test (string length -- "$text") -gt 4096
        set -g _cudaenv_e 'holds more than 4096 bytes'
        return 1
    end
    if string match -qr -- $_CUDAENV_CTL_RE "$text"
        set -g _cudaenv_e 'contains control characters or binary data'
        return 1
    end
    # fish holds a byte that is not UTF-8 as U+F680-U+F6FF, and a real U+F600-U+F6FF (EF 98-9B
    # 80-BF) as its three bytes so encoded: those triples are valid text and are dropped first.
    if string match -qr -- '[\x{F680}-\x{F6FF}]' "$text"
        and string replace -ra -- '\x{F6EF}[\x{F698}-\x{F69B}][\x{F680}-\x{F6BF}]' '' "$text" | string match -qr -- '[\x{F680}-\x{F6FF}]'
        set -g _cudaenv_e 'is not UTF-8 text (a binary file?)'
        return 1
    end
    # Named as the CLI names it (in the C locale fish holds the BOM's three bytes as U+F6EF U+F6BB U+F6BF).
    if string match -qr -- '^(\x{FEFF}|\x{F6EF}\x{F6BB}\x{F6BF})' "$text"
        set -g _cudaenv_e 'starts with a byte-order mark (BOM); save it as UTF-8 without one'
        return 1
    end
    set -l n 0
    for raw in (string split \n -- "$text")
        set n (math $n + 1)
        set -l line (string trim -- "$raw" | string collect)
        test -n "$line"; or continue
        string match -q -- '#*' "$line"; and continue
        set -l short (string sub -l 40 -- "$line" | string collect)
        if test -z "$_cudaenv_s"
            if _cudaenv_valid_spec "$line"
                set -g _cudaenv_s "$line"
            else
                set -g _cudaenv_e "line $n \"$short\" is not a CUDA version spec"
                return 1
            end
        else if not string match -qr -- $_CUDAENV_KV_RE "$line"
            set -g _cudaenv_e "line $n \"$short\" is neither a comment nor key=value"
            return 1
        end
    end
    if test -z "$_cudaenv_s"
        set -g _cudaenv_e 'holds no version spec'
        return 1
    end
end

# Colon-string helpers (same rules as posix.sh).
function _cudaenv_rm_entry
    # Literal comparisons only: the entry may hold glob characters ([, *, ?).
    set -l v "$argv[1]"
    set -l e "$argv[2]"
    set -g _cudaenv_r "$v"
    test -n "$e"; or return 0
    set -l n (string length -- "$e")
    set -l m (math $n + 1)
    set -l head (string sub -l $m -- "$v" | string collect)
    set -l tail (string sub -s -$m -- "$v" | string collect)
    if test "$v" = "$e"
        set -g _cudaenv_r ''
    else if test "$head" = "$e:"
        set -g _cudaenv_r (string sub -s (math $n + 2) -- "$v" | string collect)
    else
        set -l r (string replace -- ":$e:" : "$v" | string collect)
        if test "$r" != "$v"
            set -g _cudaenv_r "$r"
        else if test "$tail" = ":$e"
            set -g _cudaenv_r (string sub -l (math (string length -- "$v") - $m) -- "$v" | string collect)
        end
    end
end

function _cudaenv_get
    # The colon string of a variable (path variables joined back).
    string join : -- $$argv[1]
end

# A file's modification time in whole seconds: fish's `path` builtin (3.5 and later) starts no
# process; older fish (Ubuntu 22.04 has 3.3) asks stat(1), on a switch only, never per prompt.
if builtin -n | string match -q -- path
    function _cudaenv_mtime
        path mtime -- $argv[1]
    end
else
    function _cudaenv_mtime
        command stat -c %Y -- $argv[1] 2>/dev/null
    end
end

function _cudaenv_save
    if set -q $argv[1]
        set -l value (_cudaenv_get $argv[1] | string collect)
        set -gx _CUDAENV_$argv[1]_SAVED "x$value"
    else
        set -gx _CUDAENV_$argv[1]_SAVED u
    end
end

function _cudaenv_restore
    set -l saved u
    set -q _CUDAENV_$argv[1]_SAVED; and set saved (_cudaenv_get _CUDAENV_$argv[1]_SAVED | string collect)
    if string match -q -- 'x*' "$saved"
        set -l value (string sub -s 2 -- "$saved" | string collect)
        set -gx $argv[1] "$value"
    else
        set -e $argv[1]
    end
end

function _cudaenv_setlist
    set -l was u
    set -q _CUDAENV_$argv[1]_SAVED; and set was (_cudaenv_get _CUDAENV_$argv[1]_SAVED | string collect)
    if test -z "$argv[2]"; and test "$was" = u
        set -e $argv[1]
    else
        set -gx $argv[1] "$argv[2]"
    end
end

# The layer whose version the variables carry -> _cudaenv_h (directory, '' for none), _cudaenv_li.
function _cudaenv_effective
    if set -q _CUDAENV_APPLIED; and test -n "$_CUDAENV_APPLIED"; and begin
            set -q CUDAENV_VERSION; and test -n "$CUDAENV_VERSION"; or not set -q _CUDAENV_CONDA_PATH_ADDED; or test -z "$_CUDAENV_CONDA_PATH_ADDED"
        end
        set -g _cudaenv_h "$_CUDAENV_SHELL_HOME"
        set -g _cudaenv_li "$_CUDAENV_SHELL_LIB"
    else if set -q _CUDAENV_CONDA_PATH_ADDED; and test -n "$_CUDAENV_CONDA_PATH_ADDED"
        set -g _cudaenv_h (string replace -r -- '/bin$' '' "$_CUDAENV_CONDA_PATH_ADDED" | string collect)
        set -g _cudaenv_li "$_CUDAENV_CONDA_LD_ADDED"
    else
        set -g _cudaenv_h ''
        set -g _cudaenv_li ''
    end
end

# The effective layer's version on the variables, replacing exactly the entries put there before.
function _cudaenv_apply
    _cudaenv_effective
    if not set -q _CUDAENV_PATH_SAVED
        test -n "$_cudaenv_h"; or return 0
        for v in PATH LD_LIBRARY_PATH CUDA_HOME CUDA_PATH CUDAENV_VERSION
            _cudaenv_save $v
        end
    end
    set -l cur (_cudaenv_get PATH | string collect)
    _cudaenv_rm_entry "$cur" "$_CUDAENV_PATH_ADDED"
    set -l p "$_cudaenv_r"
    set cur (_cudaenv_get LD_LIBRARY_PATH | string collect)
    _cudaenv_rm_entry "$cur" "$_CUDAENV_LD_LIBRARY_PATH_ADDED"
    set -l l "$_cudaenv_r"
    if test -n "$_cudaenv_h"
        if test -z "$p"
            set -gx PATH "$_cudaenv_h/bin"
        else
            set -gx PATH "$_cudaenv_h/bin:$p"
        end
        set -gx _CUDAENV_PATH_ADDED "$_cudaenv_h/bin"
        set -gx _CUDAENV_LD_LIBRARY_PATH_ADDED "$_cudaenv_li"
        if test -z "$_cudaenv_li"
            _cudaenv_setlist LD_LIBRARY_PATH "$l"
        else if test -z "$l"
            set -gx LD_LIBRARY_PATH "$_cudaenv_li"
        else
            set -gx LD_LIBRARY_PATH "$_cudaenv_li:$l"
        end
        set -gx CUDA_HOME "$_cudaenv_h"
        set -gx CUDA_PATH "$_cudaenv_h"
    else
        set -gx _CUDAENV_PATH_ADDED ''
        set -gx _CUDAENV_LD_LIBRARY_PATH_ADDED ''
        _cudaenv_setlist PATH "$p"
        _cudaenv_setlist LD_LIBRARY_PATH "$l"
        _cudaenv_restore CUDA_HOME
        _cudaenv_restore CUDA_PATH
    end
    if test -z "$_CUDAENV_APPLIED"; and test -z "$_CUDAENV_CONDA_PATH_ADDED"
        # One name per `set -e`: fish before 3.2 erases only one at a time.
        for v in _CUDAENV_PATH_SAVED _CUDAENV_LD_LIBRARY_PATH_SAVED _CUDAENV_CUDA_HOME_SAVED \
            _CUDAENV_CUDA_PATH_SAVED _CUDAENV_CUDAENV_VERSION_SAVED _CUDAENV_PATH_ADDED \
            _CUDAENV_LD_LIBRARY_PATH_ADDED
            set -e $v
        end
    end
end

# _cudaenv_apply only where the variables do not carry the effective layer's version already.
function _cudaenv_sync
    _cudaenv_effective
    if test -n "$_cudaenv_h"
        test "$_cudaenv_h/bin" = "$_CUDAENV_PATH_ADDED"; and test "$_cudaenv_li" = "$_CUDAENV_LD_LIBRARY_PATH_ADDED"; and return 0
    else
        test -z "$_CUDAENV_PATH_ADDED$_CUDAENV_LD_LIBRARY_PATH_ADDED"; and return 0
    end
    _cudaenv_apply
end

# The shell layer (as in posix.sh).
function _cudaenv_switch --argument-names label policy mode
    _cudaenv_store
    set -l root $_cudaenv_r
    if not set -q _CUDAENV_PATH_SAVED
        for v in PATH LD_LIBRARY_PATH CUDA_HOME CUDA_PATH CUDAENV_VERSION
            _cudaenv_save $v
        end
    end
    if test "$label" = system
        set -gx _CUDAENV_SHELL_HOME ''
        set -gx _CUDAENV_SHELL_LIB ''
    else
        set -l dir "$root/versions/$label"
        set -gx _CUDAENV_SHELL_HOME "$dir"
        set -gx _CUDAENV_SHELL_LIB ''
        if test "$policy" != none
            if test -d "$dir/lib64"
                set -gx _CUDAENV_SHELL_LIB "$dir/lib64"
            else
                set -gx _CUDAENV_SHELL_LIB "$dir/lib"
            end
        end
    end
    switch $mode
        case pin
            set -gx CUDAENV_VERSION $label
        case restore
            _cudaenv_restore CUDAENV_VERSION
    end
    set -gx _CUDAENV_APPLIED $label
    _cudaenv_apply
end

function _cudaenv_deactivate
    set -q _CUDAENV_APPLIED; and test -n "$_CUDAENV_APPLIED"; or return 0
    _cudaenv_restore CUDAENV_VERSION
    set -e _CUDAENV_APPLIED
    set -e _CUDAENV_SHELL_HOME
    set -e _CUDAENV_SHELL_LIB
    _cudaenv_apply
end

# The version on the variables has gone (as in posix.sh): one line, the layer that chose it closed.
function _cudaenv_removed
    set -l dir (string replace -r -- '/bin$' '' "$_CUDAENV_PATH_ADDED" | string collect)
    set -l label (string replace -r -- '^.*/' '' "$dir" | string collect)
    printf 'cudaenv: CUDA %s was removed (%s is gone); this shell no longer uses it and falls back to what is selected here (`cudaenv current` says what); reinstall it with `cudaenv install %s`\n' "$label" "$dir" "$label" >&2
    if set -q _CUDAENV_APPLIED; and test -n "$_CUDAENV_APPLIED"; and test "$_CUDAENV_SHELL_HOME" = "$dir"
        _cudaenv_restore CUDAENV_VERSION
        set -e _CUDAENV_APPLIED
        set -e _CUDAENV_SHELL_HOME
        set -e _CUDAENV_SHELL_LIB
    end
    if test "$_CUDAENV_CONDA_PATH_ADDED" = "$dir/bin"
        set -e _CUDAENV_CONDA_PATH_ADDED
        set -e _CUDAENV_CONDA_LD_ADDED
    end
    _cudaenv_apply
    set -g _cudaenv_key ''
    set -g _cudaenv_quiet 1
end

# Whether the site stores (issue 45) changed since the store's mirror of them was made (as in
# posix.sh: switch/sites holds the CUDAENV_SITE_DIRS it was made for, then each site store and
# the first line of its switch/generation). Status 0: changed. As in posix.sh, the shell never
# touches a site store itself (a network mount that hangs would hold the prompt for good), and by
# default does not look at the sites at a prompt at all (a version the site adds is found when the
# hook cannot resolve the spec in effect, _cudaenv_sitemiss, or by any cudaenv command). Only with
# CUDAENV_SITE_CHECK_INTERVAL=N set (an opt-in; 0: at each prompt) are the sites read, by one
# /bin/sh child killed at CUDAENV_SITE_TIMEOUT_MS, at most once every N seconds, timed by
# /proc/uptime read with the builtin `read` (fish has no clock variable).
set -g _cudaenv_siteprobe 'for d do g=-
  if [ -d "$d" ] && [ -r "$d" ] && [ -x "$d" ] && [ -d "$d/versions" ] && [ -r "$d/versions" ] && [ -x "$d/versions" ] && [ -e "$d/switch/generation" ] && [ ! -d "$d/switch/generation" ]; then IFS= read -r g < "$d/switch/generation" || :; g=${g:--}; fi
  printf "%s\t%s\n" "$d" "$g"
done'
function _cudaenv_sitecheck --argument-names root
    set -l f /etc/cudaenv/site-dirs
    set -q CUDAENV_SITE_DIRS_FILE; and test -n "$CUDAENV_SITE_DIRS_FILE"; and set f $CUDAENV_SITE_DIRS_FILE
    if not test -f "$root/switch/sites"
        set -q CUDAENV_SITE_DIRS; and test -n "$CUDAENV_SITE_DIRS"; and return 0
        not set -q CUDAENV_SITE_DIRS; and test -s "$f"; and return 0
        return 1
    end
    set -l want u
    if set -q CUDAENV_SITE_DIRS
        set want "e$CUDAENV_SITE_DIRS"
    else if test "$f" -nt "$root/switch/sites"
        return 0
    end
    set -l lines
    while read -l line
        set -a lines $line
    end <"$root/switch/sites"
    test "$lines[1]" = "$want"; or return 0
    set -q lines[2]; or return 1
    set -q CUDAENV_SITE_CHECK_INTERVAL; and string match -qr '^[0-9]+$' -- "$CUDAENV_SITE_CHECK_INTERVAL"; or return 1
    set -l every $CUDAENV_SITE_CHECK_INTERVAL
    set -l now ''
    read -l up </proc/uptime 2>/dev/null; and set now (string split -f 1 . -- $up)
    if set -q _cudaenv_sitenext; and test -n "$now"; and test "$now" -lt "$_cudaenv_sitenext"
        return 1
    end
    test -n "$now"; and set -g _cudaenv_sitenext (math $now + $every)
    set -l ms 3000
    set -q CUDAENV_SITE_TIMEOUT_MS; and string match -qr '^[0-9]*[1-9][0-9]*$' -- "$CUDAENV_SITE_TIMEOUT_MS"; and set ms $CUDAENV_SITE_TIMEOUT_MS
    set -l dirs
    for line in $lines[2..-1]
        set -a dirs (string split -m 1 \t -- $line)[1]
    end
    set -l out (command timeout -s KILL (math -s3 $ms / 1000) /bin/sh -c "$_cudaenv_siteprobe" cudaenv-site-probe $dirs 2>/dev/null)
    set -l st $status
    if contains -- $st 124 137
        # Killed at the timeout: the store that did not answer is the one after those printed.
        set -l hung $dirs[(math (count $out) + 1)]
        test $every -ge 60; or test -z "$now"; or set -g _cudaenv_sitenext (math $now + 60)
        if not set -q _cudaenv_sitehung; or test "$_cudaenv_sitehung" != "$hung"
            set -g _cudaenv_sitehung $hung
            set -l src $f
            set -q CUDAENV_SITE_DIRS; and set src CUDAENV_SITE_DIRS
            printf 'cudaenv: warning: site store %s (%s) did not answer within %s ms (a network mount that hangs?); this shell goes on with what your store %s holds and looks again in a minute: fix the mount, or remove it from %s\n' $hung $src $ms $root $src >&2
        end
        return 1
    else if contains -- $st 125 126 127
        test -z "$now"; or set -g _cudaenv_sitenext (math $now + 3600)
        if not set -q _cudaenv_sitehung; or test "$_cudaenv_sitehung" != -
            set -g _cudaenv_sitehung -
            printf 'cudaenv: warning: this shell cannot look at the site stores without timeout(1) (status %s); a change the site makes is seen at your next cudaenv command: install coreutils\n' $st >&2
        end
        return 1
    end
    set -g _cudaenv_sitehung ''
    test "$out" != "$lines[2..-1]"
end

# The site stores changed: the CLI brings the store's mirror up to date (once per change). With a
# second argument, the guard is the caller's own (_cudaenv_sitemiss) and the sync runs.
function _cudaenv_sitesync --argument-names root forced
    if test -z "$forced"
        set -l sig "$CUDAENV_SITE_DIRS|"
        set -q CUDAENV_SITE_DIRS; or set sig "u|"
        test -f "$root/switch/sites"; and set sig "$sig"(string join \n < "$root/switch/sites" | string collect)
        if set -q _cudaenv_sitetried; and test "$sig" = "$_cudaenv_sitetried"
            return 0
        end
        set -g _cudaenv_sitetried "$sig"
    end
    command "$_CUDAENV_BIN" rehash >/dev/null
end

# The spec in effect names nothing the store's index knows (as in posix.sh): where a site store is
# configured, one `cudaenv rehash` brings the mirror up to date and the caller resolves again;
# once per spec and state of the store (CUDAENV_SITE_DIRS, switch/sites, switch/generation).
function _cudaenv_sitestate --argument-names root spec
    set -l sig "$spec|$CUDAENV_SITE_DIRS|"
    set -q CUDAENV_SITE_DIRS; or set sig "$spec|u|"
    test -f "$root/switch/sites"; and set sig "$sig"(string join \n < "$root/switch/sites" | string collect)
    set sig "$sig|"
    test -f "$root/switch/generation"; and set sig "$sig"(string join \n < "$root/switch/generation" | string collect)
    set -g _cudaenv_ss "$sig"
end
function _cudaenv_sitemiss --argument-names root spec
    set -l f /etc/cudaenv/site-dirs
    set -q CUDAENV_SITE_DIRS_FILE; and test -n "$CUDAENV_SITE_DIRS_FILE"; and set f $CUDAENV_SITE_DIRS_FILE
    if not test -f "$root/switch/sites"
        if set -q CUDAENV_SITE_DIRS
            test -n "$CUDAENV_SITE_DIRS"; or return 1
        else
            test -f "$f"; or return 1
        end
    end
    _cudaenv_sitestate $root $spec
    set -q _cudaenv_sitemissed; and test "$_cudaenv_ss" = "$_cudaenv_sitemissed"; and return 1
    _cudaenv_sitesync $root 1
    _cudaenv_sitestate $root $spec
    set -g _cudaenv_sitemissed "$_cudaenv_ss"
    set -g _cudaenv_synced 1
    return 0
end

function _cudaenv_resolve --argument-names spec
    _cudaenv_store
    set -l root $_cudaenv_r
    set -l first $spec
    set -g _cudaenv_r ''
    set -g _cudaenv_e ''
    set -g _cudaenv_gone ''
    set -g _cudaenv_idx ''
    test -f "$root/switch/index"; and read -z -n 4097 _cudaenv_idx <"$root/switch/index"
    set -l depth 0
    while true
        if test "$spec" = system
            set -g _cudaenv_r system
            return 0
        end
        if test "$spec" = latest; or string match -qr '^[0-9]' -- "$spec"
            set -g _cudaenv_final $spec
            set -l m (string match -r -- " \Q$spec\E=(\S+)" "$_cudaenv_idx")
            if set -q m[2]; and test -d "$root/versions/$m[2]"
                set -g _cudaenv_r $m[2]
            else if set -q m[2]
                set -g _cudaenv_gone $m[2]
            end
            return 0
        end
        set depth (math $depth + 1)
        if test $depth -gt 8
            set -g _cudaenv_e "alias $first loops or nests more than 8 deep"
            return 1
        end
        _cudaenv_load "$root/aliases/$spec"
        # A site store's alias (issue 45: mirrored into site/aliases/) where the user has none of that name.
        if test -n "$_cudaenv_e"; and test -f "$root/site/aliases/$spec"
            _cudaenv_load "$root/site/aliases/$spec"
        end
        if test -n "$_cudaenv_e"
            set -g _cudaenv_e ''
            set -g _cudaenv_final ''
            return 0
        end
        set spec (_cudaenv_trim "$_cudaenv_c" | string collect)
        if not _cudaenv_valid_spec "$spec"
            set -g _cudaenv_e "alias file $root/aliases/$first does not hold a version spec"
            return 1
        end
    end
end

# Whether an active conda environment's cudaenv hook chose the toolkit -> _cudaenv_cl (as in posix.sh).
function _cudaenv_conda --argument-names root
    set -q CONDA_PREFIX; and test -n "$CONDA_PREFIX"; or return 1
    set -q _CUDAENV_CONDA_PATH_ADDED; or return 1
    set -l m (string match -r -- '^\Q'"$root"'\E/versions/([0-9][^/]*\.[^/]*\.[^/]*)/bin$' "$_CUDAENV_CONDA_PATH_ADDED")
    set -q m[2]; or return 1
    set -g _cudaenv_cl $m[2]
    _cudaenv_valid_spec $_cudaenv_cl
end

function _cudaenv_keynow
    # Runs at every prompt: builtins only, few function calls (each costs in fish).
    set -l root $_CUDAENV_DEFAULT_DIR
    if set -q CUDAENV_DIR; and test -n "$CUDAENV_DIR"
        set root $CUDAENV_DIR
        string match -q -- '*/' $root; and set root (string trim -r -c / -- $root | string collect)
    end
    # fish's read costs per byte: the short generation file, not the index, is read per prompt.
    set -g _cudaenv_gen ''
    test -f "$root/switch/generation"; and read -z -n 64 _cudaenv_gen <"$root/switch/generation"
    if set -q CUDAENV_VERSION; and test -n "$CUDAENV_VERSION"
        set -g _cudaenv_k "e$CUDAENV_VERSION"
    else if _cudaenv_conda $root
        set -g _cudaenv_k "c$_cudaenv_cl"
    else
        _cudaenv_find
        if test -n "$_cudaenv_f"
            _cudaenv_load "$_cudaenv_f"
            set -g _cudaenv_k "f$_cudaenv_f/$_cudaenv_e/$_cudaenv_c"
        else if test -f "$root/global"
            _cudaenv_readfile "$root/global"
            set -g _cudaenv_k "g$_cudaenv_c"
        else if test -f "$root/site/global"
            _cudaenv_readfile "$root/site/global"
            set -g _cudaenv_k "s$_cudaenv_c"
        else
            set -g _cudaenv_k d
        end
    end
    set -g _cudaenv_k "$_cudaenv_k|$PWD|$root|$_cudaenv_gen"
end

function _cudaenv_hook --on-variable PWD --on-event fish_prompt
    set -l st $status
    set -g _cudaenv_quiet ''
    if test -n "$_CUDAENV_PATH_ADDED"; and not test -d (string replace -r -- '/bin$' '' "$_CUDAENV_PATH_ADDED" | string collect)
        _cudaenv_removed
    end
    _cudaenv_store
    if _cudaenv_sitecheck $_cudaenv_r
        _cudaenv_sitesync $_cudaenv_r
    end
    _cudaenv_keynow
    if not set -q _cudaenv_key; or test "$_cudaenv_k" != "$_cudaenv_key"
        set -g _cudaenv_key "$_cudaenv_k"
        set -g _cudaenv_synced ''
        _cudaenv_autoswitch
        # The switch brought the site mirror up to date (_cudaenv_sitemiss): the key it left is the
        # one this prompt saw, so the next prompt that changes nothing does not switch (or say) again.
        if test -n "$_cudaenv_synced"
            _cudaenv_keynow
            set -g _cudaenv_key "$_cudaenv_k"
        end
    end
    set -g _cudaenv_quiet ''
    return $st
end

function _cudaenv_autoswitch
    _cudaenv_store
    set -l root $_cudaenv_r
    set -l mode restore
    set -l policy prepend
    set -l spec system
    set -l origin 'no version selected'
    if set -q CUDAENV_VERSION; and test -n "$CUDAENV_VERSION"
        set spec "$CUDAENV_VERSION"
        set origin 'set by CUDAENV_VERSION'
        set mode keep
        if not _cudaenv_valid_spec "$spec"
            printf 'cudaenv: CUDAENV_VERSION holds "%s", which is not a CUDA version spec\n' (string sub -l 40 -- "$spec") >&2
            return 0
        end
    else if _cudaenv_conda $root
        # An active conda environment's cudaenv hook chose (as in posix.sh): its version, whole.
        _cudaenv_sync
        return 0
    else if test -n "$_cudaenv_f"
        test -n "$_cudaenv_e"; or _cudaenv_parse "$_cudaenv_c"
        if test -n "$_cudaenv_e"
            printf 'cudaenv: %s: %s; fix or remove it (the CUDA version is unchanged)\n' "$_cudaenv_f" "$_cudaenv_e" >&2
            return 0
        end
        set spec "$_cudaenv_s"
        set origin "set by $_cudaenv_f"
    else if test -f "$root/global"; or test -f "$root/site/global"
        # The user's global default, else a site store's (mirrored into site/global; issue 45).
        set -l gfile "$root/global"
        test -f "$gfile"; or set gfile "$root/site/global"
        _cudaenv_readfile "$gfile"
        set spec (_cudaenv_trim "$_cudaenv_c" | string collect)
        set origin "set by the global default $gfile"
        if not _cudaenv_valid_spec "$spec"
            printf 'cudaenv: the global default in %s is not a CUDA version spec; run `cudaenv global 12.4`\n' "$gfile" >&2
            return 0
        end
    end
    if not _cudaenv_resolve "$spec"
        printf 'cudaenv: %s\n' "$_cudaenv_e" >&2
        return 0
    end
    # Not in the index (or its toolkit gone): a site may have added (or removed) it since the mirror
    # was made (as in posix.sh). Once; builtins only after a removal (_cudaenv_quiet).
    if test -z "$_cudaenv_r"; and test -z "$_cudaenv_quiet"; and _cudaenv_sitemiss $root "$spec"
        if not _cudaenv_resolve "$spec"
            printf 'cudaenv: %s\n' "$_cudaenv_e" >&2
            return 0
        end
    end
    if test -z "$_cudaenv_r"
        if test -n "$_cudaenv_quiet"
            _cudaenv_sync
        else if test -n "$_cudaenv_gone"
            printf 'cudaenv: CUDA %s (%s) resolves to %s, whose toolkit is gone; run `cudaenv rehash` to use the best version still installed\n' "$spec" "$origin" "$_cudaenv_gone" >&2
        else if test -n "$_cudaenv_final"
            printf 'cudaenv: CUDA %s (%s) is not installed; install it with `cudaenv install %s`\n' "$spec" "$origin" "$_cudaenv_final" >&2
        else
            # v12.4, cuda-12.4 (nvm's v18, /usr/local/cuda-12.4): a version with a prefix, not an alias to create.
            set -l bare (string replace -r -- '^(?i:v|cuda[-_]?)((?:0|[1-9][0-9]{0,3})(?:\.(?:0|[1-9][0-9]{0,3})(?:\.(?:0|[1-9][0-9]{0,5}))?)?)$' '$1' "$spec")
            if test "$bare" != "$spec"
                printf 'cudaenv: no alias or version named %s (%s); write the version without its prefix: %s\n' "$spec" "$origin" "$bare" >&2
            else
                printf 'cudaenv: no alias or version named %s (%s); create the alias with `cudaenv alias %s 12.4`\n' "$spec" "$origin" "$spec" >&2
            end
        end
        return 0
    end
    if set -q _CUDAENV_APPLIED; and test "$_cudaenv_r" = "$_CUDAENV_APPLIED"
        _cudaenv_sync
        return 0
    end
    if test "$_cudaenv_r" = system
        if test $mode = keep
            _cudaenv_switch system none keep
        else
            _cudaenv_deactivate
        end
        return 0
    end
    if test -f "$root/config.json"
        set -l label $_cudaenv_r
        _cudaenv_readfile "$root/config.json" 65536
        string match -qr -- '"ldLibraryPath"\s*:\s*"none"' "$_cudaenv_c"; and set policy none
        set -g _cudaenv_r $label
    end
    _cudaenv_switch $_cudaenv_r $policy $mode
    _cudaenv_report $_CUDAENV_APPLIED
end

function _cudaenv_report --argument-names label
    test "$label" != system; or return 0
    _cudaenv_store
    set -l cache "$_cudaenv_r/switch/check-$label"
    set -l want u
    set -l ldp ''
    if set -q LD_LIBRARY_PATH
        set ldp (_cudaenv_get LD_LIBRARY_PATH | string collect)
        set want "s$ldp"
    end
    # The Python environment as pythonKey (check-cache.ts) spells it: the first python3, else
    # python, of the PATH entries in turn, found with builtins.
    set -l py ''
    for dir in $PATH
        test -n "$dir"; or set dir .
        if test -f "$dir/python3" -a -x "$dir/python3"
            set py "$dir/python3"
            break
        else if test -f "$dir/python" -a -x "$dir/python"
            set py "$dir/python"
            break
        end
    end
    # A pyenv shim runs the version pyenv picks: PYENV_VERSION, else the nearest .python-version
    # at or above $PWD, else $PYENV_ROOT/version (the file and its first line).
    set -l pyv ''
    set -l pyroot "$PYENV_ROOT"
    test -n "$pyroot"; or set pyroot "$HOME/.pyenv"
    if test -z "$PYENV_VERSION"; and string match -q -- "$pyroot/shims/*" "$py"
        set -l d (string replace -r -- '/$' '' "$PWD")
        set -l f ''
        while true
            if test -f "$d/.python-version"
                set f "$d/.python-version"
                break
            end
            test -n "$d"; or break
            set d (string replace -r -- '/[^/]*$' '' "$d")
        end
        test -n "$f"; or set f "$pyroot/version"
        set -l first ''
        if test -f "$f" -a -r "$f"
            read first <$f
        end
        set pyv "$f:$first"
    end
    # The directory, where an empty or relative LD_LIBRARY_PATH entry (or a python found through a
    # relative PATH entry) makes the result depend on it (check-context.ts relativeTo).
    set -l here ''
    if test -n "$ldp"
        for e in (string split -- ':' (string replace -a -- ';' ':' "$ldp"))
            if not string match -q -- '/*' "$e"
                set here "$PWD"
                break
            end
        end
    end
    test -n "$py"; and not string match -q -- '/*' "$py"; and set here "$PWD"
    set want "K	$want	$VIRTUAL_ENV|$CONDA_PREFIX|$py|$PYENV_VERSION|$PYTHONPATH|$pyv|$LD_PRELOAD|$GLIBC_TUNABLES|$LD_BIND_NOW|$here"
    set -l hit ''
    if test -f "$cache"; and test -r "$cache"
        set -l cache_time (_cudaenv_mtime "$cache")
        set -l match ''
        set -l ok ''
        while read -l line
            switch $line
                case 'K*'
                    test -n "$match"; and test -n "$ok"; and break
                    if test "$line" = "$want"
                        set match 1
                        set ok 1
                    else
                        set match ''
                    end
                case 'W*'
                    if test -n "$match"
                        set -l w (string sub -s 3 -- "$line" | string collect)
                        if not test -e "$w"; or test (_cudaenv_mtime "$w") -ge $cache_time
                            set ok ''
                        end
                    end
                case 'M*'
                    # Absent when the check ran: stale once it exists.
                    if test -n "$match"
                        set -l w (string sub -s 3 -- "$line" | string collect)
                        test -e "$w"; and set ok ''
                    end
                case 'L*'
                    if test -n "$match"; and test -n "$ok"
                        set hit (string sub -s 3 -- "$line" | string collect)
                        break
                    end
            end
        end <$cache
    end
    if test -n "$hit"
        printf '%s\n' "$hit" >&2
    else
        command $_CUDAENV_BIN switch-check $label
    end
end

# Before `use` or `deactivate`: what the note after it compares with.
function _cudaenv_mark
    set -g _cudaenv_was ''
    set -q _CUDAENV_APPLIED; and set -g _cudaenv_was "$_CUDAENV_APPLIED"
    set -g _cudaenv_ldwas ''
    set -q _CUDAENV_LD_LIBRARY_PATH_ADDED; and set -g _cudaenv_ldwas "$_CUDAENV_LD_LIBRARY_PATH_ADDED"
    set -g _cudaenv_ldv u
    if set -q LD_LIBRARY_PATH
        set -l value (_cudaenv_get LD_LIBRARY_PATH | string collect)
        set -g _cudaenv_ldv "s$value"
    end
end

# After `use` or `deactivate`: one line on stderr saying what changed (as in posix.sh).
function _cudaenv_note --argument-names what
    set -l ld u
    if set -q LD_LIBRARY_PATH
        set -l value (_cudaenv_get LD_LIBRARY_PATH | string collect)
        set ld "s$value"
    end
    set -l added ''
    set -q _CUDAENV_LD_LIBRARY_PATH_ADDED; and set added "$_CUDAENV_LD_LIBRARY_PATH_ADDED"
    if test "$ld" = "$_cudaenv_ldv"
        set ld 'LD_LIBRARY_PATH untouched'
    else if test "$what" = deactivate
        set ld 'LD_LIBRARY_PATH restored'
    else if test -n "$_cudaenv_ldwas"; and test -n "$added"
        set ld "LD_LIBRARY_PATH: $_cudaenv_ldwas replaced by $added"
    else if test -n "$added"
        set ld "LD_LIBRARY_PATH: added $added"
    else
        set ld "LD_LIBRARY_PATH: removed $_cudaenv_ldwas"
    end
    if test "$what" = deactivate
        if test -z "$_cudaenv_was"
            printf 'cudaenv: nothing to deactivate (no cudaenv version in this shell)\n' >&2
            return 0
        end
        _cudaenv_store
        if test -n "$_CUDAENV_PATH_ADDED"; and _cudaenv_conda $_cudaenv_r
            printf 'cudaenv: deactivated CUDA %s; now CUDA %s of the conda environment %s (its cudaenv hook); %s\n' "$_cudaenv_was" "$_cudaenv_cl" "$CONDA_PREFIX" "$ld" >&2
            return 0
        end
        printf 'cudaenv: deactivated CUDA %s (the shell is as before cudaenv); %s\n' "$_cudaenv_was" "$ld" >&2
    else
        set -l was none
        test -n "$_cudaenv_was"; and set was "$_cudaenv_was"
        printf 'cudaenv: now CUDA %s (was %s); %s\n' "$_CUDAENV_APPLIED" "$was" "$ld" >&2
    end
end

function cudaenv --description 'cudaenv: CUDA toolkit versions (shell integration)'
    switch "$argv[1]"
        case deactivate
            set -l quiet ''
            for a in $argv[2..-1]
                switch $a
                    case -q --quiet
                        set quiet 1
                    case '*'
                        set quiet cli
                        break
                end
            end
            if test "$quiet" != cli
                if test -z "$quiet"
                    _cudaenv_store
                    if test -f "$_cudaenv_r/config.json"
                        _cudaenv_readfile "$_cudaenv_r/config.json" 65536
                        string match -qr -- '"quiet"\s*:\s*true' "$_cudaenv_c"; and set quiet 1
                    end
                end
                _cudaenv_mark
                _cudaenv_deactivate
                _cudaenv_keynow
                set -g _cudaenv_key "$_cudaenv_k"
                test -n "$quiet"; or _cudaenv_note deactivate
                return 0
            end
        case use
            set -l out (CUDAENV_SHELL=fish command $_CUDAENV_BIN $argv | string collect)
            set -l rc $pipestatus[1]
            if string match -q -- '# cudaenv-shell-code*' "$out"
                printf '%s\n' "$out" | source
            else if test -n "$out"
                printf '%s\n' "$out"
            end
            return $rc
    end
    command $_CUDAENV_BIN $argv
end
