import {quoteFish, quoteSh} from '../text/quote.js';
import type {CompletionModel} from './model.js';

/**
 * Completion scripts. They read installed versions (`versions/X.Y.Z`), aliases (`aliases/NAME`)
 * and the cached remote list (`cache/remote-versions`) from the store with shell builtins and
 * globs when completing: no Node process per TAB. Command and flag names are fixed when the
 * script is generated (`cudaenv completion SHELL` after an upgrade refreshes them).
 */
export function bashCompletion(m: CompletionModel): string {
  const flagCases = m.commands.map((c) => `    ${quoteSh(c.name)}) flags=${quoteSh(c.flags.map((f) => `--${f.name}`).join(' '))} ;;`).join('\n');
  const valueFlags = [...new Set(m.commands.flatMap((c) => c.flags.filter((f) => f.takesValue).map((f) => `--${f.name}`)))];
  return `# cudaenv completion for bash: eval "$(cudaenv completion bash)" in ~/.bashrc
_cudaenv_complete_versions() {
  local store=\${CUDAENV_DIR:-${quoteSh(m.defaultStore)}} p n
  for p in "$store"/versions/* "$store"/aliases/*; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    n=\${p##*/}
    case $n in .*|*[!A-Za-z0-9._-]*) continue ;; esac
    printf '%s\\n' "$n"
  done
}
_cudaenv_complete_remote() {
  local store=\${CUDAENV_DIR:-${quoteSh(m.defaultStore)}}
  if [ -r "$store/cache/remote-versions" ]; then
    local line
    while IFS= read -r line; do case $line in *[!0-9.]*|'') ;; *) printf '%s\\n' "$line" ;; esac; done < "$store/cache/remote-versions"
  else
    printf '%s\\n' ${m.knownReleases.map(quoteSh).join(' ')}
  fi
}
_cudaenv_complete() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmd=\${COMP_WORDS[1]} words='' flags=''
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    words=${quoteSh(m.commands.map((c) => c.name).join(' '))}
  elif [ "$prev" = --cuda ]; then
    words="$(_cudaenv_complete_versions) system latest"
  else
    case $cmd in
${flagCases}
    esac
    case $prev in ${valueFlags.length > 0 ? valueFlags.map(quoteSh).join('|') : '--cudaenv-no-such-flag'}) return 0 ;; esac
    case $cur in
      -*) words=$flags ;;
      *)
        case $cmd in
          ${m.versionCommands.map(quoteSh).join('|')}) [ "$cmd" = which ] || words="$(_cudaenv_complete_versions) system latest" ;;
          ${m.remoteCommands.map(quoteSh).join('|')}) words="$(_cudaenv_complete_remote) latest" ;;
          help) [ "$COMP_CWORD" -eq 2 ] && words=${quoteSh(m.commands.map((c) => c.name).join(' '))} ;;
        esac ;;
    esac
  fi
  local IFS=$'\\n'
  COMPREPLY=($(IFS=$' \\t\\n'; compgen -W "$words" -- "$cur"))
}
complete -o default -F _cudaenv_complete cudaenv
`;
}

/** zsh runs the bash function through bashcompinit: one implementation for both. */
export function zshCompletion(m: CompletionModel): string {
  return `# cudaenv completion for zsh: eval "$(cudaenv completion zsh)" in ~/.zshrc (after compinit)
autoload -U +X compinit && { (( \${+_comps} )) || compinit -u; }
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(m).split('\n').slice(1).join('\n')}`;
}

export function fishCompletion(m: CompletionModel): string {
  const lines = [
    '# cudaenv completion for fish: cudaenv completion fish | source (in ~/.config/fish/config.fish)',
    'complete -c cudaenv -e',
    'complete -c cudaenv -f',
    `function __cudaenv_complete_versions
    set -l store $CUDAENV_DIR
    test -n "$store"; or set store ${quoteFish(m.defaultStore)}
    for p in $store/versions/* $store/aliases/*
        set -l n (string split -r -m1 / -- $p)[-1]
        string match -qr '^[A-Za-z0-9][A-Za-z0-9._-]*$' -- $n; and echo $n
    end
    echo system
    echo latest
end`,
    `function __cudaenv_complete_remote
    set -l store $CUDAENV_DIR
    test -n "$store"; or set store ${quoteFish(m.defaultStore)}
    if test -r $store/cache/remote-versions
        string match -r '^[0-9]+\\.[0-9]+\\.[0-9]+$' < $store/cache/remote-versions
    else
        printf '%s\\n' ${m.knownReleases.map(quoteFish).join(' ')}
    end
    echo latest
end`,
  ];
  for (const c of m.commands) {
    lines.push(`complete -c cudaenv -n __fish_use_subcommand -a ${quoteFish(c.name)} -d ${quoteFish(c.summary)}`);
    for (const f of c.flags) {
      const values = f.name === 'cuda' ? ' -r -a "(__cudaenv_complete_versions)"' : f.takesValue ? ' -r' : '';
      lines.push(`complete -c cudaenv -n ${quoteFish(`__fish_seen_subcommand_from ${c.name}`)} -l ${quoteFish(f.name)} -d ${quoteFish(f.summary)}${values}`);
    }
  }
  lines.push(`complete -c cudaenv -n ${quoteFish(`__fish_seen_subcommand_from ${m.versionCommands.filter((c) => c !== 'which').join(' ')}`)} -a '(__cudaenv_complete_versions)'`);
  lines.push(`complete -c cudaenv -n ${quoteFish(`__fish_seen_subcommand_from ${m.remoteCommands.join(' ')}`)} -a '(__cudaenv_complete_remote)'`);
  lines.push(`complete -c cudaenv -n '__fish_seen_subcommand_from help' -a ${quoteFish(m.commands.map((c) => c.name).join(' '))}`);
  return `${lines.join('\n')}\n`;
}
