#!/usr/bin/env bash
# The scripts of `stsresize completion bash|zsh`, sourced by the real shells, complete through the
# real binary: a command, a flag, a file value (left to the shell), for `stsresize` and for the
# plugin's name `kubectl-stsresize`. zsh's completion system needs a terminal, so its _describe,
# _files and compdef are stood in for by functions that record what the script gives them.
#
#   completion_scripts_test.sh STSRESIZE_BINARY
set -uo pipefail

bin_dir=$(dirname "$(readlink -f "${1:?path to the stsresize binary}")")
export PATH="$bin_dir:$PATH"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# bash_complete PROGRAM WORD...: what bash offers for the last word.
bash_complete() {
  bash -c '
    program=$1; shift
    source <("$program" completion bash) || exit 9
    COMP_WORDS=("$program" "$@"); COMP_CWORD=$#
    fn=_${program//-/_}_complete
    "$fn"
    printf "%s\n" "${COMPREPLY[@]}"
    complete -p "$program" >/dev/null || echo "not registered"' _ "$@"
}

out=$(bash_complete stsresize st)
[[ $out == status ]] && ok "bash: st -> status" || fail "bash: st gave '$out'"
out=$(bash_complete stsresize describe --jo)
[[ $out == --journal ]] && ok "bash: --jo -> --journal" || fail "bash: --jo gave '$out'"
out=$(bash_complete stsresize journal "")
[[ $out == $'export\nimport\nlist' ]] && ok "bash: journal subcommands" || fail "bash: journal gave '$out'"
out=$(bash_complete kubectl-stsresize adv)
[[ $out == advance ]] && ok "bash: kubectl-stsresize adv -> advance" || fail "bash (plugin): '$out'"

# zsh_complete PROGRAM WORD...: the candidates given to _describe, or "files" for _files.
zsh_complete() {
  zsh -f -c '
    program=$1; shift
    compdef() { registered="$*"; }
    _describe() { print -rl -- "${(@P)${@[-1]}}"; }
    _files() { print files; }
    source <("$program" completion zsh) || exit 9
    [[ $registered == "_${program//-/_}_complete $program" ]] || print "not registered: $registered"
    words=("$program" "$@"); CURRENT=${#words}
    "_${program//-/_}_complete"' _ "$@"
}

if command -v zsh >/dev/null; then
  out=$(zsh_complete stsresize st)
  [[ $out == "status:Show the resize operations of StatefulSets (phase, path, progress)" ]] &&
    ok "zsh: st -> status, described" || fail "zsh: st gave '$out'"
  out=$(zsh_complete stsresize describe web --journal "")
  [[ $out == files ]] && ok "zsh: --journal value -> files" || fail "zsh: --journal gave '$out'"
  out=$(zsh_complete kubectl-stsresize completion "")
  [[ -z $out ]] && ok "zsh: a shell's name is no file" || fail "zsh: completion gave '$out'"
else
  fail "zsh is not installed (scripts/bootstrap installs it)"
fi

((failures == 0)) || { echo "$failures failure(s)"; exit 1; }
