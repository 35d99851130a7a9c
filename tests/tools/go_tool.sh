#!/usr/bin/env bash
# Builds a Go command from the Go module proxy once and prints its path: cached under
# ~/.cache/stsresize/<name>-<version>-<go version>/ (the key is everything the build depends
# on: the module's version pins its dependencies through its go.sum). Build output goes to
# stderr only when the build fails.
#
#   tests/tools/go_tool.sh NAME PACKAGE@VERSION     e.g. krew sigs.k8s.io/krew/cmd/krew@v0.4.3
set -euo pipefail
name=${1:?name} package=${2:?package@version}
version=${package##*@}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/stsresize
out=$cache/$name-$version-$(go env GOVERSION)
mkdir -p "$cache"
exec 9>"$cache/$name-build.lock"
flock 9
if [[ ! -x $out/$name ]]; then
  tmp=$(mktemp -d "$out.XXXXXX")
  if ! GOBIN=$tmp GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod go install "$package" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    echo "go_tool.sh: go install $package failed" >&2
    exit 1
  fi
  rm -f "$tmp.log"
  chmod 755 "$tmp"
  mv -T "$tmp" "$out"
fi
echo "$out/$name"
