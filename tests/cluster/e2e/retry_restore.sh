#!/usr/bin/env bash
# `stsresize advance --retry` of a resize that failed AFTER its source claims were replaced, on
# the local control plane: 3 replicas of 1Gi on sim-fixed with random data, a request for 2Gi,
# the restore Jobs failing (nodesim failJobPods, switched on in Recreating once every backup
# Job completed): the operation ends Failed in Restoring with the data in the backup claims.
# Then `advance --retry --dry-run` writes nothing and says it would resume Restoring; the fault
# is cleared; `advance --retry` resumes the SAME operation in Restoring (its failed restore
# Jobs deleted first, Event ResizeResumed) and it completes: every claim 2Gi with every file's
# sha256 as before, 3/3 Ready, the label stsresize.dev/failed gone, no backup claim or Job
# left. The journal holds one operation, consistent, Completed, with the accepted retry right
# before "Failed -> Restoring (Resume)". Restore Jobs exist only on the two-copy path (the
# rebind path copies nothing in Restoring): the controller runs with --no-rebind.
#   retry_restore.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
on_exit "clear_fault failJobPods"

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --as e2e-operator "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
e2e_claim_uids web 3 >"$work/uids-before"
ok "$(wc -l <"$work/before-web-0") files per volume"

step "request 2Gi; the restore Jobs fail: Failed in Restoring, the data in the backup claims"
e2e_start_controller controller.log --no-rebind
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
# No Job runs in Recreating: every backup Job has completed and no restore Job has started.
e2e_wait_phase web Recreating 150
set_fault failJobPods 77
ok "fault failJobPods=77 on in Recreating"
e2e_wait_failed web 240
state=$(annotation state)
failed_id=$(jq -r .id <<<"$state")
[[ $(jq -r .failedIn <<<"$state") == Restoring ]] || fail "the state does not record failedIn Restoring: $state"
failure=$(jq -r .failure <<<"$state")
[[ $failure == *"stsresize-restore failed"* ]] || fail "the failure does not name a restore Job: $failure"
[[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no stsresize.dev/failed label"
[[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "spec.replicas is not 0"
for i in 0 1 2; do
  [[ $(jp "pvc/data-web-$i-stsresize-bak" '{.status.phase}') == Bound ]] || fail "backup of data-web-$i is not Bound"
done
ok "operation $failed_id Failed in Restoring: $failure; replicas 0, 3 backup claims Bound"
# Every restore Job has ended (Failed or Complete condition) before the retry: one still
# running (between two attempts, too) would have the retry refused.
deadline=$((SECONDS + 180))
while running=$(k get jobs -l stsresize.dev/purpose=restore \
  -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.status=="True")].type}{"\n"}{end}' |
  awk '$0 !~ / (Failed|Complete)/ {print $1}') && [[ -n $running ]]; do
  ((SECONDS > deadline)) && fail "restore Jobs still running: $running"
  sleep 0.5
done
ok "every restore Job has ended: $(k get jobs -l stsresize.dev/purpose=restore -o name | wc -l) Job(s)"

step "describe says to run --retry"
described=$("$stsresize" describe "$ns/web" --kubeconfig "$KUBECONFIG" 2>&1) || fail "describe $ns/web exited $?: $described"
[[ $described == *"resume it in Restoring"* && $described == *"stsresize advance $ns/web --retry"* ]] ||
  fail "describe does not advise the retry: $described"
ok "describe: resume it in Restoring: stsresize advance $ns/web --retry"

step "--retry --dry-run writes nothing; with the fault cleared, --retry resumes Restoring"
before_rv=$(jp statefulset/web '{.metadata.resourceVersion}')
out=$(advance --retry --dry-run) || fail "advance --retry --dry-run exited $?: $out"
[[ $out == *"dry run: would resume Restoring of operation $failed_id"* ]] || fail "dry run says: $out"
[[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
[[ $(jp statefulset/web '{.metadata.resourceVersion}') == "$before_rv" ]] || fail "--dry-run changed the StatefulSet"
ok "--dry-run: $(head -n 1 <<<"$out")"
clear_fault failJobPods
out=$(advance --retry) || fail "advance --retry exited $?: $out"
[[ $out == *"resume of Restoring of operation $failed_id"* ]] || fail "advance --retry says: $out"
ok "$(head -n 1 <<<"$out")"
e2e_wait_completed web 300
ok "completed; phases seen: ${phases[*]}"
e2e_assert_resized web 3 2Gi
[[ -z $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') ]] || fail "the stsresize.dev/failed label is still there"
[[ -z $(annotation advance) ]] || fail "the advance annotation is still there"
[[ $(jq -r .id <<<"$(annotation last-operation)") == "$failed_id" ]] ||
  fail "the completed operation is not $failed_id: $(annotation last-operation)"
events=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=web,reason=ResizeResumed" \
  -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
[[ $events == *"operation $failed_id: Failed -> Restoring (resumed by e2e-operator"* ]] ||
  fail "no Event ResizeResumed: $events"
ok "the same operation $failed_id completed; label and request gone; Event ResizeResumed"

step "the journal: one operation, consistent, Completed, the retry right before the Resume"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.consistent' <<<"$rows") == true ]] || fail "the journal is not consistent"
[[ $(jq -r '[.operations[].operation] | join(",")' <<<"$rows") == "$failed_id" ]] ||
  fail "the journal holds other operations than $failed_id: $(jq -c .operations <<<"$rows")"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Completed ]] || fail "$failed_id does not replay to Completed"
pair=$(jq -r '[.rows[] | "\(.event) \(.details)"] | to_entries |
  map(select(.value | test("^PhaseChanged Failed . Restoring \\(Resume\\)$"))) | .[0].key' <<<"$rows")
[[ $pair != null ]] || fail "no PhaseChanged Failed -> Restoring (Resume) in the journal"
before=$(jq -r ".rows[$((pair - 1))] | \"\\(.event) \\(.details)\"" <<<"$rows")
[[ $before =~ ^OperatorAction\ retry\ in\ Failed\ by\ e2e-operator\ at\ [0-9T:.-]+Z$ ]] ||
  fail "the record before the Resume is not the accepted retry: $before"
ok "$failed_id: Failed in Restoring, \"$before\", Failed -> Restoring, Completed"
