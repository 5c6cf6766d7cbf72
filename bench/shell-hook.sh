#!/usr/bin/env bash
# Per-prompt cost of the cudaenv hook when nothing changed, vs direnv's hook
# (`eval "$(direnv export SHELL)"`, what direnv's own hook runs at every prompt), in the same
# shell and the same loop: N prompts (default 1000) in blocks of 100 that alternate between
# the two, so that load from other processes hits both alike; the figure is the median block.
# In a project directory with a .cuda-version (cudaenv) and an allowed .envrc (direnv).
# Usage: bench/shell-hook.sh [N]
. "$(dirname "$0")/shell-setup.sh"
N=${1:-1000}
M=100
B=$(( (N + M - 1) / M ))
command -v direnv > /dev/null || { echo "direnv is missing (apt-get install direnv)" >&2; exit 1; }
echo 'export BENCH_VAR=1' > "$BENCH_DIR/proj-a/.envrc"
(cd "$BENCH_DIR/proj-a" && direnv allow . 2> /dev/null)

for shell in bash zsh fish; do
  command -v $shell > /dev/null || { echo "$shell: missing, skipped"; continue; }
  if [ $shell = fish ]; then
    init="$CLI init fish | source"
    ours="for i in (seq $M); _cudaenv_hook; end"
    theirs="for i in (seq $M); direnv export fish 2>/dev/null | source; end"
    body="for b in (seq $B); set a (date +%s%N); $ours; set b2 (date +%s%N); $theirs; set c (date +%s%N); echo \$a \$b2 \$c; end"
  else
    init="eval \"\$($CLI init $shell)\""
    ours="i=0; while [ \$i -lt $M ]; do _cudaenv_hook; i=\$((i+1)); done"
    theirs="i=0; while [ \$i -lt $M ]; do eval \"\$(direnv export $shell 2>/dev/null)\"; i=\$((i+1)); done"
    body="for b in \$(seq $B); do a=\$(date +%s%N); $ours; b2=\$(date +%s%N); $theirs; c=\$(date +%s%N); echo \$a \$b2 \$c; done"
  fi
  # The first prompt switches into 11.8 (and direnv loads .envrc); every later one is unchanged.
  $shell -c "cd '$PROJ_A'; $init; _cudaenv_hook; eval \"\$(direnv export $shell)\" 2>/dev/null; $body" 2>/dev/null |
    awk -v m=$M -v shell=$shell -v n=$((B * M)) '
      function median(x, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
        return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
      NF == 3 { k++; o[k] = ($2 - $1) / m / 1000; d[k] = ($3 - $2) / m / 1000 }
      END { mo = median(o, k); md = median(d, k)
        printf "%s: cudaenv hook %.1f µs/prompt, direnv hook %.1f µs/prompt (medians of %d blocks of %d), ratio %.3f (target <= 0.1), N=%d\n", shell, mo, md, k, m, mo / md, n }'
done
