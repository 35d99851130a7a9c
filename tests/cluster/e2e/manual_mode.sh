#!/usr/bin/env bash
# stsresize.dev/mode=manual on the local control plane: every transition of a copy resize after
# its start waits for `stsresize advance --approve`, and nothing moves until it is given.
# 3 replicas of 1Gi on sim-fixed with random data, an explicit request for 2Gi, then for each
# transition: stsresize.dev/awaiting-approval names it, an Event AwaitingApproval says the
# command to run, the phase stays put while nobody approves (and, waiting to leave BackingUp,
# every source claim is still the same object), `advance --dry-run` writes nothing, `advance
# --approve --as e2e-operator` lets it go. At the end: every claim 2Gi, every file's sha256 as
# before, 3/3 Ready, nothing left behind; the journal replays to Completed with one accepted
# OperatorAction by e2e-operator per approval; `advance` with nothing waiting exits 5 and says
# why.
#   manual_mode.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
e2e_claim_uids web 3 >"$work/uids-before"
k annotate statefulset web stsresize.dev/mode=manual >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume; stsresize.dev/mode=manual"

step "start the controller; request 2Gi"
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

step "approve every transition, one at a time"
expected=("UpdatingTemplate -> Planning" "Planning -> PreCopying" "PreCopying -> ScalingDown"
  "ScalingDown -> BackingUp"
  "BackingUp -> Recreating" "Recreating -> Restoring" "Restoring -> ScalingUp"
  "ScalingUp -> CleaningUp" "CleaningUp -> Completed")
approved=()
deadline=$((SECONDS + 400))
for transition in "${expected[@]}"; do
  while [[ $(annotation awaiting-approval) != "$transition" ]]; do
    ((SECONDS > deadline)) && fail "no wait for $transition (awaiting: '$(annotation awaiting-approval)', phase: '$(annotation phase)'; approved: ${approved[*]}); $(tail -n 20 "$work/controller.log")"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
  from=${transition%% -> *}
  # Nothing moves without an approval: the phase is still the one waiting a while later.
  sleep 2
  [[ $(annotation phase) == "$from" && $(annotation awaiting-approval) == "$transition" ]] ||
    fail "moved on without approval: phase $(annotation phase), awaiting $(annotation awaiting-approval)"
  if [[ $transition == "BackingUp -> Recreating" ]]; then
    e2e_claim_uids web 3 >"$work/uids-waiting"
    diff -q "$work/uids-before" "$work/uids-waiting" >/dev/null ||
      fail "a source claim changed before the approval: $(cat "$work/uids-waiting")"
  fi
  events=$(k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web,reason=AwaitingApproval \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  grep -qF "stsresize advance $ns/web --approve" <<<"$(grep -F -- "$transition" <<<"$events")" ||
    fail "no AwaitingApproval event naming $transition and the command: $events"
  if [[ $transition == "Planning -> PreCopying" ]]; then
    out=$(advance --approve --dry-run --as e2e-operator) || fail "advance --dry-run exited $?: $out"
    [[ $out == *"dry run: would approve $transition"* ]] || fail "dry run says: $out"
    [[ -z $(annotation advance) ]] || fail "--dry-run wrote the advance annotation"
    ok "--dry-run: $(head -n 1 <<<"$out"); nothing written"
  fi
  out=$(advance --approve --as e2e-operator) || fail "advance --approve exited $? for $transition: $out"
  approved+=("$transition")
  ok "approved $transition"
done
e2e_wait_completed web 240
ok "completed after ${#approved[@]} approvals"

step "check sizes, data, replicas, leftovers, the journal and a refusal"
e2e_assert_resized web 3 2Gi
[[ -z $(annotation advance) && -z $(annotation awaiting-approval) ]] ||
  fail "advance or awaiting-approval annotation left behind"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Completed ]] || fail "the journal does not replay to Completed"
accepted=$(jq -r '[.rows[] | select(.event == "OperatorAction") | select(.details | test("^approve in [A-Za-z]+ by e2e-operator at [0-9T:.-]+Z$"))] | length' <<<"$rows")
((accepted == ${#approved[@]})) || fail "$accepted accepted OperatorAction rows by e2e-operator, expected ${#approved[@]}: $(jq -c '[.rows[] | select(.event == "OperatorAction") | .details]' <<<"$rows")"
ok "journal: Completed, $accepted approvals by e2e-operator"
set +e
out=$(advance --approve 2>&1)
code=$?
set -e
((code == 5)) || fail "advance with nothing waiting exited $code: $out"
[[ $out == *"has no resize in progress"* ]] || fail "the refusal does not say why: $out"
ok "advance with nothing waiting: exit 5, \"${out:0:90}...\""
