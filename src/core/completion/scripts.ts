import {quoteFish, quoteSh} from '../text/quote.js';
import {subcommands, type ArgumentKind, type CompletionModel} from './model.js';

/**
 * Completion scripts. They read installed versions (`versions/X.Y.Z`), aliases (`aliases/NAME`)
 * and the cached remote list (`cache/remote-versions`) from the store with shell builtins and
 * globs when completing: no Node process per TAB. Command and flag names are fixed when the
 * script is generated (`cudaenv completion SHELL` after an upgrade refreshes them).
 */
export function bashCompletion(m: CompletionModel): string {
  const flagCases = m.commands.map((c) => `    ${quoteSh(c.name)}) flags=${quoteSh(c.flags.map((f) => `--${f.name}`).join(' '))} ;;`).join('\n');
  const kidCases = [...subcommands(m.commands.map((c) => c.name))].map(([parent, kids]) => `      ${quoteSh(parent)}) kids=${quoteSh(kids.join(' '))} ;;`).join('\n');
  const valueFlags = [...new Set(m.commands.flatMap((c) => c.flags.filter((f) => f.takesValue).map((f) => `--${f.name}`)))];
  const specWords: Record<ArgumentKind, string> = {
    spec: '"$(_cudaenv_complete_versions; _cudaenv_complete_aliases) system latest"',
    'spec-no-system': '"$(_cudaenv_complete_versions; _cudaenv_complete_aliases) latest"',
    installed: '"$(_cudaenv_complete_versions)"',
    alias: '"$(_cudaenv_complete_aliases)"',
  };
  const argCases = Object.entries(m.versionCommands).map(([c, kind]) => `          ${quoteSh(c)}) words=${specWords[kind]} ;;`).join('\n');
  return `# cudaenv completion for bash: eval "$(cudaenv completion bash)" in ~/.bashrc
_cudaenv_complete_names() {
  local p n
  for p in "\${CUDAENV_DIR:-${quoteSh(m.defaultStore)}}/$1"/*; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    n=\${p##*/}
    case $n in .*|*[!A-Za-z0-9._-]*) continue ;; esac
    printf '%s\\n' "$n"
  done
}
_cudaenv_complete_versions() { _cudaenv_complete_names versions; }
_cudaenv_complete_aliases() { _cudaenv_complete_names aliases; }
_cudaenv_complete_remote() {
  local store=\${CUDAENV_DIR:-${quoteSh(m.defaultStore)}}
  if [ -r "$store/cache/remote-versions" ]; then
    local line
    while IFS= read -r line; do case $line in *[!0-9.]*|'') ;; *) printf '%s\\n' "$line" ;; esac; done < "$store/cache/remote-versions"
  else
    printf '%s\\n' ${m.knownReleases.map(quoteSh).join(' ')}
  fi
}
_cudaenv_complete_kids() {
  case $1 in
${kidCases}
      *) kids='' ;;
  esac
}
_cudaenv_complete() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmd='' words='' flags='' kids='' i=1
  COMPREPLY=()
  # The command's words (conda hook install): each word that is a subcommand of the ones before it.
  while [ "$i" -lt "$COMP_CWORD" ]; do
    _cudaenv_complete_kids "$cmd"
    case " $kids " in *" \${COMP_WORDS[i]} "*) [ -n "\${COMP_WORDS[i]}" ] || break; cmd=\${cmd:+$cmd }\${COMP_WORDS[i]} ;; *) break ;; esac
    i=$((i + 1))
  done
  _cudaenv_complete_kids "$cmd"
  if [ "$prev" = --cuda ]; then
    words=${specWords.spec}
  else
    case $cmd in
${flagCases}
    esac
    case $prev in ${valueFlags.length > 0 ? valueFlags.map(quoteSh).join('|') : '--cudaenv-no-such-flag'}) return 0 ;; esac
    case $cur in
      -*) words=$flags ;;
      *)
        if [ "$i" -eq "$COMP_CWORD" ] && [ -n "$kids" ]; then
          words=$kids
        else
          case $cmd in
${argCases}
          ${m.remoteCommands.map(quoteSh).join('|')}) words="$(_cudaenv_complete_remote) latest" ;;
          help) _cudaenv_complete_kids ''; [ "$COMP_CWORD" -eq 2 ] && words=$kids ;;
          esac
        fi ;;
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
  const kids = subcommands(m.commands.map((c) => c.name));
  const kidCases = [...kids].map(([parent, list]) => `        case ${quoteFish(parent)}\n            printf '%s\\n' ${list.map(quoteFish).join(' ')}`).join('\n');
  const summaries = new Map(m.commands.map((c) => [c.name, c.summary]));
  const specFn: Record<ArgumentKind, string> = {spec: '__cudaenv_complete_specs', 'spec-no-system': '__cudaenv_complete_specs_no_system', installed: '__cudaenv_complete_versions', alias: '__cudaenv_complete_aliases'};
  const lines = [
    '# cudaenv completion for fish: cudaenv completion fish | source (in ~/.config/fish/config.fish)',
    'complete -c cudaenv -e',
    'complete -c cudaenv -f',
    `function __cudaenv_complete_names
    set -l store $CUDAENV_DIR
    test -n "$store"; or set store ${quoteFish(m.defaultStore)}
    for p in $store/$argv[1]/*
        set -l n (string split -r -m1 / -- $p)[-1]
        string match -qr '^[A-Za-z0-9][A-Za-z0-9._-]*$' -- $n; and echo $n
    end
end
function __cudaenv_complete_versions; __cudaenv_complete_names versions; end
function __cudaenv_complete_aliases; __cudaenv_complete_names aliases; end
function __cudaenv_complete_specs_no_system; __cudaenv_complete_versions; __cudaenv_complete_aliases; echo latest; end
function __cudaenv_complete_specs; __cudaenv_complete_specs_no_system; echo system; end`,
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
    `function __cudaenv_kids
    switch "$argv[1]"
${kidCases}
    end
end`,
    // The command's words (conda hook install) and how many words follow them, as "N=WORDS".
    `function __cudaenv_cmd
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmd ''
    set -l rest (count $words)
    for w in $words
        contains -- $w (__cudaenv_kids "$cmd"); or break
        if test -z "$cmd"; set cmd $w; else; set cmd "$cmd $w"; end
        set rest (math $rest - 1)
    end
    echo "$rest=$cmd"
end
function __cudaenv_in; set -l c (__cudaenv_cmd); string match -q -- "*=$argv[1]" $c; end
function __cudaenv_at; set -l c (__cudaenv_cmd); test "$c" = "0=$argv[1]"; end`,
  ];
  for (const [parent, list] of kids) {
    for (const k of list) {
      const full = parent ? `${parent} ${k}` : k;
      lines.push(`complete -c cudaenv -n ${quoteFish(`__cudaenv_at ${quoteFish(parent)}`)} -a ${quoteFish(k)} -d ${quoteFish(summaries.get(full) ?? `${full} commands`)}`);
    }
  }
  for (const c of m.commands) {
    for (const f of c.flags) {
      const values = f.name === 'cuda' ? ' -r -a "(__cudaenv_complete_specs)"' : f.takesValue ? ' -r' : '';
      lines.push(`complete -c cudaenv -n ${quoteFish(`__cudaenv_in ${quoteFish(c.name)}`)} -l ${quoteFish(f.name)} -d ${quoteFish(f.summary)}${values}`);
    }
  }
  for (const [c, kind] of Object.entries(m.versionCommands)) {
    lines.push(`complete -c cudaenv -n ${quoteFish(`__cudaenv_in ${quoteFish(c)}`)} -a ${quoteFish(`(${specFn[kind]})`)}`);
  }
  for (const c of m.remoteCommands) lines.push(`complete -c cudaenv -n ${quoteFish(`__cudaenv_in ${quoteFish(c)}`)} -a '(__cudaenv_complete_remote)'`);
  lines.push(`complete -c cudaenv -n '__cudaenv_at help' -a ${quoteFish((kids.get('') ?? []).join(' '))}`);
  return `${lines.join('\n')}\n`;
}
