# Shared by bench/shell-*.sh: a throw-away store with two fake toolkits (a sh nvcc each),
# registered through the real CLI, and two projects pinning each version.
# Sets: BENCH_DIR, CUDAENV_DIR, CLI, PROJ_A (11.8), PROJ_B (12.4).
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
CLI="$REPO/bin/run.cjs"
[ -f "$REPO/dist/fast-path.js" ] || { echo "build first: npm run build" >&2; exit 1; }
BENCH_DIR=$(mktemp -d /tmp/cudaenv-bench-XXXXXX)
trap 'rm -rf "$BENCH_DIR"' EXIT
export CUDAENV_DIR="$BENCH_DIR/store"
export HOME="$BENCH_DIR/home"
mkdir -p "$HOME"
for v in 11.8.0 12.4.1; do
  tk="$BENCH_DIR/toolkits/$v"
  mkdir -p "$tk/bin" "$tk/lib64" "$tk/include"
  printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$v" > "$tk/version.json"
  printf '#!/bin/sh\necho "Cuda compilation tools, release %s, V%s"\n' "${v%.*}" "$v" > "$tk/bin/nvcc"
  chmod +x "$tk/bin/nvcc"
  : > "$tk/include/cuda_runtime_api.h"
  "$CLI" add "$tk" > /dev/null
done
PROJ_A="$BENCH_DIR/proj-a/src/deep"
PROJ_B="$BENCH_DIR/proj-b/src/deep"
mkdir -p "$PROJ_A" "$PROJ_B"
echo 11.8 > "$BENCH_DIR/proj-a/.cuda-version"
echo 12.4 > "$BENCH_DIR/proj-b/.cuda-version"
