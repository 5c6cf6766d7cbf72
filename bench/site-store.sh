#!/usr/bin/env bash
# Issue 45: the cost of a site store beneath the user's store, side by side with one store, in
# the same run (alternating blocks, so that load hits both alike; medians of the blocks).
# Anchor: the store of bench/shell-setup.sh alone. Site: a second user store whose 12.4.1 comes
# from a site store (CUDAENV_SITE_DIRS), and 11.8.0 its own.
# Rows: the prompt hook when nothing changed (bash, zsh, fish; µs/prompt), the shim (`nvcc
# --version` through the shim, ms/call), a new interactive shell (bash -i sourcing the start
# file, ms). Usage: bench/site-store.sh [N]
. "$(dirname "$0")/shell-setup.sh"
N=${1:-200}
M=20
B=$(( (N + M - 1) / M ))
ONE=$CUDAENV_DIR
SITE="$BENCH_DIR/site"
USER2="$BENCH_DIR/user2"
CUDAENV_DIR=$SITE "$CLI" add "$BENCH_DIR/toolkits/12.4.1" > /dev/null
CUDAENV_DIR=$USER2 "$CLI" add "$BENCH_DIR/toolkits/11.8.0" > /dev/null
export CUDAENV_SITE_DIRS_FILE="$BENCH_DIR/no-site-dirs"
CUDAENV_DIR=$ONE "$CLI" global 12.4 > /dev/null
CUDAENV_DIR=$USER2 CUDAENV_SITE_DIRS=$SITE "$CLI" global 12.4 > /dev/null
for d in "$ONE" "$USER2"; do for s in bash zsh fish; do CUDAENV_DIR=$d CUDAENV_SITE_DIRS=$([ "$d" = "$USER2" ] && echo "$SITE") "$CLI" init $s > /dev/null; done; done
ms() { date +%s%N; }
med() { sort -n | awk '{x[NR]=$1} END {print (NR % 2 ? x[(NR+1)/2] : (x[NR/2] + x[NR/2+1]) / 2)}'; }
# One block of M of CMD with the environment of store $1 -> ns per call.
block() {
  local store=$1; shift
  if [ "$store" = "$USER2" ]; then export CUDAENV_SITE_DIRS=$SITE; else unset CUDAENV_SITE_DIRS; fi
  CUDAENV_DIR=$store "$@"
}
for shell in bash zsh fish; do
  command -v $shell > /dev/null || { echo "$shell: missing, skipped"; continue; }
  if [ $shell = fish ]; then
    body="source \$CUDAENV_DIR/shell/init.fish; cd '$PROJ_B'; _cudaenv_hook; set a (date +%s%N); for i in (seq $M); _cudaenv_hook; end; set b (date +%s%N); math \"(\$b - \$a) / $M\""
  else
    body=". \$CUDAENV_DIR/shell/init.$shell; cd '$PROJ_B'; _cudaenv_hook; a=\$(date +%s%N); i=0; while [ \$i -lt $M ]; do _cudaenv_hook; i=\$((i+1)); done; b=\$(date +%s%N); echo \$(( (b - a) / $M ))"
  fi
  o=(); s=()
  for b in $(seq $B); do
    o+=("$(block "$ONE" $shell -c "$body" 2>/dev/null)"); s+=("$(block "$USER2" $shell -c "$body" 2>/dev/null)")
  done
  mo=$(printf '%s\n' "${o[@]}" | med); mst=$(printf '%s\n' "${s[@]}" | med)
  awk -v a="$mo" -v b="$mst" -v sh=$shell -v n=$((B * M)) 'BEGIN { printf "%s prompt (nothing changed): one store %.1f µs, with a site store %.1f µs (+%.1f µs), N=%d\n", sh, a / 1000, b / 1000, (b - a) / 1000, n }'
done
# The shim and a new shell: M calls per block, blocks alternating.
o=(); s=(); no=(); ns=()
for b in $(seq $B); do
  for st in "$ONE" "$USER2"; do
    a=$(ms); for i in $(seq $M); do block "$st" "$st/shims/nvcc" --version > /dev/null; done; z=$(ms)
    if [ "$st" = "$ONE" ]; then o+=($(( (z - a) / M ))); else s+=($(( (z - a) / M ))); fi
    a=$(ms); for i in $(seq 5); do block "$st" bash -c ". \$CUDAENV_DIR/shell/init.bash; _cudaenv_hook" > /dev/null 2>&1; done; z=$(ms)
    if [ "$st" = "$ONE" ]; then no+=($(( (z - a) / 5 ))); else ns+=($(( (z - a) / 5 ))); fi
  done
done
awk -v a="$(printf '%s\n' "${o[@]}" | med)" -v b="$(printf '%s\n' "${s[@]}" | med)" 'BEGIN { printf "shim nvcc --version: one store %.2f ms, with a site store %.2f ms (+%.2f ms; target <= +5 ms)\n", a / 1e6, b / 1e6, (b - a) / 1e6 }'
awk -v a="$(printf '%s\n' "${no[@]}" | med)" -v b="$(printf '%s\n' "${ns[@]}" | med)" 'BEGIN { printf "new bash (start file + first prompt): one store %.2f ms, with a site store %.2f ms (+%.2f ms; target <= +10 ms)\n", a / 1e6, b / 1e6, (b - a) / 1e6 }'
