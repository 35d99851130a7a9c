#!/usr/bin/env bash
# `stsresize advance --abort` on the local control plane. 3 replicas of 1Gi on sim-fixed with
# random data, an explicit request for 2Gi, held at a chosen point, then aborted by
# e2e-operator:
#   scaling_down  stsresize.dev/mode=manual, aborted while ScalingDown -> BackingUp waits (0
#                 replicas, no copy yet)
#   backing_up    mode=step, aborted while BackingUp -> Recreating waits: every backup verified,
#                 its backup claims and Jobs there
#   recreating    mode=step, BackingUp -> Recreating approved while a ValidatingAdmissionPolicy
#                 denies deleting the source claims: the operation stays in Recreating with
#                 every source intact, and is aborted there
# Each: the controller takes the abort before its step, scales back to 3/3 Ready on the same
# source claims (uid), 1Gi, every file's sha256 as before, no backup claim or Job left, phase
# Failed with the failure "aborted by e2e-operator in <phase>", label stsresize.dev/failed, a
# Warning ResizeAborted, and the journal replays to Failed with the accepted abort.
#   refused       mode=manual, held at Recreating -> Restoring (every source claim replaced):
#                 `advance --abort` exits 5 naming the backup claims, and nothing changes; then
#                 approved to completion, every claim 2Gi, data intact. Only the two-copy path
#                 refuses there (the rebind path puts each claim back on its own volume): this
#                 case runs the controller with --no-rebind; the others run the default, rebind
#                 path.
#   rebound       mode=manual, held at Recreating -> Restoring on the rebind path (every source
#                 claim deleted and created again on its copy's volume): the abort puts each claim
#                 back on its own old volume (a new claim object, so not the same uid), 1Gi, the
#                 data intact, every volume's reclaim policy as before, the copies' volumes
#                 released; the rest as above.
#   abort.sh STSRESIZE_BINARY scaling_down|backing_up|recreating|refused|rebound
case_name=${2:?scaling_down, backing_up, recreating, refused or rebound}
case $case_name in
  scaling_down | backing_up | recreating | refused | rebound) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY scaling_down|backing_up|recreating|refused|rebound" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --as e2e-operator "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
# wait_awaiting TRANSITION SECONDS
wait_awaiting() {
  local deadline=$((SECONDS + $2))
  while [[ $(annotation awaiting-approval) != "$1" ]]; do
    ((SECONDS > deadline)) && fail "no wait for $1 in $2s (awaiting: '$(annotation awaiting-approval)', phase: '$(annotation phase)'); $(tail -n 20 "$work/controller.log")"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}
# approve_until TRANSITION: approves every transition that waits before TRANSITION waits.
approve_until() {
  local deadline=$((SECONDS + 300)) waiting
  while :; do
    waiting=$(annotation awaiting-approval)
    [[ $waiting == "$1" ]] && return 0
    if [[ -n $waiting && -z $(annotation advance) ]]; then
      out=$(advance --approve) || fail "advance --approve exited $? at $waiting: $out"
      ok "approved $waiting"
    fi
    ((SECONDS > deadline)) && fail "never waited for $1 (awaiting: '$waiting', phase: '$(annotation phase)')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
e2e_claim_uids web 3 >"$work/uids-before"
# "claim volume reclaim-policy" of each claim as it starts.
volumes() {
  local i volume
  for i in 0 1 2; do
    volume=$(jp "pvc/data-web-$i" '{.spec.volumeName}')
    echo "data-web-$i $volume $(kubectl get pv "$volume" -o jsonpath='{.spec.persistentVolumeReclaimPolicy}')"
  done
}
volumes >"$work/volumes-before"
mode=manual
[[ $case_name == backing_up || $case_name == recreating ]] && mode=step
k annotate statefulset web "stsresize.dev/mode=$mode" >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume; stsresize.dev/mode=$mode"

step "start the controller; request 2Gi"
if [[ $case_name == refused ]]; then
  e2e_start_controller controller.log --no-rebind
else
  e2e_start_controller controller.log
fi
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

case $case_name in
  scaling_down)
    approve_until "ScalingDown -> BackingUp"
    [[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "not scaled down while ScalingDown -> BackingUp waits"
    phase=ScalingDown
    ;;
  backing_up)
    wait_awaiting "BackingUp -> Recreating" 300
    [[ $(k get pvc -o name | grep -c stsresize-bak) == 3 ]] || fail "not 3 backup claims while BackingUp -> Recreating waits: $(k get pvc -o name)"
    ok "3 backup claims and $(k get jobs -o name | grep -c stsresize) copy Jobs exist; sources untouched"
    phase=BackingUp
    ;;
  recreating)
    wait_awaiting "BackingUp -> Recreating" 300
    policy="e2e-deny-source-delete-$ns"
    on_exit "kubectl delete validatingadmissionpolicybinding '$policy' --ignore-not-found >/dev/null 2>&1; kubectl delete validatingadmissionpolicy '$policy' --ignore-not-found >/dev/null 2>&1; true"
    kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: $policy
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["DELETE"]
        resources: ["persistentvolumeclaims"]
        resourceNames: ["data-web-0", "data-web-1", "data-web-2"]
  validations:
    - expression: "false"
      message: "e2e: the source claims of web may not be deleted"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: $policy
