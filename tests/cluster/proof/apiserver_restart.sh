#!/usr/bin/env bash
# `scripts/cluster restart-apiserver` stops kube-apiserver and starts it again on the same port
# with the same command line; the objects survive (they live in etcd) and a watch open across
# the restart is cut off. Runs on a private control plane, not the fixture's: other tests are
# using that apiserver.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cluster=$repo/scripts/cluster
private=$(basename "$cluster_dir")-restart
on_exit "'$cluster' down --name '$private' >/dev/null 2>&1"

step "bring up private control plane $private (no node simulator)"
pkc=$("$cluster" up --name "$private" --no-nodesim | tail -n 1) || fail "scripts/cluster up --name $private failed"
pdir=$(dirname "$pkc")
pk() { kubectl --kubeconfig "$pkc" "$@"; }
cmdline() { tr '\0' '\n' <"/proc/$1/cmdline"; }
old_pid=$(<"$pdir/pids/kube-apiserver.pid")
old_cmd=$(cmdline "$old_pid")
server=$(pk config view --minify -o jsonpath='{.clusters[0].cluster.server}')
pk -n default create configmap survivor --from-literal=k=v >/dev/null
ok "apiserver pid $old_pid at $server; configmap survivor created"

step "a watch opened before the restart"
pk -n default get configmaps --watch --output-watch-events -o name >"$pdir/watch.out" 2>&1 &
watch_pid=$!
on_exit "kill $watch_pid 2>/dev/null || true"
for _ in $(seq 1 50); do grep -q survivor "$pdir/watch.out" && break; sleep 0.1; done
grep -q survivor "$pdir/watch.out" || fail "the watch did not list survivor: $(cat "$pdir/watch.out")"

step "restart-apiserver"
t0=$SECONDS
"$cluster" restart-apiserver --name "$private" || fail "restart-apiserver failed"
new_pid=$(<"$pdir/pids/kube-apiserver.pid")
note "took $((SECONDS - t0))s"
[[ $new_pid != "$old_pid" ]] || fail "the pid file still names $old_pid"
ps -o stat= -p "$old_pid" 2>/dev/null | grep -qv '^Z' && fail "the old apiserver $old_pid is still running"
[[ $(cmdline "$new_pid") == "$old_cmd" ]] ||
  fail "the command line changed: $(diff <(echo "$old_cmd") <(cmdline "$new_pid"))"
ok "new pid $new_pid, same command line ($(wc -l <<<"$old_cmd") arguments)"

step "same port, ready, objects kept"
pk get --raw /readyz >/dev/null || fail "/readyz at $server is not ok after the restart"
[[ $(pk -n default get configmap survivor -o jsonpath='{.data.k}') == v ]] || fail "configmap survivor lost its data"
grep -q 'restarted by scripts/cluster restart-apiserver' "$pdir/logs/kube-apiserver.log" ||
  fail "the apiserver log does not mark the restart (the old log should be kept, not truncated)"
ok "$server answers; survivor is there; the log keeps both runs"

step "the watch opened before the restart was cut off"
for _ in $(seq 1 50); do ps -p "$watch_pid" >/dev/null || break; sleep 0.1; done
if ps -p "$watch_pid" >/dev/null; then
  fail "kubectl get --watch is still running after the restart: its connection was not closed"
fi
ok "kubectl's watch ended: $(tail -n 1 "$pdir/watch.out" | cut -c1-120)"
