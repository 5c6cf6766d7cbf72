#!/usr/bin/env bash
# Per-prompt cost of the cudaenv hook when nothing changed, vs direnv's hook
# (`eval "$(direnv export SHELL)"`, what direnv's own hook runs at every prompt), in the same
# loop of N prompts (default 1000), in a project directory with a .cuda-version (cudaenv) and
# an allowed .envrc (direnv). Usage: bench/shell-hook.sh [N]
. "$(dirname "$0")/shell-setup.sh"
N=${1:-1000}
command -v direnv > /dev/null || { echo "direnv is missing (apt-get install direnv)" >&2; exit 1; }
echo 'export BENCH_VAR=1' > "$BENCH_DIR/proj-a/.envrc"
(cd "$BENCH_DIR/proj-a" && direnv allow . 2> /dev/null)
now() { date +%s%N; }
per_prompt() { awk -v s="$1" -v e="$2" -v n="$N" 'BEGIN { printf "%.1f", (e - s) / n / 1000 }'; }

for shell in bash zsh fish; do
  command -v $shell > /dev/null || { echo "$shell: missing, skipped"; continue; }
  case $shell in
    bash|zsh) stamp() { echo "$1=\$(date +%s%N)"; } ;;&
    fish) stamp() { echo "set $1 (date +%s%N)"; } ;;&
    bash) init="eval \"\$($CLI init bash)\""; hook='_cudaenv_hook'; dhook='eval "$(direnv export bash)"'
          loop() { echo "i=0; while [ \$i -lt $N ]; do $1; i=\$((i+1)); done"; } ;;
    zsh) init="eval \"\$($CLI init zsh)\""; hook='_cudaenv_hook'; dhook='eval "$(direnv export zsh)"'
          loop() { echo "i=0; while [ \$i -lt $N ]; do $1; i=\$((i+1)); done"; } ;;
    fish) init="$CLI init fish | source"; hook='_cudaenv_hook'; dhook='direnv export fish | source'
          loop() { echo "for i in (seq $N); $1; end"; } ;;
  esac
  # One prompt first: the switch into 11.8 happens there; every later prompt is unchanged.
  t=$($shell -c "cd '$PROJ_A'; $init; $hook 2>/dev/null; $(stamp s); $(loop "$hook"); $(stamp e); echo \$s \$e" 2>/dev/null | tail -n 1)
  d=$($shell -c "cd '$PROJ_A'; $dhook 2>/dev/null; $(stamp s); $(loop "$dhook 2>/dev/null"); $(stamp e); echo \$s \$e" 2>/dev/null | tail -n 1)
  set -- $t; ours=$(per_prompt "$1" "$2")
  set -- $d; theirs=$(per_prompt "$1" "$2")
  ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.3f", a / b }')
  echo "$shell: cudaenv hook ${ours} µs/prompt, direnv hook ${theirs} µs/prompt, ratio ${ratio} (target <= 0.1), N=$N"
done
