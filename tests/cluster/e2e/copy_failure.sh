#!/usr/bin/env bash
# A copy Job that fails (backoffLimit exhausted: the simulator's failJobPods fault fails every
# attempt) ends the operation in Failed, and the data survives, on the local control plane.
# 3 replicas of 1Gi on sim-fixed with random data, an explicit request for 2Gi, then:
#   backup   the backup Jobs fail (fault on from the start): Failed with the label
#            stsresize.dev/failed, a Warning naming the Job and BackoffLimitExceeded, scaled
#            back to 3/3 Ready, every source claim the same object (uid), 1Gi, every file's
#            sha256 as before; no backup claim or Job left (scale_back.cc: with the sources
#            intact a backup is never the only copy); the journal replays to Failed.
#   restore  every backup verified, then the restore Jobs fail (fault switched on in
#            Recreating, after the last backup Job completed): Failed with the label and a
#            Warning naming the restore Job and where the data is (a selector that finds the
#            backup claims); NOT scaled back (the sources were replaced by empty claims: 0
#            replicas stay 0); every backup claim kept, ours, with every file's sha256 as
#            before; the journal replays to Failed. Restore Jobs exist only on the two-copy path
#            (the rebind path copies nothing in Restoring): this case runs the controller with
#            --no-rebind; the backup case runs the default, rebind path.
#   copy_failure.sh STSRESIZE_BINARY backup|restore
failing=${2:?backup or restore}
[[ $failing == backup || $failing == restore ]] || {
  echo "usage: $0 STSRESIZE_BINARY backup|restore" >&2
  exit 2
}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
on_exit "clear_fault failJobPods"
# An exit code no copy step uses (rsync's are below 36, the mismatch is 3).
fault_code=77

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
e2e_claim_uids web 3 >"$work/uids-before"
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host"

step "start the controller; request 2Gi with every $failing Job failing"
[[ $failing == backup ]] && set_fault failJobPods "$fault_code"
if [[ $failing == restore ]]; then
  e2e_start_controller controller.log --no-rebind
else
  e2e_start_controller controller.log
fi
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
if [[ $failing == restore ]]; then
  # No Job runs in Recreating: every backup Job has completed and none of the restore Jobs has
  # started, and nodesim reads the fault before each container starts.
  e2e_wait_phase web Recreating 150
  set_fault failJobPods "$fault_code"
  ok "fault failJobPods=$fault_code on in Recreating"
fi
t0=$SECONDS
e2e_wait_failed web 170
ok "Failed after $((SECONDS - t0))s more; phases seen: ${phases[*]}"

step "the failure is recorded: state annotation, label, Warning event"
state=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/state}')
[[ $(jq -r .phase <<<"$state") == Failed ]] || fail "the state annotation is not Failed: $state"
failure=$(jq -r .failure <<<"$state")
[[ $failure == *"copy Job data-web-"*"-stsresize-$failing failed"* ]] ||
  fail "the recorded failure does not name the $failing Job: $failure"
