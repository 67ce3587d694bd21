# Completes command lines as an interactive zsh does and prints the matches, one a line, each
# line's matches after a line "@@ LINE".
#
#   zsh -f zsh-complete.zsh FOLDER 'store-samples agents ' 'probe-http --con' ...
#
# Starts `zsh -i` in a pseudo-terminal (zsh/zpty) with FOLDER first on fpath and compinit run,
# types each line and a TAB, and prints every match the completion system adds (a compadd wrapper
# reports them; zsh itself decides which functions run and what they add); then clears the line.
zmodload zsh/zpty || exit 2
folder=$1
shift
home=$(mktemp -d) || exit 2
trap 'zpty -d complete 2>/dev/null; rm -rf $home' EXIT
cat > $home/.zshrc <<RC
PROMPT='' RPROMPT=''
fpath=($folder \$fpath)
autoload -Uz compinit && compinit -u -D
compadd () {
  # Calls that only ask (-O, -A, -D) go straight to the builtin; the others are reported.
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "\$@"; return \$?; fi
  local -a matches; builtin compadd -A matches "\$@"; local match
  for match in \$matches; do print -r -- "MATCH:\$match"; done
}
report-completion () { zle complete-word; print -r -- "COMPLETION-DONE"; BUFFER=''; zle -I }
zle -N report-completion && bindkey '^I' report-completion
print -r -- "SHELL-READY"
RC
export ZDOTDIR=$home
zpty complete zsh -o NO_GLOBAL_RCS -i || exit 2
local out line
while zpty -r complete out; do [[ $out == *SHELL-READY* ]] && break; done
for line in "$@"; do
  print -r -- "@@ $line"
  zpty -n -w complete "$line"$'\t'
  while zpty -r complete out; do
    [[ $out == *COMPLETION-DONE* ]] && break
    [[ $out == *MATCH:* ]] && print -r -- "${${out##*MATCH:}%%$'\r'*}"
  done
done
