#!/usr/bin/env bash
# A real CUDA build of PyTorch as a system image, for bench/check-torch.mjs (issue 37): Debian
# trixie's python3-torch-cuda 2.6.0 (libtorch-cuda-2.6) with NVIDIA's CUDA 12.4.1 libraries as
# Debian packages them, the driver's user-space libcuda1 and everything they depend on
# (no recommends), each unpacked with dpkg-deb -x into bench/out/torch-trixie/ (gitignored),
# with the links the packages' maintainer scripts would make (/etc/alternatives for libcuda)
# and an ld.so.cache written by the image's own ldconfig (in a chroot: run as root).
# 259 packages, 6.8 GB unpacked: a benchmark's fixture, never CI's.
# The system's apt configuration is never touched: a private sources.list, package lists, cache
# and an empty dpkg status live under bench/out/.apt-torch/. Idempotent: a package already
# unpacked is skipped. The Debian mirror is the one this machine's apt uses (its sources list, read
# by test/fixtures/apt-mirror.sh), or CUDAENV_DEBIAN_MIRROR. Usage: bash bench/fetch-torch.sh [DEST]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=test/fixtures/apt-mirror.sh
. "$HERE/../test/fixtures/apt-mirror.sh"
DEST="${1:-$HERE/out/torch-trixie}"
STATE="$HERE/out/.apt-torch"
if ! MIRROR=$(debian_mirror); then
  echo "fetch-torch: no Debian archive among this machine's apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list and *.sources); name a Debian mirror with CUDAENV_DEBIAN_MIRROR=URI" >&2
  exit 1
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
ROOTS="python3-torch-cuda libcuda1 libc-bin bash"

say() { printf 'fetch-torch: %s\n' "$*"; }
mkdir -p "$DEST" "$STATE/lists/partial" "$STATE/cache/archives/partial" "$STATE/debs"
printf 'deb [signed-by=%s] %s trixie main contrib non-free\n' "$KEYRING" "$MIRROR" >"$STATE/sources.list"
: >"$STATE/status"
opts=(
  -o "Dir::Etc::SourceList=$STATE/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$STATE/lists" -o "Dir::Cache=$STATE/cache" -o "Dir::State::Status=$STATE/status"
  -o Debug::NoLocking=1 -o APT::Architecture=amd64 -o APT::Architectures=amd64 -o Acquire::Retries=2
)
if [ ! -f "$STATE/lists/.updated" ] || [ -n "$(find "$STATE/lists/.updated" -mtime +7)" ]; then
  apt-get "${opts[@]}" -qq update
  touch "$STATE/lists/.updated"
fi
# The closure apt would install on an empty system: every package, versions as the archive has them.
mapfile -t pkgs < <(apt-get "${opts[@]}" -s install --no-install-recommends $ROOTS | awk '/^Inst /{print $2}')
say "${#pkgs[@]} packages"
missing=()
for p in "${pkgs[@]}"; do [ -f "$DEST/.unpacked/$p" ] || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$STATE/debs" && apt-get "${opts[@]}" -qq download "${missing[@]}")
  mkdir -p "$DEST/.unpacked"
  for p in "${missing[@]}"; do
    deb=$(ls "$STATE/debs/${p}_"*.deb | head -n1)
    dpkg-deb -x "$deb" "$DEST"
    rm -f "$deb"
    touch "$DEST/.unpacked/$p"
  done
fi
say "unpacked into $DEST"

# What base-files and the maintainer scripts would have done: the merged-/usr links; libcuda1
# through nvidia-alternative's update-alternatives (/usr/lib/x86_64-linux-gnu/libcuda.so.1 ->
# /etc/alternatives/... -> nvidia/current/), libblas3 and liblapack3 through theirs.
for l in bin sbin lib lib64; do [ -e "$DEST/$l" ] || ln -s "usr/$l" "$DEST/$l"; done
lib=usr/lib/x86_64-linux-gnu
mkdir -p "$DEST/etc/alternatives"
alternative() { # NAME TARGET (image paths)
  [ -e "$DEST$2" ] || return 0
  ln -sfn "$2" "$DEST/etc/alternatives/$1-x86_64-linux-gnu"
  ln -sfn "/etc/alternatives/$1-x86_64-linux-gnu" "$DEST/$lib/$1"
}
for n in libcuda.so.1 libcuda.so libnvidia-ptxjitcompiler.so.1; do alternative "$n" "/$lib/nvidia/current/$n"; done
alternative libblas.so.3 "/$lib/blas/libblas.so.3"
alternative liblapack.so.3 "/$lib/lapack/liblapack.so.3"
# cuDNN: Debian's nvidia-cudnn only downloads it from NVIDIA when installed, which cannot be done
# here. In its place a stand-in built by gcc with the real SONAME and version node, defining each
# cudnn* symbol torch's libraries import (no code: the check reads tables, nothing runs it).
if [ ! -e "$DEST/$lib/libcudnn.so.9" ]; then
  tmp=$(mktemp -d)
  nm -D --undefined-only "$DEST/$lib"/libtorch*.so.2.6 | awk '{print $2}' | sed -n 's/^\(cudnn[A-Za-z0-9_]*\)@libcudnn\.so\.9$/\1/p' | sort -u >"$tmp/names"
  sed 's/.*/void &(void) {}/' "$tmp/names" >"$tmp/cudnn.c"
  printf 'libcudnn.so.9 { global: cudnn*; local: *; };\n' >"$tmp/cudnn.map"
  gcc -shared -fPIC -o "$DEST/$lib/libcudnn.so.9" "$tmp/cudnn.c" -Wl,-soname,libcudnn.so.9 -Wl,--version-script="$tmp/cudnn.map"
  say "libcudnn.so.9: a stand-in with $(wc -l <"$tmp/names") symbols (nvidia-cudnn downloads the real one from NVIDIA)"
  rm -rf "$tmp"
fi
[ -f "$DEST/etc/ld.so.conf" ] || printf 'include /etc/ld.so.conf.d/*.conf\n' >"$DEST/etc/ld.so.conf"
# The image's own ldconfig, in the image (absolute links resolve there).
if [ "$(id -u)" = 0 ]; then
  chroot "$DEST" /usr/sbin/ldconfig
  say "ld.so.cache written by the image's ldconfig"
else
  say "not root: no ld.so.cache written (run again as root)"
fi
du -sh "$DEST" | sed 's/^/fetch-torch: /'
