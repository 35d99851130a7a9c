#!/usr/bin/env bash
# `stsresize advance --retry` on the local control plane: a copy resize whose backup Jobs fail
# (nodesim failJobPods, on from the start) ends Failed and scaled back with the data intact;
# `advance --retry --dry-run` writes nothing; the fault is cleared; `advance --retry` starts a
# new operation ("retry of <id> by e2e-operator") that completes: every claim 2Gi, every file's
# sha256 as before, 3/3 Ready, nothing left, the label stsresize.dev/failed gone. The journal
# holds both operations, both consistent: the failed one ending with the accepted retry, the
# new one Completed. A second `--retry` then exits 5 (nothing failed to retry).
#   retry.sh STSRESIZE_BINARY
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

step "request 2Gi with every copy Job failing: Failed, scaled back"
set_fault failJobPods 77
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_failed web 240
failed_id=$(jq -r .id <<<"$(annotation state)")
failure=$(jq -r .failure <<<"$(annotation state)")
[[ $failure == *"stsresize-backup failed"* ]] || fail "the failure does not name a backup Job: $failure"
[[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no stsresize.dev/failed label"
ok "operation $failed_id Failed: $failure"
deadline=$((SECONDS + 120))
while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
  ((SECONDS > deadline)) && fail "left behind after the scale-back: $leftovers"
  sleep 0.5
done
e2e_claim_uids web 3 >"$work/uids-failed"
diff -q "$work/uids-before" "$work/uids-failed" >/dev/null || fail "the source claims were replaced"
e2e_assert_data_intact web 3
ok "scaled back onto the same source claims, data intact, nothing left"

step "retry: --dry-run writes nothing; with the fault cleared, the retry completes"
out=$(advance --retry --dry-run) || fail "advance --retry --dry-run exited $?: $out"
[[ $out == *"dry run: would retry operation $failed_id"* && $out == *"start a new operation: retry of $failed_id by e2e-operator: "* ]] ||
  fail "dry run says: $out"
[[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
ok "--dry-run: $(head -n 1 <<<"$out")"
# Without --as, the name is the one the API server authenticates (the admin certificate's CN),
# not the kubeconfig's name for its user entry.
sed -E 's/^(- name|    user): admin$/\1: laptop-nickname/' "$KUBECONFIG" >"$work/renamed-user.kubeconfig"
(($(grep -c 'laptop-nickname$' "$work/renamed-user.kubeconfig") == 2)) ||
  fail "the user entry and its reference were not both renamed in a copy of $KUBECONFIG"
out=$("$stsresize" advance "$ns/web" --kubeconfig "$work/renamed-user.kubeconfig" --retry --dry-run) ||
  fail "advance --retry --dry-run (no --as) exited $?: $out"
[[ $out == *"start a new operation: retry of $failed_id by admin: "* ]] ||
  fail "without --as, the dry run does not name the authenticated user admin: $out"
ok "without --as: signed by admin, the authenticated user (the kubeconfig calls it laptop-nickname)"
clear_fault failJobPods
out=$(advance --retry) || fail "advance --retry exited $?: $out"
ok "$(head -n 1 <<<"$out")"
e2e_wait_completed web 300
ok "completed; phases seen: ${phases[*]}"
e2e_assert_resized web 3 2Gi
[[ -z $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') ]] || fail "the stsresize.dev/failed label is still there"
[[ -z $(annotation advance) ]] || fail "the advance annotation is still there"
ok "label stsresize.dev/failed and the request gone"

step "the journal: the failed operation ends with the retry, the new one names it"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.consistent' <<<"$rows") == true ]] || fail "the journal is not consistent"
[[ $(jq -r "[.operations[] | select(.operation == \"$failed_id\") | .finalPhase] | join(\",\")" <<<"$rows") == Failed ]] ||
  fail "operation $failed_id does not replay to Failed: $(jq -c .operations <<<"$rows")"
last=$(jq -r "[.rows[] | select(.operation == \"$failed_id\")] | last | \"\\(.event) \\(.details)\"" <<<"$rows")
[[ $last =~ ^OperatorAction\ retry\ in\ Failed\ by\ e2e-operator\ at\ [0-9T:.-]+Z$ ]] ||
  fail "the failed operation's journal does not end with the retry: $last"
new_id=$(jq -r "[.operations[] | select(.operation != \"$failed_id\")] | .[0].operation" <<<"$rows")
[[ $(jq -r "[.operations[] | select(.operation == \"$new_id\") | .finalPhase] | join(\",\")" <<<"$rows") == Completed ]] ||
  fail "the new operation $new_id does not replay to Completed"
started=$(jq -r "[.rows[] | select(.operation == \"$new_id\" and .event == \"OperationStarted\") | .details] | .[0]" <<<"$rows")
[[ $started == *"retry of $failed_id by e2e-operator"* ]] || fail "the new operation's start does not name the retry: $started"
ok "$failed_id: Failed, then \"$last\"; $new_id: Completed, started \"${started:0:80}...\""

set +e
out=$(advance --retry 2>&1)
code=$?
set -e
((code == 5)) || fail "a second --retry exited $code: $out"
[[ $out == *"has no failed operation to retry"* ]] || fail "the refusal does not say why: $out"
ok "a second --retry: exit 5, \"${out:0:90}...\""
