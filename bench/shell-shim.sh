#!/usr/bin/env bash
# What a shim adds to `nvcc --version` compared with calling the toolkit's nvcc directly
# (wall time, and CPU time: user+system, which load on a shared machine does not inflate)
# (hyperfine, no intermediate shell: -N). Three cases: the version from the global default,
# from a .cuda-version three directories up (the shim parses it), and from CUDAENV_VERSION.
# Usage: bench/shell-shim.sh [RUNS]
. "$(dirname "$0")/shell-setup.sh"
RUNS=${1:-300}
command -v hyperfine > /dev/null || { echo "hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
"$CLI" global 12.4 > /dev/null
SHIM="$CUDAENV_DIR/shims/nvcc"
DIRECT="$CUDAENV_DIR/versions/12.4.1/bin/nvcc"
run() { # name, dir, extra env
  local name=$1 dir=$2 json="$BENCH_DIR/$1.json"
  (cd "$dir" && env $3 hyperfine -N --warmup 30 --runs "$RUNS" --export-json "$json" \
    "$DIRECT --version" "$SHIM --version" > /dev/null 2>&1)
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).results;
    const ms = (x) => (x * 1000).toFixed(2);
    const cpu = (x) => x.user + x.system;
    console.log(`${process.argv[2]}: direct ${ms(r[0].mean)} ms, shim ${ms(r[1].mean)} ms (median ${ms(r[0].median)} / ${ms(r[1].median)}), overhead ${ms(r[1].mean - r[0].mean)} ms mean, ${ms(r[1].median - r[0].median)} ms median (target <= 5 ms); CPU (user+system) direct ${ms(cpu(r[0]))} ms, shim ${ms(cpu(r[1]))} ms, overhead ${ms(cpu(r[1]) - cpu(r[0]))} ms`);
  ' "$json" "$name"
}
run "global default" "$BENCH_DIR" ""
run ".cuda-version 3 levels up" "$PROJ_B" ""
run "CUDAENV_VERSION" "$BENCH_DIR" "CUDAENV_VERSION=12.4"
