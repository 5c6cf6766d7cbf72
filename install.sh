#!/bin/sh
# cudaenv installer: the single executable (no Node.js needed) into ~/.cudaenv/bin.
#
#   curl -fsSL BASE/install.sh | sh        (or: wget -qO- BASE/install.sh | sh)
#
# BASE is where a release's files are (cudaenv-linux-x64.tar.xz, cudaenv-linux-arm64.tar.xz,
# cudaenv-linux-x64, cudaenv-linux-arm64, VERSION, SHA256SUMS, SHA256SUMS.sig: what
# `npm run build:exe` and the release workflow's signing write). The install.sh attached to a
# release knows its BASE (https); this one, the repository's, needs CUDAENV_INSTALL_BASE.
#
# Settings (environment):
#   CUDAENV_INSTALL_BASE  download from this URL instead (a mirror holding the same files);
#                         https://, or http:// or file:// when named here explicitly
#   CUDAENV_INSTALL_DIR   install there instead of ${CUDAENV_DIR:-~/.cudaenv}/bin
#   CUDAENV_INSTALL_ALLOW_DOWNGRADE=1   install the release even if it is older than the installed cudaenv
#
# Before anything of the release is unpacked or run, it checks, in this order: SHA256SUMS.sig is
# the signature of SHA256SUMS by cudaenv's release key (RELEASE_KEY below; openssl >= 3.0 checks
# it); VERSION, the archive, and the executable unpacked from it have the SHA-256 the signed
# SHA256SUMS gives; the archive holds one regular file, cudaenv (no link, no other name); the
# release is not older than the installed cudaenv. It replaces an earlier install atomically and
# changes no rc file: it prints the lines to add.
set -eu

DEFAULT_BASE=''

# cudaenv's release key (ed25519, the public half): the one key a release's SHA256SUMS must be signed with.
RELEASE_KEY='-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA74YwyQ0z/PG4z/D/KsthZ2uzVkxGTRLf9YaVSpc1S2o=
-----END PUBLIC KEY-----'

say() { printf 'cudaenv-install: %s\n' "$*"; }
die() {
  printf 'cudaenv-install: error: %s\n' "$1" >&2
  [ $# -lt 2 ] || printf '%s\n' "$2" >&2
  exit 1
}

base=${CUDAENV_INSTALL_BASE:-$DEFAULT_BASE}
[ -n "$base" ] || die "no download URL: this install.sh is the repository's copy, which does not know where releases are" \
  "Set CUDAENV_INSTALL_BASE to the URL that holds a release's cudaenv-linux-*.tar.xz, SHA256SUMS and SHA256SUMS.sig (or use the install.sh attached to a release)."
case $base in
  https://*) scheme=https ;;
  http://*|file://*)
    # Only when the user names it: a release's own install.sh has an https base (scripts/build-exe.mjs checks).
    [ -n "${CUDAENV_INSTALL_BASE:-}" ] || die "this install.sh's base $base is not https://" "Set CUDAENV_INSTALL_BASE to the https:// URL of a cudaenv release."
    scheme=${base%%://*} ;;
  *) die "CUDAENV_INSTALL_BASE=$base is not an https://, http:// or file:// URL" "Set it to the URL of a directory holding a cudaenv release (cudaenv-linux-*.tar.xz, SHA256SUMS, SHA256SUMS.sig)." ;;
esac
case $base in
  *'"'*|*'\'*|*' '*) die "CUDAENV_INSTALL_BASE=$base contains a quote, a backslash or a space" "Percent-encode them (%22, %5C, %20)." ;;
esac
base=${base%/}

os=$(uname -s)
[ "$os" = Linux ] || die "cudaenv's executables are for Linux; this is $os" "On other systems install the npm package (README: Installing cudaenv)."
machine=$(uname -m)
case $machine in
  x86_64|amd64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) die "no cudaenv executable for the $machine architecture (there are x86_64 and aarch64 ones)" \
       "On this machine install the npm package with Node.js >= 20.18 (README: Installing cudaenv)." ;;
