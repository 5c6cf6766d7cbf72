#!/bin/sh
# Runs COMMAND... with no Node.js on the machine as far as it can tell: in a private mount
# namespace, every directory that holds a `node` or `nodejs` (those on PATH, and where each
# resolves to) is overlaid with whiteouts for them, so they do not exist there (not merely
# unexecutable). Needs root and mount namespaces (CI has both: .ci/run checks).
# Usage: test/exe/without-node.sh COMMAND [ARG...]
set -eu
[ $# -gt 0 ] || { echo 'usage: without-node.sh COMMAND [ARG...]' >&2; exit 2; }
if [ "${_CUDAENV_NO_NODE_INNER-}" != 1 ]; then
  exec env _CUDAENV_NO_NODE_INNER=1 unshare -m --propagation private "$0" "$@"
fi
unset _CUDAENV_NO_NODE_INNER
dirs=
add() { case " $dirs " in *" $1 "*) ;; *) dirs="$dirs $1" ;; esac; }
IFS=:
for d in $PATH /usr/bin /bin /usr/local/bin; do
  for n in node nodejs; do
    if [ -e "$d/$n" ] || [ -L "$d/$n" ]; then
      add "$(cd "$d" && pwd -P)"
      r=$(readlink -f "$d/$n") && add "${r%/*}"
    fi
  done
done
unset IFS
work=$(mktemp -d)
mount -t tmpfs tmpfs "$work"
i=0
for d in $dirs; do
  i=$((i + 1))
  mkdir -p "$work/$i/upper" "$work/$i/work"
  for f in "$d"/node "$d"/nodejs "$d"/node-*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    mknod "$work/$i/upper/${f##*/}" c 0 0
  done
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$work/$i/upper,workdir=$work/$i/work" "$d"
done
if command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1; then
  echo "without-node.sh: node is still found at $(command -v node || command -v nodejs)" >&2
  exit 99
fi
exec "$@"
