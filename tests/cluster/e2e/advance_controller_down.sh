#!/usr/bin/env bash
# `stsresize advance --apply-locally` while the controller is down, and after it comes back, on
# the local control plane. 3 replicas of 1Gi on sim-fixed with random data, stsresize.dev/mode=
# manual, an explicit request for 2Gi, a controller electing on a Lease in the test namespace:
# - the controller takes the first transitions (plain `advance --approve`) up to the wait
#   ScalingDown -> BackingUp; then it is stopped with SIGTERM and its Lease is released;
# - `advance --approve --apply-locally --dry-run` writes nothing; `advance --approve
#   --apply-locally --journal local.db` takes the Lease, runs the backups in its own process
#   (progress lines), stops at the next wait BackingUp -> Recreating and releases the Lease; its
#   journal holds the approval with the operator's name;
# - the controller starts again with its own journal (which lacks those records) and takes the
#   Lease; `--apply-locally` is then refused with exit 5 and changes nothing;
# - plain `advance --approve` for each remaining transition; the operation completes: every
#   claim 2Gi, every file's sha256 as before, 3/3 Ready, nothing left behind;
# - both journals replay without inconsistency: the controller's to Completed, with a Resumed
#   that carries it from ScalingDown to BackingUp over the steps journaled elsewhere.
#   advance_controller_down.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" "$@"
}
local_advance() {
  advance --apply-locally --journal "$work/local.db" --leader-elect-namespace "$ns" \
    --poll-interval 1s --timeout 5m "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
start_controller() {
  e2e_start_controller "$1.log" --leader-elect --leader-elect-namespace "$ns" \
    --leader-elect-identity "$1"
}
wait_awaiting() {
  local transition=$1 deadline=$((SECONDS + $2))
  while [[ $(annotation awaiting-approval) != "$transition" ]]; do
    ((SECONDS > deadline)) && fail "no wait for $transition (awaiting: '$(annotation awaiting-approval)', phase: '$(annotation phase)')"
    sleep 0.3
  done
}
wait_lease_holder() {
  local holder=$1 deadline=$((SECONDS + $2))
  while [[ $(e2e_lease_holder stsresize-leader) != "$holder" ]]; do
    ((SECONDS > deadline)) && fail "the Lease is held by '$(e2e_lease_holder stsresize-leader)', not '$holder', after $2s"
    sleep 0.3
  done
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data; mode manual"
e2e_statefulset web sim-fixed 3
k annotate statefulset web stsresize.dev/mode=manual >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume"

step "the controller (leader-elect) takes the first transitions"
start_controller ctl-1
first_controller=$controller_pid
wait_lease_holder ctl-1 120
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
for transition in "UpdatingTemplate -> Planning" "Planning -> PreCopying" "PreCopying -> ScalingDown"; do
  wait_awaiting "$transition" 240
  out=$(advance --approve --as e2e-operator) || fail "advance --approve exited $? for $transition: $out"
  ok "approved $transition through the controller"
done
wait_awaiting "ScalingDown -> BackingUp" 240
ok "waiting for ScalingDown -> BackingUp"

step "the controller goes down (SIGTERM): its Lease is released"
e2e_stop_controller "$first_controller"
[[ $(e2e_lease_holder stsresize-leader) == "" ]] || fail "the Lease is still held by $(e2e_lease_holder stsresize-leader)"
k get lease stsresize-leader >/dev/null || fail "no Lease stsresize-leader in $ns"
ok "Lease stsresize-leader released"

step "--apply-locally --dry-run writes nothing"
rv=$(jp statefulset/web '{.metadata.resourceVersion}')
out=$(local_advance --approve --dry-run --as local-operator 2>&1) || fail "--dry-run exited $?: $out"
[[ $out == *"dry run: would approve ScalingDown -> BackingUp"* && $out == *"--apply-locally would then take the Lease $ns/stsresize-leader as advance-local:local-operator@"* ]] ||
  fail "--dry-run says: $out"
[[ $(jp statefulset/web '{.metadata.resourceVersion}') == "$rv" && -z $(annotation advance) ]] || fail "--dry-run wrote the StatefulSet"
[[ $(e2e_lease_holder stsresize-leader) == "" && ! -e $work/local.db ]] || fail "--dry-run took the Lease or created the journal"
ok "$(head -n 1 <<<"$out")"

step "--apply-locally runs the backups here and stops at the next wait"
set +e
local_advance --approve --as local-operator >"$work/local.out" 2>&1
code=$?
set -e
out=$(cat "$work/local.out")
((code == 0)) || fail "advance --apply-locally exited $code: $out"
[[ $out == *"took the Lease $ns/stsresize-leader as advance-local:local-operator@"* ]] || fail "no Lease taken: $out"
for i in 0 1 2; do
  grep -q "^backup of data-web-$i verified: " <<<"$out" || fail "no progress line for the backup of data-web-$i: $out"
done
[[ $out == *"phase ScalingDown -> BackingUp"* && $out == *"waits for approval of BackingUp -> Recreating"* && $out == *"released the Lease"* ]] ||
  fail "apply-locally says: $out"
[[ $(annotation phase) == BackingUp && $(annotation awaiting-approval) == "BackingUp -> Recreating" && -z $(annotation advance) ]] ||
  fail "annotations: phase '$(annotation phase)', awaiting '$(annotation awaiting-approval)', advance '$(annotation advance)'"
[[ $(e2e_lease_holder stsresize-leader) == "" ]] || fail "the Lease was not released: $(e2e_lease_holder stsresize-leader)"
local_rows=$("$stsresize" replay --journal "$work/local.db" -o json) || fail "replay of the local journal exited $?"
jq -e '[.rows[] | select(.event == "OperatorAction") | select(.details | test("^approve in ScalingDown by local-operator at "))] | length == 1' <<<"$local_rows" >/dev/null ||
  fail "the local journal has no approval by local-operator: $(jq -c '[.rows[] | [.event, .details]]' <<<"$local_rows")"
[[ $(jq -r '.operations[0].finalPhase' <<<"$local_rows") == BackingUp ]] || fail "the local journal does not end in BackingUp"
ok "BackingUp -> Recreating waits; the local journal holds the approval by local-operator"

step "the controller comes back: --apply-locally is refused while it holds the Lease"
start_controller ctl-2
wait_lease_holder ctl-2 120
set +e
out=$(local_advance --approve --as local-operator 2>&1)
code=$?
set -e
((code == 5)) || fail "--apply-locally with a controller running exited $code: $out"
[[ $out == *"a controller holds the Lease $ns/stsresize-leader: ctl-2"* && $out == *"stsresize advance $ns/web --approve"* ]] ||
  fail "the refusal does not say why and what to run: $out"
[[ -z $(annotation advance) && $(annotation phase) == BackingUp && $(annotation awaiting-approval) == "BackingUp -> Recreating" &&
  $(e2e_lease_holder stsresize-leader) == ctl-2 ]] ||
  fail "the refused --apply-locally changed something"
[[ $("$stsresize" replay --journal "$work/local.db" -o json | jq '.rows | length') == $(jq '.rows | length' <<<"$local_rows") ]] ||
  fail "the refused --apply-locally journaled something"
ok "exit 5: ${out:0:100}..."

step "plain approvals through the controller to the end"
for transition in "BackingUp -> Recreating" "Recreating -> Restoring" "Restoring -> ScalingUp" \
  "ScalingUp -> CleaningUp" "CleaningUp -> Completed"; do
  wait_awaiting "$transition" 240
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/ctl-2.log")"
  out=$(advance --approve --as e2e-operator) || fail "advance --approve exited $? for $transition: $out"
  ok "approved $transition"
done
e2e_wait_completed web 240
e2e_assert_resized web 3 2Gi
e2e_stop_controller "$controller_pid"

step "both journals replay without inconsistency"
e2e_replay "$work/journal.db"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay -o json exited $?"
[[ $(jq -r '.operations[0].finalPhase' <<<"$rows") == Completed ]] || fail "the controller's journal does not replay to Completed"
jq -e '[.rows[] | select(.event == "Resumed" and .phaseBefore == "ScalingDown" and .phaseAfter == "BackingUp")] | length == 1' <<<"$rows" >/dev/null ||
  fail "no Resumed from ScalingDown to BackingUp in the controller's journal: $(jq -c '[.rows[] | [.event, .phaseBefore, .phaseAfter]]' <<<"$rows")"
e2e_replay "$work/local.db"
ok "controller's journal: Completed, Resumed over ScalingDown -> BackingUp; local journal: consistent"