esac
exe_name=cudaenv-linux-$arch
archive=$exe_name.tar.xz

# From an https base, no redirect may lead to plain http (curl: --proto-redir; wget, which has no
# such option, follows the redirects itself below, checking each Location).
case $scheme in
  https) protos='=https' ;;
  http) protos='=http,https' ;;
  file) protos='=file' ;;
esac
if command -v curl >/dev/null 2>&1; then
  fetch() {
    curl -fsSL --retry 2 --proto "$protos" --proto-redir "$protos" -o "$2" "$1" || die "could not download $1 (curl exit $?)" \
      "Check the network, or CUDAENV_INSTALL_BASE=$base. (From an https:// base no redirect to http:// is followed.)"
  }
elif command -v wget >/dev/null 2>&1; then
  [ "$scheme" != file ] || die "wget cannot read file:// URLs ($base)" "Install curl, or serve the release over https."
  fetch() {
    url=$1 hops=0
    while :; do
      rm -f "$2"
      if wget -q --max-redirect=0 --server-response -O "$2" "$url" 2>"$tmp/wget.log"; then return 0; fi
      loc=$(sed -n 's/^ *[Ll]ocation: *//p' "$tmp/wget.log" | tr -d '\r' | tail -n 1)
      [ -n "$loc" ] || die "could not download $url ($(sed -n 's/^ *\(HTTP\/[0-9.]* [0-9][0-9]*.*\)/\1/p' "$tmp/wget.log" | tr -d '\r' | tail -n 1))" \
        "Check the network, or CUDAENV_INSTALL_BASE=$base."
      case $loc in
        https://*) ;;
        http://*) [ "$scheme" = http ] || die "$url redirects to $loc, from https to plain http: refused" \
                    "Use a base that serves over https throughout (or name an http:// base in CUDAENV_INSTALL_BASE knowingly)." ;;
        /*) loc=$(printf '%s\n' "$url" | sed 's|^\([a-z]*://[^/]*\).*|\1|')$loc ;;
        *) die "$url redirects to $loc, which is no absolute URL" "Use another mirror." ;;
      esac
      hops=$((hops + 1))
      [ "$hops" -le 10 ] || die "$1 redirects more than 10 times" "Use another mirror."
      url=$loc
    done
  }
else
  die "neither curl nor wget is installed" "Install one (apt-get install curl, dnf install curl), then run this again."
fi
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  sha256() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
fi
command -v xz >/dev/null 2>&1 || die "xz is not installed: the archive is $archive" "Install it (apt-get install xz-utils, dnf install xz), then run this again."
# The signature: no openssl, no install (it is never skipped).
command -v openssl >/dev/null 2>&1 || die "openssl is not installed: it checks the release's signature, which this installer never skips" \
  "Install OpenSSL >= 3.0 (apt-get install openssl, dnf install openssl), then run this again."
case $(openssl version 2>/dev/null) in
  'OpenSSL 0.'*|'OpenSSL 1.'*|LibreSSL*) die "$(openssl version) cannot check an ed25519 signature (openssl pkeyutl -rawin needs OpenSSL >= 3.0)" \
    "Install OpenSSL >= 3.0, or download the release's files yourself and check SHA256SUMS.sig with a newer openssl (docs/install.md)." ;;
esac

# Semantic-version order (MAJOR.MINOR.PATCH[-PRE]): true when $1 is older than $2.
older() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    pa = index(a, "-") ? substr(a, index(a, "-") + 1) : ""; if (index(a, "-")) a = substr(a, 1, index(a, "-") - 1)
    pb = index(b, "-") ? substr(b, index(b, "-") + 1) : ""; if (index(b, "-")) b = substr(b, 1, index(b, "-") - 1)
    split(a, x, "."); split(b, y, ".")
    for (i = 1; i <= 3; i++) { if (x[i] + 0 < y[i] + 0) exit 0; if (x[i] + 0 > y[i] + 0) exit 1 }
    if (pa == pb || pa == "") exit 1
    if (pb == "") exit 0
    exit !(pa < pb)
  }'
}

dir=${CUDAENV_INSTALL_DIR:-${CUDAENV_DIR:-$HOME/.cudaenv}/bin}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudaenv-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

say "downloading $base/SHA256SUMS"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS"
fetch "$base/SHA256SUMS.sig" "$tmp/SHA256SUMS.sig"
printf '%s\n' "$RELEASE_KEY" > "$tmp/release-key.pem"
openssl pkeyutl -verify -pubin -inkey "$tmp/release-key.pem" -rawin -in "$tmp/SHA256SUMS" -sigfile "$tmp/SHA256SUMS.sig" >"$tmp/verify.log" 2>&1 \
  || die "$base/SHA256SUMS.sig is not a signature of $base/SHA256SUMS by cudaenv's release key: not installed" \
    "The files at $base are not a cudaenv release as published (altered, or damaged on the way); check CUDAENV_INSTALL_BASE, then run this again."

# The SHA-256 that the signed SHA256SUMS gives for $1 (exactly one line, or none).
listed() {
  awk -v f="$1" 'NF == 2 && ($2 == f || $2 == "*" f) && $1 ~ /^[0-9a-f]+$/ && length($1) == 64 { print $1; n++ } END { exit n > 1 }' "$tmp/SHA256SUMS" \
    || die "$base/SHA256SUMS lists $1 more than once" "The files at $base are not a cudaenv release as published."
}
check() { # FILE NAME-IN-SHA256SUMS WHAT
  want=$(listed "$2")
  [ -n "$want" ] || die "$base/SHA256SUMS lists no $2" "The mirror is incomplete: it must hold the files of one release, SHA256SUMS included."
  got=$(sha256 "$1")
  [ "$got" = "$want" ] || die "$3 has SHA-256 $got, but SHA256SUMS says $want: not installed" \
    "The download was damaged or the mirror's files do not match; run this again, or check CUDAENV_INSTALL_BASE=$base."
}

fetch "$base/VERSION" "$tmp/VERSION"
check "$tmp/VERSION" VERSION "$base/VERSION"
version=$(head -n 1 "$tmp/VERSION")
printf '%s\n' "$version" | grep -Eq '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$' \
  || die "$base/VERSION holds '$version', not a version" "The files at $base are not a cudaenv release as published."

# The installed version: the installed executable's own answer, asked only of a file of this user's.
old=
if [ -x "$dir/cudaenv" ] && [ -O "$dir/cudaenv" ] && [ ! -L "$dir/cudaenv" ]; then
  old=$("$dir/cudaenv" --version 2>/dev/null) || old='an unknown version'
fi
old_version=$(printf '%s\n' "$old" | sed -n 's|^cudaenv/\([^ ]*\) .*|\1|p')
if [ -n "$old_version" ] && older "$version" "$old_version" && [ "${CUDAENV_INSTALL_ALLOW_DOWNGRADE:-}" != 1 ]; then
  die "the release at $base is cudaenv $version, older than the installed cudaenv $old_version ($dir/cudaenv): not installed" \
    "An older release can carry fixed bugs and holes again. To go back to it anyway, set CUDAENV_INSTALL_ALLOW_DOWNGRADE=1."
fi

say "downloading $base/$archive (cudaenv $version)"
fetch "$base/$archive" "$tmp/$archive"
check "$tmp/$archive" "$archive" "$base/$archive"

# One member, a regular file named cudaenv: no link (symbolic or hard), device, directory or other name.
xz -dc "$tmp/$archive" | tar -tf - > "$tmp/names" || die "could not list $archive" "Run this again; if it fails again, report it."
xz -dc "$tmp/$archive" | tar -tvf - > "$tmp/listing" || die "could not list $archive" "Run this again; if it fails again, report it."
[ "$(cat "$tmp/names")" = cudaenv ] || die "$archive holds $(wc -l < "$tmp/names") members ($(head -n 3 "$tmp/names" | tr '\n' ' ')), not only cudaenv: not installed" \
  "A cudaenv release's archive holds one regular file, cudaenv. Check CUDAENV_INSTALL_BASE=$base."
case $(cat "$tmp/listing") in
  -*) ;;
  *) die "$archive holds cudaenv as something other than a regular file ($(cat "$tmp/listing")): not installed" \
       "A cudaenv release's archive holds one regular file, cudaenv. Check CUDAENV_INSTALL_BASE=$base." ;;
esac
mkdir -m 700 "$tmp/x"
xz -dc "$tmp/$archive" | tar -xf - -C "$tmp/x" --no-same-owner --no-same-permissions cudaenv || die "could not unpack $archive" "Run this again; if it fails again, report it."
[ -f "$tmp/x/cudaenv" ] && [ ! -L "$tmp/x/cudaenv" ] || die "$archive unpacked no regular file cudaenv: not installed" "The mirror's archive is not a cudaenv release."
check "$tmp/x/cudaenv" "$exe_name" "cudaenv in $base/$archive"
chmod 755 "$tmp/x/cudaenv"
# Verified (signature, then SHA-256): only now may it run (does it start on this machine?).
new=$(CUDAENV_DIR="$tmp/store" "$tmp/x/cudaenv" --version 2>&1) || die "the downloaded cudaenv does not run here: $new" \
  "It needs glibc >= 2.28, libstdc++ and libatomic (apt-get install libatomic1, dnf install libatomic)."

mkdir -p "$dir" || die "cannot create $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."
# Atomic: a cudaenv running from $dir keeps its file; the next start is the new one.
# mktemp: a file of a random name, created exclusively (no name another user can guess and plant).
part=$(mktemp "$dir/.cudaenv.new.XXXXXXXXXX") || die "cannot write $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."
cp "$tmp/x/cudaenv" "$part" && chmod 755 "$part" || { rm -f "$part"; die "cannot write $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."; }
mv -f "$part" "$dir/cudaenv"
# What `cudaenv self-update` reads: where this install came from.
part=$(mktemp "$dir/.cudaenv-receipt.json.XXXXXXXXXX") || die "cannot write $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."
printf '{"installer": "install.sh", "base": "%s", "arch": "%s"}\n' "$base" "$arch" > "$part"
chmod 644 "$part"
mv -f "$part" "$dir/.cudaenv-receipt.json"

if [ -n "$old" ]; then
  say "replaced $old with $new in $dir"
else
  say "installed $new in $dir"
fi

case ":${PATH-}:" in
  *":$dir:"*) on_path=yes ;;
  *) on_path= ;;
esac
printf '\nAdd cudaenv to your shell (this installer changes no rc file):\n'
if [ -z "$on_path" ]; then
  printf '  bash, ~/.bashrc:   export PATH="%s:$PATH"\n' "$dir"
  printf '  zsh, ~/.zshrc:     export PATH="%s:$PATH"\n' "$dir"
  printf '  fish, ~/.config/fish/config.fish:   fish_add_path %s\n' "$dir"
  printf 'then, after that line:\n'
fi
printf '  bash:  . "${CUDAENV_DIR:-$HOME/.cudaenv}/shell/init.bash" 2>/dev/null || eval "$(cudaenv init bash)"\n'
printf '  zsh:   . "${CUDAENV_DIR:-$HOME/.cudaenv}/shell/init.zsh" 2>/dev/null || eval "$(cudaenv init zsh)"\n'
printf '  fish:  source (set -q CUDAENV_DIR; and echo $CUDAENV_DIR; or echo ~/.cudaenv)/shell/init.fish 2>/dev/null; or cudaenv init fish | source\n'
printf 'Update later with `cudaenv self-update`.\n'
