#!/usr/bin/env bash
# deploy/overlays/namespace-scoped, installed in this test's namespace and proven by running as
# its ServiceAccount (no cluster-level rights at all):
#   1. server dry-run and apply: only namespaced objects; the Deployment rolls out;
#   2. a TokenRequest token in a kubeconfig; kubectl auth can-i: the Role's verbs here, nothing
#      cluster-wide, no StorageClasses;
#   3. `stsresize run --namespace` as that identity resizes a 3-replica StatefulSet with random
#      data on sim-expandable: StorageClasses are unreadable, so it takes the copy path and says
#      so (event StorageClassesUnreadable); PersistentVolumes are unreadable too, so it is the
#      two-copy path, not the rebind path, and it says why (the journal's Planned row "Copy
#      path ... (not rebind: reading PersistentVolumes is forbidden ...)", an Event
#      RebindUnavailable); every file's sha256 unchanged, every volume left Bound to its claim
#      with policy Delete, the old ones gone;
#   4. `delete` on persistentvolumeclaims removed from the Role, a second resize: a Warning
#      event Forbidden on the StatefulSet and a log line naming verb and resource, the source
#      claims untouched, the operation waiting in Recreating; the Role restored (re-apply),
#      the resize completes with the data intact;
#   5. the Deployment itself, patched to run this binary (nodesim runs container commands with
#      the host's binaries and mounts the projected token): `--namespace=$(POD_NAMESPACE)`
#      from its own args, a replica takes the Lease, both sync their caches with no Forbidden.
#   namespace_scoped.sh STSRESIZE_BINARY
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

step "install deploy/overlays/namespace-scoped into $ns"
deploy_overlay "$work/overlay" namespace-scoped "$ns"
rendered=$(kubectl kustomize "$work/overlay")
cluster_kinds=$(grep -E '^kind: (Cluster|Namespace$|StorageClass|PersistentVolume$)' <<<"$rendered" || true)
[[ -z $cluster_kinds ]] || fail "the namespace-scoped overlay renders cluster-level objects: $cluster_kinds"
grep -q -- "--namespace=\$(POD_NAMESPACE)" <<<"$rendered" || fail "the Deployment does not pass --namespace"
deploy_install "$work/overlay"
k rollout status deployment/stsresize --timeout=120s >/dev/null || fail "the Deployment did not roll out"
ok "no cluster-level object rendered; Role + RoleBindings; Deployment rolled out (its pods idle: no images here)"

step "a kubeconfig with a TokenRequest token of $ns/stsresize"
deploy_sa_kubeconfig stsresize "$ns" "$work/sa.kubeconfig"
can() { kubectl --kubeconfig "$work/sa.kubeconfig" auth can-i "$@" 2>/dev/null || true; }
for allowed in "watch statefulsets.apps" "delete persistentvolumeclaims" "create jobs.batch" \
  "list pods" "create pods" "delete pods" "create configmaps" "patch events" "update leases.coordination.k8s.io"; do
  # shellcheck disable=SC2086 # words on purpose
  [[ $(can $allowed -n "$ns") == yes ]] || fail "the ServiceAccount may not: $allowed"
done
for refused in "list storageclasses.storage.k8s.io" "list statefulsets.apps -A" "list persistentvolumes" \
  "get persistentvolumes" "patch persistentvolumes" "get secrets -n $ns" "list statefulsets.apps -n default"; do
  # shellcheck disable=SC2086
  [[ $(can $refused) == no ]] || fail "the ServiceAccount may, but should not: $refused"
done
ok "the Role's verbs in $ns; no StorageClasses or PersistentVolumes, nothing in other namespaces or cluster-wide"

step "StatefulSet web: 3 replicas of 1Gi on sim-expandable, random data"
e2e_statefulset web sim-expandable 3
rebind_claim_volumes web 3 >"$work/volumes-before"
mapfile -t volumes_before < <(awk '{ print $2 }' "$work/volumes-before")
pods_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')