ok "state annotation: Failed, failure \"$failure\""
[[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] ||
  fail "no stsresize.dev/failed=true label"
ok "label stsresize.dev/failed=true"
warnings=$(e2e_warnings web)
grep -q "^ResizeFailed: .*copy Job data-web-[0-9]-stsresize-$failing failed (BackoffLimitExceeded)" <<<"$warnings" ||
  fail "no Warning ResizeFailed naming the failed $failing Job: $warnings"
ok "Warning: $(grep -m1 "^ResizeFailed: .*BackoffLimitExceeded" <<<"$warnings")"

if [[ $failing == backup ]]; then
  step "scaled back: the same source claims, 1Gi, data intact, 3/3 Ready"
  grep -q "^ResizeFailed: scaled back to 3 replicas" <<<"$warnings" ||
    fail "no Warning saying it scaled back: $warnings"
  e2e_claim_uids web 3 >"$work/uids-after"
  diff -q "$work/uids-before" "$work/uids-after" >/dev/null ||
    fail "the source claims were replaced: $(diff "$work/uids-before" "$work/uids-after")"
  for i in 0 1 2; do
    [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage}') == 1Gi ]] || fail "pvc/data-web-$i is not 1Gi"
    [[ $(jp "pvc/data-web-$i" '{.status.phase}') == Bound ]] || fail "pvc/data-web-$i is not Bound"
  done
  e2e_assert_data_intact web 3
  ok "every source claim the same uid, 1Gi and Bound; every file's sha256 unchanged"
  [[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "spec.replicas is not 3"
  k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready again"
  [[ $(jp statefulset/web '{.status.readyReplicas}') == 3 ]] || fail "readyReplicas is not 3"
  ok "3/3 Ready"
  leftovers=$(k get pvc,jobs -o name | grep stsresize || true)
  [[ -z $leftovers ]] || fail "left behind after scale-back: $leftovers"
  ok "no backup claim or copy Job left (the sources are intact)"
  if grep -q "backup claim" <<<"$warnings"; then fail "the Warning points at backups that are gone: $warnings"; fi
else
  step "not scaled back onto the replaced claims; every backup kept with the data"
  [[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "spec.replicas is not 0"
  [[ -z $(k get pods -l app=web -o name) ]] || fail "pods of web run on the replaced claims"
  ok "spec.replicas stays 0, no pod of web"
  for i in 0 1 2; do
    claim=data-web-$i backup=data-web-$i-stsresize-bak
    [[ $(jp "pvc/$claim" '{.metadata.uid}') != "$(awk -v c="$claim" '$1 == c {print $2}' "$work/uids-before")" ]] ||
      fail "pvc/$claim is still the source claim: the test did not get past Recreating"
    [[ -z $(jp "pvc/$backup" '{.metadata.deletionTimestamp}') ]] || fail "pvc/$backup is being deleted"
    [[ $(jp "pvc/$backup" '{.metadata.annotations.stsresize\.dev/source-claim}') == "$claim" ]] ||
      fail "pvc/$backup is not the backup of $claim"
    [[ $(jp "pvc/$backup" '{.status.phase}') == Bound ]] || fail "pvc/$backup is not Bound"
    e2e_checksums "$backup" >"$work/backup-web-$i"
    diff -q "$work/before-web-$i" "$work/backup-web-$i" >/dev/null ||
      fail "the data in pvc/$backup differs from data-web-$i's before the resize"
  done
  ok "the 3 backup claims exist, Bound, each with every file's sha256 as before"
  failed_jobs=0
  for job in $(k get jobs -l stsresize.dev/purpose=restore -o name); do
    [[ $(jp "$job" '{.status.conditions[?(@.type=="Failed")].status}') == True ]] || continue
    [[ $(jp "$job" '{.status.failed}') == $(($(jp "$job" '{.spec.backoffLimit}') + 1)) ]] ||
      fail "$job failed without exhausting its backoffLimit"
    failed_jobs=$((failed_jobs + 1))
  done
  ((failed_jobs > 0)) || fail "no restore Job failed"
  ok "$failed_jobs restore Job(s) failed after backoffLimit + 1 attempts; kept for inspection"
  grep -q "^ResizeFailed: Restoring -> Failed: .*nothing was scaled back: .*in its backup claim (kubectl -n $ns get pvc -l stsresize.dev/operation=.*,stsresize.dev/purpose=backup)" <<<"$warnings" ||
    fail "the Warning does not say the restore failed and where the data is: $warnings"
  selector=$(grep -m1 -o 'stsresize.dev/operation=[^,]*,stsresize.dev/purpose=backup' <<<"$warnings")
  [[ $(k get pvc -l "$selector" -o name | wc -l) == 3 ]] || fail "the Warning's selector $selector does not find the 3 backup claims"
  ok "the Warning says Restoring -> Failed, nothing scaled back, and its selector finds the 3 backup claims"
fi

step "a failed operation stays failed; the journal replays to Failed"
sleep 3
[[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == Failed ]] ||
  fail "the phase moved on from Failed"
e2e_stop_controller "$controller_pid"
e2e_replay "$work/journal.db"
grep -q "Failed" <<<"$replay" || fail "the journal does not replay to Failed: $replay"
# Columns: TIME OPERATION SEQ PHASE EVENT DETAILS (the phase polls can miss a short ScalingBack).
scaled_back=$(awk '$4 == "ScalingBack" && $5 == "PhaseChanged"' <<<"$replay")
if [[ $failing == backup && -z $scaled_back ]]; then fail "the journal has no ScalingBack: $replay"; fi
if [[ $failing == restore && -n $scaled_back ]]; then fail "the journal has a ScalingBack: $replay"; fi
ok "controller stopped cleanly on SIGTERM; journal consistent (exit 0), ends Failed, $([[ $failing == backup ]] || echo "no ")ScalingBack in it"
note "$(tail -n 1 <<<"$replay")"
