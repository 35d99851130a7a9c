#!/usr/bin/env bash
# A second named cluster runs beside the fixture's, isolated from it; `scripts/cluster down`
# leaves no process, listening port or directory of it behind, and is idempotent.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cluster=$repo/scripts/cluster
side=$(basename "$cluster_dir")-side
on_exit "'$cluster' down --name '$side' >/dev/null 2>&1"

step "bring up cluster $side (1 node) beside $(basename "$cluster_dir")"
side_kc=$("$cluster" up --name "$side" --nodes 1 | tail -n 1) || fail "scripts/cluster up --name $side failed"
[[ -f $side_kc && $side_kc != "$KUBECONFIG" ]] || fail "bad kubeconfig path '$side_kc'"
side_dir=$(dirname "$side_kc")
a=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
b=$(kubectl --kubeconfig "$side_kc" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
[[ $a != "$b" ]] || fail "both clusters serve at $a"
ok "fixture at $a, $side at $b"

step "both answer, and they are separate"
n=$(kubectl --kubeconfig "$side_kc" get nodes -o name | wc -l)
[[ $n == 1 ]] || fail "$side has $n nodes, want 1"
marker=side-marker-$RANDOM
kubectl --kubeconfig "$side_kc" -n default create configmap "$marker" >/dev/null
kubectl -n default get configmap "$marker" >/dev/null 2>&1 && fail "configmap $marker created in $side is visible in the fixture cluster"
kubectl get --raw /readyz >/dev/null || fail "the fixture cluster is not ready"
ok "$side has 1 node; its objects are not in the fixture cluster"
eval "$("$cluster" env --name "$side" | grep STSRESIZE_CLUSTER_DIR)"
[[ $STSRESIZE_CLUSTER_DIR == "$side_dir" ]] || fail "env prints $STSRESIZE_CLUSTER_DIR, want $side_dir"

step "record $side's processes and ports, then bring it down"
pids=$(cat "$side_dir"/pids/*.pid | tr '\n' ' ')
all=$pids
for p in $pids; do all+=" $(ps -e -o pid=,ppid= | awk -v p="$p" '$2 == p { print $1 }' | tr '\n' ' ')"; done
ports=$(sed -n 's/^[a-z_]*=//p' "$side_dir/ports")
note "pids: $all"
note "ports: $(tr '\n' ' ' <<<"$ports")"
"$cluster" down --name "$side" || fail "scripts/cluster down --name $side failed"

step "nothing of $side is left"
sleep 0.5
for p in $all; do
  st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
  [[ $st == Z* ]] && continue
  fail "process $p ($(ps -o args= -p "$p" | cut -c1-120)) is still running"
done
for port in $ports; do
  ss -Hltn "sport = :$port" | grep -q . && fail "port $port is still listening: $(ss -Hltnp "sport = :$port")"
done
[[ ! -e $side_dir ]] || fail "$side_dir still exists"
ok "no process, no listening port, no directory"
"$cluster" down --name "$side" || fail "a second down of $side did not exit 0"
ok "down again: exit 0"
kubectl get --raw /readyz >/dev/null || fail "the fixture cluster was disturbed"
ok "the fixture cluster is still ready"
