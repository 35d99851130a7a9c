#!/usr/bin/env bash
# A retry starts from the replica count of the operation it retries, not from what the
# StatefulSet asks for when the retry comes (states/reconciler.cc: retry_replicas_), on the local
# control plane. A copy resize of 3 replicas whose backup Jobs fail (nodesim failJobPods) ends
# Failed, scaled back to 3 with the data intact; then someone scales the set to 0 (kubectl
# scale, to look at the volumes) and the controller leaves it there; then, the fault cleared,
# `stsresize advance --retry --as e2e-operator` starts a new operation. Its
# stsresize.dev/state records originalReplicas 3 in every phase it is seen in (polled
# throughout), its start in the journal says "(3 replicas)" and names the retry, and it ends
# Completed with the set at 3 replicas, 3/3 Ready, every claim 2Gi with every file's sha256 as
# before, nothing left and the label stsresize.dev/failed gone. (Keeping the set's 0 instead
# would "complete" with 0 pods running.)
#   retry_keeps_replicas.sh STSRESIZE_BINARY
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

step "request 2Gi with every copy Job failing: Failed, scaled back to 3"
set_fault failJobPods 77
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_failed web 240
state=$(annotation state)
failed_id=$(jq -r .id <<<"$state")
[[ $(jq -r .failure <<<"$state") == *"stsresize-backup failed"* ]] || fail "the failure does not name a backup Job: $(jq -r .failure <<<"$state")"
[[ $(jq -r .originalReplicas <<<"$state") == 3 ]] || fail "the failed operation did not start from 3 replicas: $state"
deadline=$((SECONDS + 120))
while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
  ((SECONDS > deadline)) && fail "left behind after the scale-back: $leftovers"
  sleep 0.5
done
k rollout status statefulset/web --timeout=120s >/dev/null || fail "web is not ready again after the scale-back"
[[ $(jp statefulset/web '{.spec.replicas} {.status.readyReplicas}') == "3 3" ]] || fail "web is not back at 3/3 Ready"
ok "operation $failed_id (originalReplicas 3) Failed, scaled back to 3/3 Ready, nothing left"

step "someone scales web to 0 (kubectl scale); the controller leaves it there"
k scale statefulset web --replicas=0 >/dev/null
wait_field statefulset/web '{.status.replicas}' 0 60
deadline=$((SECONDS + 60))
while [[ -n $(k get pods -l app=web -o name) ]]; do
  ((SECONDS > deadline)) && fail "web's pods did not go: $(k get pods -l app=web -o name)"
  sleep 0.5
done
sleep 3
[[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "the set was scaled again: $(jp statefulset/web '{.spec.replicas}')"
[[ $(annotation phase) == Failed && $(jq -r .id <<<"$(annotation state)") == "$failed_id" ]] ||
  fail "the failed operation changed: $(annotation state)"
e2e_claim_uids web 3 >"$work/uids-failed"
diff -q "$work/uids-before" "$work/uids-failed" >/dev/null || fail "the source claims were replaced"
e2e_assert_data_intact web 3
ok "0 replicas, no pod; still Failed; the same source claims, data intact"

step "advance --retry --as e2e-operator: a new operation that starts from 3 replicas"
clear_fault failJobPods
out=$(advance --retry) || fail "advance --retry exited $?: $out"
ok "$(head -n 1 <<<"$out")"
# Until completed: every state of the new operation seen ("phase originalReplicas"), in order.
deadline=$((SECONDS + 300))
seen=()
last_seen=''
new_id=''
while :; do
  state=$(annotation state)
  if [[ -n $state ]]; then
    id=$(jq -r .id <<<"$state")
    if [[ $id != "$failed_id" ]]; then
      [[ -z $new_id || $id == "$new_id" ]] || fail "a third operation $id after $new_id"
      new_id=$id
      s=$(jq -r '"\(.phase) \(.originalReplicas)"' <<<"$state")
      if [[ $s != "$last_seen" ]]; then
        seen+=("$s")
        last_seen=$s
      fi
    fi
  fi
  [[ -z $(annotation phase) && $(annotation last-operation) == *Completed* ]] && break
  ((SECONDS < deadline)) || fail "no completion in 300s (states seen: ${seen[*]})"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.2
done
((${#seen[@]} > 0)) || fail "the new operation's state was never seen"
for s in "${seen[@]}"; do
  [[ ${s#* } == 3 ]] || fail "operation $new_id recorded originalReplicas ${s#* } in ${s% *} (states seen: ${seen[*]})"
done
ok "operation $new_id completed; its state in ${#seen[@]} phases, each with originalReplicas 3: ${seen[*]% 3}"
e2e_assert_resized web 3 2Gi
[[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "spec.replicas is not 3"
[[ -z $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') ]] || fail "the stsresize.dev/failed label is still there"
ok "spec.replicas 3, label stsresize.dev/failed gone"

step "the journal: the new operation started from 3 replicas, as a retry"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r .consistent <<<"$rows") == true ]] || fail "the journal is not consistent"
[[ $(jq -r "[.operations[] | \"\\(.operation) \\(.finalPhase)\"] | join(\",\")" <<<"$rows") == "$failed_id Failed,$new_id Completed" ]] ||
  fail "want $failed_id Failed and $new_id Completed: $(jq -c .operations <<<"$rows")"
started=$(jq -r "[.rows[] | select(.operation == \"$new_id\" and .event == \"OperationStarted\") | .details] | .[0]" <<<"$rows")
[[ $started == "retry of $failed_id by e2e-operator: "*" (3 replicas)" ]] || fail "the new operation's start: $started"
ok "$new_id started \"$started\""
