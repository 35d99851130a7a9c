#!/usr/bin/env bash
# deploy/overlays/cluster-scoped, installed and proven by running as its ServiceAccount:
# server dry-run and apply (the Deployment rolls out); a TokenRequest token of the
# ServiceAccount in a kubeconfig; what the ClusterRole allows and refuses (kubectl auth can-i);
# `stsresize run` on the host with that identity watching every namespace syncs its caches and
# stands by (a Lease held by someone else keeps it from acting on other tests' StatefulSets);
# then, limited to this test's namespace, it resizes two 3-replica StatefulSets with random data
# at once: web on sim-expandable (the StorageClass is readable, so the expansion path) and db on
# sim-fixed, whose copy path is the rebind path (the ClusterRole's get and patch on
# PersistentVolumes): the journal's Planned row says "Rebind path", each claim of db ends bound
# to the volume journaled as its copy's, one copy Job per claim, every volume left Bound with its
# policy Delete, the old ones gone; every file's sha256 unchanged. Last, the Deployment itself runs the controller: patched to run this binary by
# absolute path (nodesim runs container commands with the host's binaries, and mounts the pod's
# projected service-account token), its two replicas elect a leader and resize to 3Gi with the
# in-cluster credentials.
#   cluster_scoped.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR/../e2e source=../e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
# shellcheck source-path=SCRIPTDIR/../e2e source=../e2e/rebind_lib.sh
source "$(dirname "$0")/../e2e/rebind_lib.sh"
use_namespace
system_ns=$ns-sys
prefix=$ns-
sa=${prefix}stsresize

