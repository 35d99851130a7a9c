#!/usr/bin/env bash
# `stsresize advance --skip-step` on the local control plane. 3 replicas of 1Gi on sim-fixed
# with random data, stsresize.dev/mode=step, an explicit request for 2Gi:
#   1. while BackingUp -> Recreating waits, --skip-step is refused (exit 5, why and --abort),
#      and nothing on the StatefulSet changes;
#   2. a ValidatingAdmissionPolicy denies deleting the claims labelled stsresize.dev/purpose=
#      backup; the transition is approved and the resize runs into CleaningUp, where it stays
#      (the controller deletes the copy Jobs it can, and is denied each backup claim);
#   3. --skip-step --dry-run writes nothing; --skip-step ends it Completed: every claim 2Gi and
#      Bound, every file's sha256 as before, 3/3 Ready; the 3 backup claims still there with
#      their stsresize.dev/operation label and the data; an Event StepSkipped naming them;
#      describe lists them under "Kept by operation"; the journal replays to Completed with
#      the skip by e2e-operator and CleaningUp -> Completed on Skip;
#   4. the policy removed, the command the Event gives deletes what was kept.
# Backup claims are still there in CleaningUp only on the two-copy path (the rebind path deletes
# each in Recreating, once its volume is kept): the controller runs with --no-rebind.
#   skip_step.sh STSRESIZE_BINARY
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

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
k annotate statefulset web stsresize.dev/mode=step >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume; stsresize.dev/mode=step"

step "start the controller; request 2Gi; wait for BackingUp -> Recreating"
e2e_start_controller controller.log --no-rebind
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
deadline=$((SECONDS + 300))
while [[ $(annotation awaiting-approval) != "BackingUp -> Recreating" ]]; do
  ((SECONDS > deadline)) && fail "no wait for BackingUp -> Recreating in 300s (phase: '$(annotation phase)')"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.3
done
operation=$(annotation state | jq -r .id)
ok "operation $operation waits for BackingUp -> Recreating"

step "--skip-step in BackingUp: refused, nothing changes"
before=$(k get statefulset web -o jsonpath='{.metadata.annotations}')
set +e
out=$(advance --skip-step 2>&1)
code=$?
set -e
((code == 5)) || fail "advance --skip-step in BackingUp exited $code: $out"
[[ $out == *"without a verified backup"* && $out == *"stsresize advance $ns/web --abort"* ]] ||
  fail "the refusal does not say why and what to run instead: $out"
ok "exit 5: ${out:0:150}..."
sleep 2
[[ $(k get statefulset web -o jsonpath='{.metadata.annotations}') == "$before" ]] ||
  fail "the StatefulSet's annotations changed after a refused skip"
[[ $(annotation phase) == BackingUp && -z $(annotation advance) ]] || fail "phase $(annotation phase), advance '$(annotation advance)'"
ok "nothing written; still in BackingUp"

step "deny deleting the backup claims, approve, and get stuck in CleaningUp"
policy="e2e-deny-backup-delete-$ns"
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
    objectSelector:
      matchExpressions:
        - {key: stsresize.dev/purpose, operator: In, values: [backup]}
  validations:
    - expression: "false"
      message: "e2e: the backup claims of web may not be deleted"
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
# In effect once the API server has loaded it: a server-side dry run of a delete says when.
deadline=$((SECONDS + 60))
until ! k delete pvc data-web-0-stsresize-bak --dry-run=server >/dev/null 2>&1; do
  ((SECONDS > deadline)) && fail "the ValidatingAdmissionPolicy does not deny deleting data-web-0-stsresize-bak"
  sleep 0.5
done
k delete pvc data-web-0 --dry-run=server >/dev/null || fail "the policy denies deleting a source claim too"
ok "ValidatingAdmissionPolicy $policy denies deleting the backup claims only"
out=$(advance --approve) || fail "advance --approve exited $?: $out"
e2e_wait_phase web CleaningUp 300
deadline=$((SECONDS + 120))
until grep -q "may not be deleted" "$work/controller.log" || e2e_warnings web | grep -q "may not be deleted"; do
  ((SECONDS > deadline)) && fail "the controller never tried to delete a backup claim: $(tail -n 20 "$work/controller.log")"
  sleep 0.5
done
sleep 2
[[ $(annotation phase) == CleaningUp ]] || fail "not in CleaningUp: $(annotation phase)"
[[ $(k get pvc -l "stsresize.dev/operation=$operation,stsresize.dev/purpose=backup" -o name | wc -l) == 3 ]] ||
  fail "not 3 backup claims in CleaningUp: $(k get pvc -o name)"
ok "stuck in CleaningUp: the controller is denied the backup claims"