step "resize to 2Gi as the ServiceAccount: the copy path, since StorageClasses cannot be read"
deploy_start_controller "$work/sa.kubeconfig" controller.log --namespace "$ns" --leader-elect
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_completed web 240
ok "completed; phases seen: ${phases[*]}"
deploy_assert_resized web 3 2Gi
deploy_wait_event web StorageClassesUnreadable 'taking the copy path' 5
[[ $(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}') != "$pods_before" ]] ||
  fail "the pods were never restarted: the copy path scales down"
k get lease stsresize-leader -o jsonpath='{.spec.holderIdentity}' | grep -q . || fail "no Lease held in $ns"
ok "event StorageClassesUnreadable; pods re-created by the copy path; Lease held in $ns"
why='reading PersistentVolumes is forbidden (a namespace-scoped installation has no cluster-level rights)'
planned=$(rebind_planned "$work/journal-controller.log.db")
[[ $planned == "Copy path, "*" (not rebind: $why)" ]] || fail "Planned says: $planned"
deploy_wait_event web RebindUnavailable "takes the two-copy path \(copy to a backup claim and back\): reading PersistentVolumes is forbidden" 20
rebind_assert_volumes web 3 Delete 60 "${volumes_before[@]}"
ok "the two-copy path: Planned \"${planned:0:30}... (not rebind: $why)\", event RebindUnavailable"

step "remove 'delete' on persistentvolumeclaims from the Role; resize to 3Gi"
rule=$(k get role stsresize -o json | jq '[.rules[].resources[0]] | index("persistentvolumeclaims")')
k patch role stsresize --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/rules/$rule/verbs\",\"value\":[\"get\",\"list\",\"watch\",\"create\",\"patch\"]}]" >/dev/null
[[ $(can delete persistentvolumeclaims -n "$ns") == no ]] || fail "the verb is still granted"
uids_before=$(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid} {end}')
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"3Gi"}}' >/dev/null
deploy_wait_event web Forbidden "^Forbidden: cannot delete persistentvolumeclaims in namespace $ns \(RBAC: grant verbs \[\"delete\"\] on resources \[\"persistentvolumeclaims\"\]" 120
ok "Warning event: $(k get events --field-selector reason=Forbidden -o jsonpath='{.items[0].message}')"
grep -q "cannot delete persistentvolumeclaims in namespace $ns" "$work/controller.log" ||
  fail "no log line names the verb and resource"
ok "log: $(grep -m1 'cannot delete persistentvolumeclaims' "$work/controller.log")"
sleep 5 # several retries with backoff
[[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == Recreating ]] ||
  fail "not waiting in Recreating: $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')"
for i in 0 1 2; do
  [[ -z $(jp "pvc/data-web-$i" '{.metadata.deletionTimestamp}') ]] || fail "pvc/data-web-$i is being deleted"
  grep -q "data-web-$i=$(jp "pvc/data-web-$i" '{.metadata.uid}') " <<<"$uids_before" || fail "pvc/data-web-$i was replaced"
done
e2e_assert_data_intact web 3
events=$(k get events --field-selector involvedObject.name=web,reason=Forbidden -o json | jq '.items | length')
[[ $events == 1 ]] || fail "$events Forbidden events, not one"
ok "waiting in Recreating; every source claim the same object, not deleted, data unchanged; one event"

step "restore the Role (re-apply the overlay): the resize completes"
kubectl apply -k "$work/overlay" >/dev/null
e2e_wait_completed web 240
deploy_assert_resized web 3 3Gi
e2e_stop_controller "$controller_pid"
ok "completed after the grant; SIGTERM exit 0"

step "the Deployment itself, running this binary with its projected token and its own --namespace"
mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/stsresize"
deploy_pod_visible_binary >"$work/binary.path"
binary=$(cat "$work/binary.path")
# Its own args, but no fixed ports: nodesim's pods share the host's network.
args=$(k get deployment stsresize -o json | jq -c '.spec.template.spec.containers[0].args |
  map(select(startswith("--metrics-bind-address") or startswith("--health-probe-bind-address") | not)) +
  ["--metrics-bind-address=0", "--health-probe-bind-address=0"]')
k patch deployment stsresize --type=json -p "$(jq -cn --arg bin "$binary" --argjson args "$args" '[
  {op: "add", path: "/spec/template/spec/containers/0/command", value: [$bin]},
  {op: "replace", path: "/spec/template/spec/containers/0/args", value: $args}]')" >/dev/null
k rollout status deployment/stsresize --timeout=120s >/dev/null || fail "the patched Deployment did not roll out"
deadline=$((SECONDS + 60))
until holder=$(k get lease stsresize-leader -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) &&
  [[ $holder == stsresize-* ]] && k get pod "$holder" >/dev/null 2>&1; do
  ((SECONDS > deadline)) && fail "no replica of the Deployment took the Lease in 60s"
  sleep 0.5
done
sleep 3 # the informers list and watch
checked=0
# shellcheck disable=SC2154 # nodesim_dir comes from proof/lib.sh
for log in "$nodesim_dir/pods/${ns}"_stsresize-*/controller.log; do
  [[ -f $log ]] || continue
  pod=$(basename "$(dirname "$log")")
  k get pod "${pod#"${ns}_"}" >/dev/null 2>&1 || continue # an old ReplicaSet's pod
  grep -q "\"msg\":\"starting\",\"namespace\":\"$ns\"" "$log" || fail "$pod did not start on namespace $ns: $(head -n 5 "$log")"
  ! grep -qi forbidden "$log" || fail "$pod was refused something: $(grep -i -m 3 forbidden "$log")"
  checked=$((checked + 1))
done
((checked == 2)) || fail "$checked logs of the Deployment's current pods found, not 2"
k scale deployment stsresize --replicas=0 >/dev/null
ok "replica $holder leads; both replicas started on namespace $ns, nothing forbidden; scaled to 0"