step "install deploy/overlays/cluster-scoped as namespace $system_ns, names prefixed $prefix"
deploy_overlay "$work/overlay" cluster-scoped "$system_ns" "$prefix"
on_exit "kubectl delete -k '$work/overlay' --ignore-not-found --wait=false >/dev/null 2>&1"
kubectl create namespace "$system_ns" >/dev/null # the server dry-run needs it to exist
deploy_install "$work/overlay"
[[ $(kubectl get namespace "$system_ns" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}') == restricted ]] ||
  fail "namespace $system_ns does not enforce the restricted Pod Security level"
kubectl get clusterrole "${prefix}stsresize" >/dev/null || fail "no ClusterRole ${prefix}stsresize"
[[ $(kubectl get clusterrolebinding "${prefix}stsresize" -o jsonpath='{.subjects[0].namespace}/{.subjects[0].name}') == "$system_ns/$sa" ]] ||
  fail "the ClusterRoleBinding does not name $system_ns/$sa"
kubectl -n "$system_ns" rollout status "deployment/${prefix}stsresize" --timeout=120s >/dev/null ||
  fail "the Deployment did not roll out"
ok "namespace (restricted), ClusterRole + binding, Deployment rolled out (nodesim runs no images: its pods idle)"

step "a kubeconfig with a TokenRequest token of $system_ns/$sa"
deploy_sa_kubeconfig "$sa" "$system_ns" "$work/sa.kubeconfig"
can() { kubectl --kubeconfig "$work/sa.kubeconfig" auth can-i "$@" 2>/dev/null || true; }
for allowed in "list statefulsets.apps -A" "watch persistentvolumeclaims -A" "delete persistentvolumeclaims -n $ns" \
  "get persistentvolumes" "patch persistentvolumes" "watch persistentvolumes" \
  "create jobs.batch -n $ns" "list storageclasses.storage.k8s.io" "create events -n $ns" \
  "update leases.coordination.k8s.io -n $system_ns" "create pods -n $ns" "delete pods -n $ns"; do
  # shellcheck disable=SC2086 # words on purpose
  [[ $(can $allowed) == yes ]] || fail "the ServiceAccount may not: $allowed"
done
for refused in "get secrets -n $ns" "delete persistentvolumes" "create persistentvolumes" \
  "update persistentvolumes" "delete nodes" "update pods -n $ns" \
  "update persistentvolumeclaims -n $ns" "update leases.coordination.k8s.io -n $ns" "delete storageclasses.storage.k8s.io"; do
  # shellcheck disable=SC2086
  [[ $(can $refused) == no ]] || fail "the ServiceAccount may, but should not: $refused"
done
ok "allowed: what the code uses (pods: the drain's cleanup pods; PVs: get and patch, the rebind path, list and watch, its cache); refused: secrets, creating, updating or deleting PVs, nodes, pod update, PVC update, leases elsewhere"

step "every namespace, as the ServiceAccount: caches sync, and it stands by (the Lease is someone else's)"
now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
kubectl -n "$system_ns" apply -f - >/dev/null <<LEASE
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: stsresize-leader
spec:
  holderIdentity: someone-else
  leaseDurationSeconds: 3600
  acquireTime: $now
  renewTime: $now
LEASE
deploy_start_controller "$work/sa.kubeconfig" all.log --leader-elect --leader-elect-namespace "$system_ns"
all_pid=$controller_pid
port=$(deploy_probe_port all.log)
deadline=$((SECONDS + 60))
until ready=$(curl -fsS "http://127.0.0.1:$port/readyz" 2>/dev/null); do
  ((SECONDS > deadline)) && fail "not ready in 60s: $(curl -sS "http://127.0.0.1:$port/readyz"); $(tail -n 5 "$work/all.log")"
  sleep 0.5
done
[[ $ready == *"standing by"* ]] || fail "/readyz says '$ready', not standing by"
e2e_stop_controller "$all_pid"
grep -q '"msg":"starting".*"persistent-volumes":"watched"' "$work/all.log" ||
  fail "PersistentVolumes not watched: $(grep -m 2 -e '"msg":"starting"' -e 'read live' "$work/all.log")"
ok "/readyz: $ready (informers on StatefulSets, claims, Jobs, Pods, ConfigMaps, StorageClasses, PersistentVolumes of the whole cluster)"

step "StatefulSets web (sim-expandable) and db (sim-fixed): 3 replicas of 1Gi each, random data"
e2e_statefulset web sim-expandable 3
e2e_statefulset db sim-fixed 3
rebind_claim_volumes db 3 >"$work/volumes-before-db"
mapfile -t volumes_before_db < <(awk '{ print $2 }' "$work/volumes-before-db")

step "resize both to 2Gi as the ServiceAccount (leader election on its own Lease, namespace $ns only)"
deploy_start_controller "$work/sa.kubeconfig" controller.log --namespace "$ns" \
  --leader-elect --leader-elect-namespace "$system_ns" --leader-elect-id "stsresize-$ns"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
k annotate statefulset db 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_completed web 240
ok "web completed; phases seen: ${phases[*]}"
[[ " ${phases[*]} " != *" ScalingDown "* ]] || fail "the readable, expandable class should have been expanded in place"
e2e_wait_completed db 240
ok "db completed; phases seen: ${phases[*]}"
deploy_assert_resized web 3 2Gi
deploy_assert_resized db 3 2Gi
! grep -q '"Forbidden' "$work/controller.log" || fail "a request was forbidden: $(grep '"Forbidden' "$work/controller.log" | head -n 3)"
e2e_stop_controller "$controller_pid"
ok "no Forbidden answer; SIGTERM exit 0"
db_journal=$work/journal-controller.log.db
[[ $(rebind_planned "$db_journal" web) == "Expand path, "* ]] || fail "web's Planned says: $(rebind_planned "$db_journal" web)"
planned=$(rebind_planned "$db_journal" db)
[[ $planned == "Rebind path, "* ]] || fail "db's Planned says: $planned"
for i in 0 1 2; do
  copy=$(rebind_retained "$db_journal" copy | awk -v c="data-db-$i" '$1 == c { print $2 }')
  [[ -n $copy && $(jp "pvc/data-db-$i" '{.spec.volumeName}') == "$copy" ]] ||
    fail "pvc/data-db-$i is bound to $(jp "pvc/data-db-$i" '{.spec.volumeName}'), not its copy's volume '$copy'"
done
restored=$(rebind_count "$db_journal" ReclaimPolicyRestored)
((restored == 6)) || fail "$restored ReclaimPolicyRestored rows, not 6 (two per claim of db)"
ok "web: expansion path; db: \"${planned:0:40}...\", each claim on the volume journaled as its copy's, 6 policies put back"
rebind_assert_volumes db 3 Delete 60 "${volumes_before_db[@]}"

step "the Deployment itself, running this binary in its pods with their projected tokens: resize to 3Gi"
mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/stsresize"
deploy_pod_visible_binary >"$work/binary.path"
binary=$(cat "$work/binary.path")
kubectl -n "$system_ns" patch deployment "${prefix}stsresize" --type=json -p "$(jq -cn --arg bin "$binary" --arg ns "$ns" '[
  {op: "add", path: "/spec/template/spec/containers/0/command", value: [$bin]},
  {op: "replace", path: "/spec/template/spec/containers/0/args", value: [
    "run", "--leader-elect", "--leader-elect-identity=$(POD_NAME)", "--leader-elect-id=stsresize-in-cluster",
    "--journal=/var/lib/stsresize/journal.db", "--namespace=\($ns)", "--poll-interval=1s",
    "--metrics-bind-address=0", "--health-probe-bind-address=0", "--log-format=json",
    "--log-level=$(LOG_LEVEL)", "--sync-image=$(SYNC_IMAGE)"]}]')" >/dev/null
kubectl -n "$system_ns" rollout status "deployment/${prefix}stsresize" --timeout=120s >/dev/null ||
  fail "the patched Deployment did not roll out"
deadline=$((SECONDS + 60))
until holder=$(kubectl -n "$system_ns" get lease stsresize-in-cluster -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) &&
  [[ $holder == "${prefix}stsresize-"* ]]; do
  ((SECONDS > deadline)) && fail "no replica of the Deployment took the Lease in 60s"
  sleep 0.5
done
ok "replica $holder leads"
k annotate statefulset web --overwrite 'stsresize.dev/resize={"data":{"storage":"3Gi"}}' >/dev/null
controllers=() # the host-run controllers have exited; the Deployment's pods do the work
e2e_wait_completed_in_cluster() {
  local deadline=$((SECONDS + $1)) last
  until [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]] &&
    last=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}') &&
    [[ $last == *Completed* && $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 3Gi ]]; do
    ((SECONDS > deadline)) && fail "no completion in $1s: $(kubectl -n "$system_ns" logs "$holder" --tail=20 2>&1)"
    sleep 0.5
  done
}
e2e_wait_completed_in_cluster 180
deploy_assert_resized web 3 3Gi
kubectl -n "$system_ns" scale deployment "${prefix}stsresize" --replicas=0 >/dev/null
ok "resized in-cluster by the Deployment's leader; scaled to 0"
