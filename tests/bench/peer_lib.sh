#!/usr/bin/env bash
# vshn/statefulset-resize-controller, the controller stsresize is measured against (issue #16),
# built from a checkout given with --peer DIR: never vendored into this repository. Sourced by
# resize_figures.sh and cluster_scale.sh.
#
#   peer_build WHO DIR   builds DIR once per commit (a checkout with local changes: once per
#                        diff) with the Go on PATH into ${XDG_CACHE_HOME:-~/.cache}/stsresize/
#                        vshn-<commit>/manager, its modules from the configured Go proxy; sets
#                        $peer (the binary) and $peer_commit. WHO names the script in messages.
#                        Exits 2 if DIR is not such a checkout, 1 if the build fails.
#   peer_start LOG PORT  the controller in the background, with the cluster's admin kubeconfig
#                        ($KUBECONFIG, which controller-runtime reads), its /metrics on
#                        127.0.0.1:PORT, no probes, no leader election, stdout and stderr
#                        appended to LOG; its pid in $peer_pid. It watches every namespace.
#                        Its sync image is never pulled: the node simulator runs a container's
#                        command with the host's binaries (the Jobs' rsync is the host's).
#   peer_requests FILE   "METHOD count" per HTTP method of client-go's rest_client_requests_total
#                        in FILE (a scrape of its /metrics), codes summed, sorted

peer_build() {
  local who=$1 dir=$2 cache
  if [[ ! -f $dir/go.mod ]] || ! grep -q '^module github.com/vshn/statefulset-resize-controller$' "$dir/go.mod"; then
    echo "$who: --peer $dir is not a checkout of vshn/statefulset-resize-controller" >&2
    exit 2
  fi
  command -v go >/dev/null || { echo "$who: --peer needs Go on PATH" >&2; exit 1; }
  peer_commit=$(git -C "$dir" rev-parse HEAD 2>/dev/null) ||
    { echo "$who: --peer $dir is not a git checkout (its commit keys the build)" >&2; exit 2; }
  if [[ -n $(git -C "$dir" status --porcelain --untracked-files=no) ]]; then
    peer_commit+=-dirty-$(git -C "$dir" diff HEAD | sha256sum | cut -c1-12)
  fi
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/stsresize/vshn-$peer_commit
  peer=$cache/manager
  [[ -x $peer ]] && return 0
  echo "==> building vshn/statefulset-resize-controller $peer_commit into $cache" >&2
  mkdir -p "$cache"
  # One build at a time per cache; the binary appears only whole (renamed into place).
  if ! (
    flock 9
    [[ -x $peer ]] && exit 0
    cd "$dir" && nice go build -o "$peer.tmp" . && mv "$peer.tmp" "$peer"
  ) 9>"$cache/build.lock" >"$cache/build.log" 2>&1; then
    echo "$who: go build of $dir failed (log $cache/build.log):" >&2
    tail -n 20 "$cache/build.log" >&2
    exit 1
  fi
}

peer_start() {
  local log=$1 port=$2
  "$peer" --metrics-bind-address "127.0.0.1:$port" --health-probe-bind-address 0 \
    --sync-image host-rsync >>"$log" 2>&1 &
  # shellcheck disable=SC2034 # the caller's
  peer_pid=$!
}

peer_requests() {
  awk '/^rest_client_requests_total\{/ {
         match($0, /method="[^"]*"/); m = substr($0, RSTART + 8, RLENGTH - 9); n[m] += $NF }
       END { for (m in n) printf "%s %.0f\n", m, n[m] }' "$1" | sort
}
