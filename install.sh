#!/bin/sh
# cudaenv installer: the single executable (no Node.js needed) into ~/.cudaenv/bin.
#
#   curl -fsSL BASE/install.sh | sh        (or: wget -qO- BASE/install.sh | sh)
#
# BASE is where a release's files are (cudaenv-linux-x64.tar.xz, cudaenv-linux-arm64.tar.xz,
# SHA256SUMS: what `npm run build:exe` writes under dist-exe/). The install.sh attached to a
# release knows its BASE; this one, the repository's, needs CUDAENV_INSTALL_BASE.
#
# Settings (environment):
#   CUDAENV_INSTALL_BASE  download from this URL instead (a mirror holding the same files)
#   CUDAENV_INSTALL_DIR   install there instead of ${CUDAENV_DIR:-~/.cudaenv}/bin
#
# It checks the archive against SHA256SUMS before anything of it runs, replaces an earlier
# install atomically, and changes no rc file: it prints the lines to add.
set -eu

DEFAULT_BASE=''

say() { printf 'cudaenv-install: %s\n' "$*"; }
die() {
  printf 'cudaenv-install: error: %s\n' "$1" >&2
  [ $# -lt 2 ] || printf '%s\n' "$2" >&2
  exit 1
}

base=${CUDAENV_INSTALL_BASE:-$DEFAULT_BASE}
[ -n "$base" ] || die "no download URL: this install.sh is the repository's copy, which does not know where releases are" \
  "Set CUDAENV_INSTALL_BASE to the URL that holds a release's cudaenv-linux-*.tar.xz and SHA256SUMS (or use the install.sh attached to a release)."
case $base in
  http://*|https://*|file://*) ;;
  *) die "CUDAENV_INSTALL_BASE=$base is not an http://, https:// or file:// URL" "Set it to the URL of a directory holding cudaenv-linux-*.tar.xz and SHA256SUMS." ;;
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
archive=cudaenv-linux-$arch.tar.xz

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL --retry 2 -o "$2" "$1" || die "could not download $1 (curl exit $?)" "Check the network, or CUDAENV_INSTALL_BASE=$base."; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1" || die "could not download $1 (wget exit $?)" "Check the network, or CUDAENV_INSTALL_BASE=$base."; }
else
  die "neither curl nor wget is installed" "Install one (apt-get install curl, dnf install curl), then run this again."
fi
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
elif command -v openssl >/dev/null 2>&1; then
  sha256() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
else
  die "no SHA-256 program (sha256sum, shasum or openssl) to check the download with" "Install coreutils or openssl, then run this again."
fi
command -v xz >/dev/null 2>&1 || die "xz is not installed: the archive is $archive" "Install it (apt-get install xz-utils, dnf install xz), then run this again."

dir=${CUDAENV_INSTALL_DIR:-${CUDAENV_DIR:-$HOME/.cudaenv}/bin}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudaenv-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

say "downloading $base/$archive"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS"
fetch "$base/$archive" "$tmp/$archive"
expected=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "$base/SHA256SUMS lists no $archive" "The mirror is incomplete: it must hold the files of one release, SHA256SUMS included."
actual=$(sha256 "$tmp/$archive")
[ "$actual" = "$expected" ] || die "$base/$archive has SHA-256 $actual, but SHA256SUMS says $expected: not installed" \
  "The download was damaged or the mirror's files do not match; run this again, or check CUDAENV_INSTALL_BASE=$base."

mkdir "$tmp/x"
xz -dc "$tmp/$archive" | tar -xf - -C "$tmp/x" cudaenv || die "could not unpack $archive" "Run this again; if it fails again, report it."
[ -f "$tmp/x/cudaenv" ] || die "$archive holds no cudaenv" "The mirror's archive is not a cudaenv release."
chmod 755 "$tmp/x/cudaenv"
new=$(CUDAENV_DIR="$tmp/store" "$tmp/x/cudaenv" --version 2>&1) || die "the downloaded cudaenv does not run here: $new" \
  "It needs glibc >= 2.28, libstdc++ and libatomic (apt-get install libatomic1, dnf install libatomic)."

mkdir -p "$dir" || die "cannot create $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."
old=
[ ! -x "$dir/cudaenv" ] || old=$("$dir/cudaenv" --version 2>/dev/null) || old='an unknown version'
# Atomic: a cudaenv running from $dir keeps its file; the next start is the new one.
cp "$tmp/x/cudaenv" "$dir/.cudaenv.new.$$" || die "cannot write $dir" "Set CUDAENV_INSTALL_DIR to a directory you can write."
mv -f "$dir/.cudaenv.new.$$" "$dir/cudaenv"
# What `cudaenv self-update` reads: where this install came from.
printf '{"installer": "install.sh", "base": "%s", "arch": "%s"}\n' "$base" "$arch" > "$dir/.cudaenv-receipt.json.$$"
mv -f "$dir/.cudaenv-receipt.json.$$" "$dir/.cudaenv-receipt.json"

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
