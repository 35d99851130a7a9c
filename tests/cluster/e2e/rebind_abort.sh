#!/usr/bin/env bash
# `stsresize advance --abort` on the rebind path (issue #17), on the local control plane, after
# every source claim was deleted: the claims are already on their copies' volumes, and the abort
# puts each back on its OWN old volume, which the rebind path kept (reclaim policy Retain).
# 3 replicas of 1Gi on sim-fixed with random data, stsresize.dev/mode=manual, an explicit request
# for 2Gi; every transition approved (`advance --approve --as e2e-operator`) until the operation
# waits to leave Restoring. There: Planned says "Rebind path"; every claim is Bound to the volume
# the journal's VolumeRetained names as its copy's, each old volume is still there, Retain and
# Released, each copy's volume Retain. Then `advance --abort --as e2e-operator`: the operation
# ends Failed ("aborted by e2e-operator in Restoring", label stsresize.dev/failed, a Warning
# ResizeAborted) with every claim 1Gi, Bound to the volume it had before the resize, every
# file's sha256 as before, 3/3 Ready; every volume of the namespace Bound to its claim with its
# own policy Delete again, the copies' volumes gone (the PV controller deletes them once their
# policy is Delete again), no backup claim or Job left; the journal replays to Failed with the
# accepted abort, Restoring -> ScalingBack -> Failed, a SourceRebound per claim and every
# policy put back (ReclaimPolicyRestored, two per claim).
#   rebind_abort.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
# shellcheck source-path=SCRIPTDIR source=rebind_lib.sh
source "$(dirname "$0")/rebind_lib.sh"
use_namespace

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --as e2e-operator "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
# approve_until TRANSITION: approves every transition that waits before TRANSITION waits.
approve_until() {
  local deadline=$((SECONDS + 300)) waiting out
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
# volume_field PV JSONPATH
volume_field() {
  kubectl get pv "$1" -o jsonpath="$2"
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
rebind_claim_volumes web 3 >"$work/volumes-before"
k annotate statefulset web stsresize.dev/mode=manual >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume; volumes $(awk '{ print $2 }' "$work/volumes-before" | paste -sd ' '); stsresize.dev/mode=manual"

step "start the controller; request 2Gi; approve every transition until Restoring -> ScalingUp waits"
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
approve_until "Restoring -> ScalingUp"
[[ $(annotation phase) == Restoring ]] || fail "waiting in $(annotation phase), not Restoring"

step "in Restoring: every claim on its copy's volume, both volumes of each kept (Retain)"
planned=$(rebind_planned "$work/journal.db")
[[ $planned == "Rebind path, "* ]] || fail "Planned says: $planned"
ok "Planned: $planned"
rebind_retained "$work/journal.db" copy >"$work/copies"
rebind_retained "$work/journal.db" source >"$work/sources"
copies=()
for i in 0 1 2; do
  claim=data-web-$i
  old=$(awk -v c="$claim" '$1 == c { print $2 }' "$work/volumes-before")
  read -r _ copy _ < <(grep "^$claim " "$work/copies" || echo "- -")
  read -r _ source _ < <(grep "^$claim " "$work/sources" || echo "- -")
  [[ $source == "$old" ]] || fail "the journal keeps '$source' as the volume of $claim, not $old"
  [[ $copy != - && $copy != "$old" ]] || fail "no copy's volume journaled for $claim: $(cat "$work/copies")"
  copies+=("$copy")
  [[ $(jp "pvc/$claim" '{.spec.volumeName}') == "$copy" && $(jp "pvc/$claim" '{.status.phase}') == Bound ]] ||
    fail "pvc/$claim is $(jp "pvc/$claim" '{.status.phase}') on '$(jp "pvc/$claim" '{.spec.volumeName}')', not Bound to its copy $copy"
  [[ $(volume_field "$copy" '{.spec.persistentVolumeReclaimPolicy}') == Retain ]] || fail "the copy $copy of $claim is not Retain"
  [[ $(volume_field "$old" '{.spec.persistentVolumeReclaimPolicy} {.status.phase}') == "Retain Released" ]] ||
    fail "the old volume $old of $claim is '$(volume_field "$old" '{.spec.persistentVolumeReclaimPolicy} {.status.phase}')', not 'Retain Released'"
done
ok "each claim Bound to its copy (${copies[*]}), Retain; each old volume Retain and Released"

step "abort in Restoring"
out=$(advance --abort --dry-run) || fail "advance --abort --dry-run exited $?: $out"
[[ $out == *"dry run: would abort operation"*"in phase Restoring as e2e-operator"* ]] || fail "dry run says: $out"
[[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
out=$(advance --abort) || fail "advance --abort exited $?: $out"
ok "$(head -n 1 <<<"$out")"
e2e_wait_failed web 240
ok "Failed; phases seen: ${phases[*]}"

step "rolled back: each claim on its own old volume, 1Gi, data intact, 3/3 Ready"
failure=$(jq -r .failure <<<"$(annotation state)")
[[ $failure == "aborted by e2e-operator in Restoring" ]] || fail "the failure is \"$failure\""
[[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no stsresize.dev/failed=true label"
ok "failure \"$failure\", label stsresize.dev/failed=true"
rebind_claim_volumes web 3 >"$work/volumes-after"
diff -q "$work/volumes-before" "$work/volumes-after" >/dev/null ||
  fail "the claims are not on the volumes they had: $(diff "$work/volumes-before" "$work/volumes-after")"
for i in 0 1 2; do
  [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase} {.spec.storageClassName}') == "1Gi Bound sim-fixed" ]] ||
    fail "pvc/data-web-$i is '$(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase} {.spec.storageClassName}')', not '1Gi Bound sim-fixed'"
done
e2e_assert_data_intact web 3
ok "every claim 1Gi, Bound to the volume it had before; every file's sha256 unchanged"
[[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "spec.replicas is not 3"
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web is not ready again"
[[ $(jp statefulset/web '{.status.readyReplicas}') == 3 ]] || fail "readyReplicas is not 3"
ok "3/3 Ready"

step "the volumes' policies back, the copies gone, no backup claim or Job left"
rebind_assert_volumes web 3 Delete 60 "${copies[@]}"
deadline=$((SECONDS + 60))
while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
  ((SECONDS > deadline)) && fail "left behind after the abort: $leftovers"
  sleep 0.5
done
ok "no backup claim or copy Job left"
e2e_wait_event web "^ResizeAborted: scaled back to 3 replicas: aborted by e2e-operator in Restoring" 30
ok "Warning $event"

step "the journal: the accepted abort, Restoring -> ScalingBack -> Failed, each claim put back"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Failed ]] || fail "the journal does not replay to Failed"
aborts=$(jq -r '[.rows[] | select(.event == "OperatorAction") | select(.details | test("^abort in Restoring by e2e-operator at [0-9T:.-]+Z$"))] | length' <<<"$rows")
((aborts == 1)) || fail "$aborts accepted aborts in Restoring by e2e-operator: $(jq -c '[.rows[] | select(.event == "OperatorAction") | .details]' <<<"$rows")"
transitions=$(e2e_journal_transitions <<<"$rows")
[[ $(tail -n 2 <<<"$transitions" | paste -sd,) == "Restoring -> ScalingBack,ScalingBack -> Failed" ]] ||
  fail "the journal does not end Restoring -> ScalingBack -> Failed: $transitions"
rebound=$(rebind_count "$work/journal.db" SourceRebound)
restored=$(rebind_count "$work/journal.db" ReclaimPolicyRestored)
((rebound == 3 && restored == 6)) || fail "$rebound SourceRebound (want 3) and $restored ReclaimPolicyRestored (want 6)"
ok "journal: the abort by e2e-operator, Restoring -> ScalingBack -> Failed, 3 SourceRebound, 6 policies put back"