step "--skip-step in CleaningUp"
out=$(advance --skip-step --dry-run) || fail "advance --skip-step --dry-run exited $?: $out"
[[ $out == *"dry run: would skip CleaningUp of operation $operation on $ns/web as e2e-operator"* && $out == *data-web-0-stsresize-bak* ]] ||
  fail "dry run says: $out"
[[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
ok "--dry-run: $(head -n 1 <<<"$out"); nothing written"
out=$(advance --skip-step) || fail "advance --skip-step exited $?: $out"
ok "$(head -n 1 <<<"$out")"
e2e_wait_completed web 240
ok "Completed; phases seen: ${phases[*]}"
[[ -z $(annotation advance) ]] || fail "the advance annotation is left behind"

step "resized, data intact, the backup claims kept and findable"
e2e_assert_resized web 3 2Gi 'stsresize-(bak|backup|restore)$'
kept=$(k get pvc -l "stsresize.dev/operation=$operation" -o name | sort)
[[ $kept == "$(printf 'persistentvolumeclaim/data-web-%s-stsresize-bak\n' 0 1 2)" ]] ||
  fail "the backup claims labelled with $operation are not the 3 expected: $kept"
for i in 0 1 2; do
  e2e_checksums "data-web-$i-stsresize-bak" >"$work/backup-$i"
  diff -q "$work/before-web-$i" "$work/backup-$i" >/dev/null || fail "data-web-$i-stsresize-bak does not hold the data any more"
done
ok "3 backup claims labelled stsresize.dev/operation=$operation, each with every file of its claim"
messages=$(k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web \
  -o jsonpath='{range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}')
skipped=$(grep -m1 '^Normal StepSkipped: ' <<<"$messages" || true)
[[ -n $skipped ]] || fail "no Normal StepSkipped event: $messages"
for i in 0 1 2; do
  [[ $skipped == *"data-web-$i-stsresize-bak"* ]] || fail "StepSkipped does not name data-web-$i-stsresize-bak: $skipped"
done
[[ $skipped == *"CleaningUp skipped by e2e-operator"* && $skipped == *"delete pvc,job -l stsresize.dev/operation=$operation"* ]] ||
  fail "StepSkipped does not say who and how to delete: $skipped"
ok "Event: ${skipped:0:200}..."
described=$("$stsresize" describe "$ns/web" --kubeconfig "$KUBECONFIG" --journal "$work/journal.db") ||
  fail "describe exited $?: $described"
[[ $described == *"Kept by operation $operation (its cleanup was skipped): 3 claims"* && $described == *data-web-2-stsresize-bak* ]] ||
  fail "describe does not show what was kept: $described"
ok "describe: $(grep -m1 'Kept by operation' <<<"$described")"

step "the journal: the skip by e2e-operator, CleaningUp -> Completed on Skip"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Completed ]] || fail "the journal does not replay to Completed"
skips=$(jq -r '[.rows[] | select(.event == "OperatorAction") | select(.details | test("^skip in CleaningUp by e2e-operator at [0-9T:.-]+Z$"))] | length' <<<"$rows")
((skips == 1)) || fail "$skips accepted skips by e2e-operator in the journal: $(jq -c '[.rows[] | select(.event == "OperatorAction") | .details]' <<<"$rows")"
refused=$(jq -r '[.rows[] | select(.event == "OperatorAction") | select(.details | test("refused"))] | length' <<<"$rows")
((refused == 0)) || fail "a refused OperatorAction in the journal (the CLI refused in BackingUp: nothing should reach it)"
[[ $(jq -r '[.rows[] | select(.event == "PhaseChanged") | .details] | last' <<<"$rows") == *"CleaningUp"*"Completed"*"(Skip)"* ]] ||
  fail "the journal does not end CleaningUp -> Completed on Skip: $(jq -c '[.rows[] | select(.event == "PhaseChanged") | .details]' <<<"$rows")"
stepped=$("$stsresize" replay --journal "$work/journal.db" --step) || fail "replay --step exited $?"
grep -q "skip in CleaningUp by e2e-operator" <<<"$stepped" || fail "replay --step does not show the skip"
ok "journal: OperatorAction skip by e2e-operator, CleaningUp -> Completed (Skip)"

step "what was kept can be deleted with the command the Event gives"
kubectl delete validatingadmissionpolicybinding "$policy" >/dev/null
kubectl delete validatingadmissionpolicy "$policy" >/dev/null
deadline=$((SECONDS + 60))
until k delete pvc data-web-0-stsresize-bak --dry-run=server >/dev/null 2>&1; do
  ((SECONDS > deadline)) && fail "deleting a backup claim is still denied after the policy was removed"
  sleep 0.5
done
k delete pvc,job -l "stsresize.dev/operation=$operation" --wait=false >/dev/null
deadline=$((SECONDS + 120))
while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
  ((SECONDS > deadline)) && fail "still there after the delete: $leftovers"
  sleep 0.5
done
ok "nothing of $operation left"
