#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler from this wrapper
# module into ~/.cache/stsresize/k8s-<version>-<key>/bin and prints that directory as the last
# line of stdout. The key hashes everything that shapes the binaries (go.mod, go.sum, the cmd
# sources, the ldflags and the Go version), so a change rebuilds and an unchanged tree returns
# at once. Progress and timing go to stderr.
#
#   build.sh               build if needed, print the bin dir
#   build.sh --print-dir   print the bin dir it would use, build nothing
#   build.sh --adopt DIR   move an existing build (DIR/bin/<4 binaries>, built with the same
#                          flags) into the keyed location instead of building again
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
start=$SECONDS
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler)

log() { printf 'build.sh: %s\n' "$*" >&2; }

mode=build
adopt_from=
case "${1:-}" in
  "") ;;
  --print-dir) mode=print ;;
  --adopt) mode=adopt; adopt_from=${2:?--adopt needs a directory} ;;
  -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) log "unknown argument: $1"; exit 2 ;;
esac

export GOTOOLCHAIN=local CGO_ENABLED=0

# The Kubernetes version comes from go.mod, so the version ldflags can never drift from it.
k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)
[[ $k8s_version =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { log "cannot read k8s.io/kubernetes version from go.mod"; exit 1; }
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitTreeState=clean"

go_version=$(go env GOVERSION)
key=$(
  {
    printf 'ldflags=%s\ngo=%s\nflags=-trimpath\n' "$ldflags" "$go_version"
    for f in go.mod go.sum $(find cmd -type f -name '*.go' | LC_ALL=C sort); do
      printf '== %s\n' "$f"
      cat "$f"
    done
  } | sha256sum | cut -c1-12
)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/stsresize
out=$cache_root/k8s-$k8s_version-$key
bin=$out/bin

complete() {
  local d=$1 b
  for b in "${binaries[@]}"; do [[ -x $d/$b ]] || return 1; done
}

if [[ $mode == print ]]; then
  echo "$bin"
  exit 0
fi

if complete "$bin"; then
  log "cached ($((SECONDS - start))s)"
  echo "$bin"
  exit 0
fi

mkdir -p "$cache_root"
# One build at a time per machine: parallel `scripts/cluster up` calls wait here for the
# first one instead of compiling the same thing twice.
exec 9>"$cache_root/build.lock"
if ! flock -n 9; then
  log "another build holds $cache_root/build.lock, waiting for it"
  flock 9
fi
if complete "$bin"; then
  log "built meanwhile by another caller ($((SECONDS - start))s)"
  echo "$bin"
  exit 0
fi

tmp=$(mktemp -d "$cache_root/.k8s-$k8s_version-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [[ $mode == adopt ]]; then
  complete "$adopt_from/bin" || { log "$adopt_from/bin does not hold all of: ${binaries[*]}"; exit 1; }
  mkdir -p "$tmp/bin"
  for b in "${binaries[@]}"; do mv "$adopt_from/bin/$b" "$tmp/bin/$b"; done
  log "adopted the binaries of $adopt_from"
else
  log "building ${binaries[*]} $k8s_version with $go_version into $bin (cold Go build cache: 6-40 min on 2 cores; warm: about a minute)"
  go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/" ./cmd/...
  complete "$tmp/bin" || { log "go build did not produce all of: ${binaries[*]}"; exit 1; }
fi
printf 'k8s=%s\ngo=%s\nldflags=%s\n' "$k8s_version" "$go_version" "$ldflags" >"$tmp/BUILDINFO"
chmod 755 "$tmp"
rm -rf "$out"
mv -T "$tmp" "$out"
trap - EXIT
log "done in $((SECONDS - start))s"
echo "$bin"
