#!/usr/bin/env bash
# Two failures of the copy path on the real control plane, each ending Failed (terminal) with the
# label stsresize.dev/failed, a Warning event, the replicas scaled back while every source claim
# is intact, and the data unchanged:
#  1. a claim already exists under the backup claim's name with another spec: stsresize refuses
#     to use or delete it (it is someone else's), and the foreign claim is left exactly as it was;
#  2. the backup claims cannot be provisioned (nodesim fault failProvisioning): they stay Pending
#     past --pending-timeout.
#   stuck_and_conflicting_claims.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
on_exit clear_fault failProvisioning

# failed NAME WANT_REASON: the operation ends Failed with the label, a Warning naming the cause,
# replicas back to 3 and Ready, every source claim 1Gi with its data unchanged.
failed() {
  local name=$1 want=$2 deadline=$((SECONDS + 180)) warnings
  until [[ -n $(jp "statefulset/$name" '{.metadata.labels.stsresize\.dev/failed}' 2>/dev/null) ]]; do
    ((SECONDS < deadline)) || fail "$name: no stsresize.dev/failed label after 180s (phase $(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/phase}'))"
    _e2e_any_controller_alive || fail "the controller exited"
    sleep 0.5
  done
  warnings=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=$name,type=Warning" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}')
  grep -qi -- "$want" <<<"$warnings" || fail "$name: no Warning event mentioning '$want': $warnings"
  k rollout status "statefulset/$name" --timeout=120s >/dev/null || fail "$name: not scaled back to Ready"
  [[ $(jp "statefulset/$name" '{.spec.replicas}') == 3 && $(jp "statefulset/$name" '{.status.readyReplicas}') == 3 ]] ||
    fail "$name: replicas not back to 3 Ready"
  local i
  for i in 0 1 2; do
    [[ $(jp "pvc/data-$name-$i" '{.spec.resources.requests.storage}') == 1Gi ]] || fail "pvc/data-$name-$i changed size"
  done
  e2e_assert_data_intact "$name" 3
  # With the sources intact, no backup is the only copy: this operation's Jobs and backup
  # claims go (a claim it did not create stays, see case 1).
  local leftovers
  deadline=$((SECONDS + 60))
  while leftovers=$(k get jobs,pvc -o name | grep -E "data-$name-[0-9]+-stsresize" | grep -v "$keep" || true); [[ -n $leftovers ]]; do
    ((SECONDS < deadline)) || fail "$name: left behind after the scale-back: $leftovers"
    sleep 0.5
  done
  ok "$name: Failed, labelled, 3/3 Ready again, sources 1Gi with data unchanged; $(grep -i -m1 -- "$want" <<<"$warnings")"
}

step "StatefulSets a and b: 3 replicas of 1Gi on sim-fixed with data; the controller (pending timeout 15s)"
e2e_statefulset a sim-fixed 3
e2e_statefulset b sim-fixed 3
e2e_start_controller controller.log --pending-timeout 15s

step "1. a foreign claim holds the name of a's first backup claim, with another size"
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-a-0-stsresize-bak, labels: {owner: someone-else}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: sim-expandable
  resources: {requests: {storage: 5Gi}}
YAML
foreign_uid=$(jp pvc/data-a-0-stsresize-bak '{.metadata.uid}')
k annotate statefulset a 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
keep=persistentvolumeclaim/data-a-0-stsresize-bak
failed a "data-a-0-stsresize-bak"
[[ $(jp pvc/data-a-0-stsresize-bak '{.metadata.uid}') == "$foreign_uid" ]] || fail "the foreign claim was replaced"
[[ $(jp pvc/data-a-0-stsresize-bak '{.spec.resources.requests.storage}') == 5Gi ]] || fail "the foreign claim was changed"
[[ -z $(jp pvc/data-a-0-stsresize-bak '{.metadata.deletionTimestamp}') ]] || fail "the foreign claim is being deleted"
ok "the foreign claim is untouched (same uid, 5Gi, not deleted)"

step "2. backup claims of b cannot be provisioned: Pending past the 15s timeout"
set_fault failProvisioning sim-fixed
k annotate statefulset b 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
keep=nothing-to-keep
failed b "pending"
clear_fault failProvisioning
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
[[ $(grep -c "Failed" <<<"$replay") -ge 2 ]] || fail "the journal does not show both operations Failed: $replay"
ok "the journal replays consistent, both operations Failed"
e2e_stop_controller "$controller_pid"