spec:
  policyName: $policy
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: $ns
EOF
    # The policy takes effect once the API server has loaded it: a server-side dry run of a
    # delete says when.
    deadline=$((SECONDS + 60))
    until ! k delete pvc data-web-0 --dry-run=server >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "the ValidatingAdmissionPolicy does not deny deleting data-web-0"
      sleep 0.5
    done
    ok "ValidatingAdmissionPolicy $policy denies deleting data-web-0..2"
    out=$(advance --approve) || fail "advance --approve exited $?: $out"
    e2e_wait_phase web Recreating 60
    # The controller tries to delete a source claim and is denied: it retries, the operation
    # stays in Recreating with every source intact.
    deadline=$((SECONDS + 120))
    until grep -q "may not be deleted" "$work/controller.log" || e2e_warnings web | grep -q "may not be deleted"; do
      ((SECONDS > deadline)) && fail "the controller never tried to delete a source claim: $(tail -n 20 "$work/controller.log")"
      sleep 0.5
    done
    [[ $(annotation phase) == Recreating ]] || fail "not in Recreating: $(annotation phase)"
    e2e_claim_uids web 3 >"$work/uids-recreating"
    diff -q "$work/uids-before" "$work/uids-recreating" >/dev/null || fail "a source claim changed in Recreating"
    [[ -z $(k get pvc data-web-0 data-web-1 data-web-2 -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] ||
      fail "a source claim is being deleted"
    ok "in Recreating, source deletes denied, every source claim intact"
    phase=Recreating
    ;;
  refused)
    approve_until "Recreating -> Restoring"
    phase=Recreating
    ;;
  rebound)
    approve_until "Recreating -> Restoring"
    volumes >"$work/volumes-copies"
    while read -r claim volume _; do
      grep -q "^$claim $volume " "$work/volumes-before" && fail "$claim is still on its own volume $volume"
      [[ $(jp "pvc/$claim" '{.spec.resources.requests.storage}') == 2Gi ]] || fail "$claim is not 2Gi in Restoring"
    done <"$work/volumes-copies"
    ok "every source claim replaced, each on its copy's volume: $(awk '{print $2}' "$work/volumes-copies" | paste -sd' ')"
    phase=Recreating
    ;;
esac

if [[ $case_name == refused ]]; then
  step "abort after the source claims were replaced: refused, nothing changes"
  before=$(k get statefulset web -o jsonpath='{.metadata.annotations}')
  set +e
  out=$(advance --abort 2>&1)
  code=$?
  set -e
  ((code == 5)) || fail "advance --abort after the deletes exited $code: $out"
  [[ $out == *"has deleted source claims data-web-0, data-web-1, data-web-2"* && $out == *"data-web-0-stsresize-bak"* && $out == *"Let it finish"* ]] ||
    fail "the refusal does not say why, where the data is and what to do: $out"
  ok "exit 5: ${out:0:160}..."
  sleep 2
  [[ $(k get statefulset web -o jsonpath='{.metadata.annotations}') == "$before" ]] ||
    fail "the StatefulSet's annotations changed after a refused abort"
  [[ -z $(annotation advance) ]] || fail "a refused abort wrote stsresize.dev/advance"
  ok "nothing written; still waiting for $(annotation awaiting-approval)"
  step "approve to completion"
  approve_until "CleaningUp -> Completed"
  out=$(advance --approve) || fail "advance --approve exited $?: $out"
  e2e_wait_completed web 240
  e2e_assert_resized web 3 2Gi
  e2e_stop_controller "$controller_pid"
  exit 0
fi

