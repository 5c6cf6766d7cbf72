#!/usr/bin/env bash
# A `cd` that changes the version, with the check result cached: the hook switches in shell
# code (no Node.js process: the CLI is replaced by a logger, which must stay silent), N round
# trips between a project pinned to 11.8 and one pinned to 12.4 (default 200, i.e. 400 cds).
# Usage: bench/shell-cd.sh [N]
. "$(dirname "$0")/shell-setup.sh"
N=${1:-200}
LOG="$BENCH_DIR/cli-calls"
: > "$LOG"
printf '#!/bin/sh\necho "$*" >> "%s"\nexit 0\n' "$LOG" > "$BENCH_DIR/logger"
chmod +x "$BENCH_DIR/logger"
for shell in bash zsh fish; do
  command -v $shell > /dev/null || { echo "$shell: missing, skipped"; continue; }
  case $shell in
    bash|zsh) init="eval \"\$($CLI init $shell)\""; setbin="_CUDAENV_BIN='$BENCH_DIR/logger'"
      stamp() { echo "$1=\$(date +%s%N)"; }
      loop() { echo "i=0; while [ \$i -lt $N ]; do $1; i=\$((i+1)); done"; } ;;
    fish) init="$CLI init fish | source"; setbin="set -g _CUDAENV_BIN '$BENCH_DIR/logger'"
      stamp() { echo "set $1 (date +%s%N)"; }
      loop() { echo "for i in (seq $N); $1; end"; } ;;
  esac
  # Warm-up with the real CLI: both switches are checked once and cached.
  warm="cd '$PROJ_A'; _cudaenv_hook; cd '$PROJ_B'; _cudaenv_hook"
  step="cd '$PROJ_A'; _cudaenv_hook; cd '$PROJ_B'; _cudaenv_hook"
  out=$($shell -c "$init; $warm; $setbin; $(stamp s); $(loop "$step"); $(stamp e); echo \$CUDA_HOME; echo \$s \$e" 2>/dev/null | tail -n 2)
  home=$(echo "$out" | head -n 1)
  set -- $(echo "$out" | tail -n 1)
  per_cd=$(awk -v s="$1" -v e="$2" -v n="$N" 'BEGIN { printf "%.3f", (e - s) / (2 * n) / 1e6 }')
  calls=$(wc -l < "$LOG")
  case $home in */versions/12.4.1) ok=yes ;; *) ok="NO (CUDA_HOME=$home)" ;; esac
  echo "$shell: ${per_cd} ms per version-changing cd (target < 5 ms), CLI processes started: $calls, switched: $ok, N=$N round trips"
  : > "$LOG"
done