step "abort in $phase"
out=$(advance --abort --dry-run) || fail "advance --abort --dry-run exited $?: $out"
[[ $out == *"dry run: would abort operation"*"in phase $phase as e2e-operator"* ]] || fail "dry run says: $out"
[[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
ok "--dry-run: $(head -n 1 <<<"$out"); nothing written"
out=$(advance --abort) || fail "advance --abort exited $?: $out"
ok "$(head -n 1 <<<"$out")"
e2e_wait_failed web 240
ok "Failed; phases seen: ${phases[*]}"
if [[ $case_name == recreating ]]; then
  # Scaling back deletes only backup claims and Jobs, which the policy lets through.
  kubectl delete validatingadmissionpolicybinding "$policy" >/dev/null
  kubectl delete validatingadmissionpolicy "$policy" >/dev/null
fi

step "rolled back: the same source claims, 1Gi, data intact, 3/3 Ready, nothing left"
state=$(annotation state)
failure=$(jq -r .failure <<<"$state")
[[ $failure == "aborted by e2e-operator in $phase" ]] || fail "the failure is \"$failure\""
[[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no stsresize.dev/failed=true label"
ok "failure \"$failure\", label stsresize.dev/failed=true"
e2e_claim_uids web 3 >"$work/uids-after"
if [[ $case_name == rebound ]]; then
  # Each claim created again on its own old volume, with that volume's reclaim policy as before.
  volumes >"$work/volumes-after"
  diff -q "$work/volumes-before" "$work/volumes-after" >/dev/null ||
    fail "not every claim is back on its own volume with its policy: $(diff "$work/volumes-before" "$work/volumes-after")"
  while read -r claim uid; do
    grep -q "^$claim $uid\$" "$work/uids-before" && fail "$claim is the same object: it was never deleted"
  done <"$work/uids-after"
  ok "every claim created again on its own volume, reclaim policy as before: $(awk '{print $2 "=" $3}' "$work/volumes-after" | paste -sd' ')"
  deadline=$((SECONDS + 60))
  while read -r claim volume _; do
    while kubectl get pv "$volume" >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "the copy's volume $volume ($claim) is still there: $(kubectl get pv "$volume" -o jsonpath='{.spec.persistentVolumeReclaimPolicy} {.status.phase}')"
      sleep 0.5
    done
  done <"$work/volumes-copies"
  ok "the copies' volumes released and gone"
else
  diff -q "$work/uids-before" "$work/uids-after" >/dev/null ||
    fail "the source claims were replaced: $(diff "$work/uids-before" "$work/uids-after")"
fi
for i in 0 1 2; do
  [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage}') == 1Gi ]] || fail "pvc/data-web-$i is not 1Gi"
  [[ $(jp "pvc/data-web-$i" '{.status.phase}') == Bound ]] || fail "pvc/data-web-$i is not Bound"
done
e2e_assert_data_intact web 3
if [[ $case_name == rebound ]]; then
  ok "every claim 1Gi and Bound; every file's sha256 unchanged"
else
  ok "every source claim the same uid, 1Gi and Bound; every file's sha256 unchanged"
fi
[[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "spec.replicas is not 3"
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web is not ready again"
[[ $(jp statefulset/web '{.status.readyReplicas}') == 3 ]] || fail "readyReplicas is not 3"
ok "3/3 Ready"
deadline=$((SECONDS + 60))
while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
  ((SECONDS > deadline)) && fail "left behind after the abort: $leftovers"
  sleep 0.5
done
ok "no backup claim or copy Job left"
[[ -z $(annotation advance) && -z $(annotation awaiting-approval) ]] || fail "advance or awaiting-approval annotation left behind"
warnings=$(e2e_warnings web)
grep -q "^ResizeAborted: scaled back to 3 replicas: aborted by e2e-operator in $phase" <<<"$warnings" ||
  fail "no Warning ResizeAborted: $warnings"
ok "Warning: $(grep -m1 '^ResizeAborted' <<<"$warnings")"

step "the journal: the accepted abort, then ScalingBack, ending Failed"
sleep 2
[[ $(annotation phase) == Failed ]] || fail "the phase moved on from Failed"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Failed ]] || fail "the journal does not replay to Failed"
aborts=$(jq -r "[.rows[] | select(.event == \"OperatorAction\") | select(.details | test(\"^abort in $phase by e2e-operator at [0-9T:.-]+Z\$\"))] | length" <<<"$rows")
((aborts == 1)) || fail "$aborts accepted aborts by e2e-operator in the journal: $(jq -c '[.rows[] | select(.event == "OperatorAction") | .details]' <<<"$rows")"
transitions=$(e2e_journal_transitions <<<"$rows")
[[ $(tail -n 2 <<<"$transitions" | paste -sd,) == "$phase -> ScalingBack,ScalingBack -> Failed" ]] ||
  fail "the journal does not end $phase -> ScalingBack -> Failed: $(jq -c '[.rows[] | select(.event == "PhaseChanged" or .event == "Resumed") | "\(.event) \(.details)"]' <<<"$rows")"
ok "journal: OperatorAction abort by e2e-operator, $phase -> ScalingBack -> Failed"
