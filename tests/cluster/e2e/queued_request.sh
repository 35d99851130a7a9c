#!/usr/bin/env bash
# A request written while an operation runs waits for it, says so once, and then runs.
# 2 replicas of 1Gi on sim-fixed with random data, stsresize.dev/mode=step, a request for 2Gi:
# while the operation waits at BackingUp -> Recreating, a second request asks for 3Gi. It gets
# `resize-status: queued: operation <first> is running; ...` and one Normal Event
# ResizeRequestQueued naming the operation and its phase; for 3 s nothing moves (same phase and wait, same
# source claims, the StatefulSet not written again). `advance --approve --as e2e-operator`: the
# first operation completes (ResizeCompleted), the queued request starts a second one (2Gi ->
# 3Gi), which waits at the same step, is approved and completes: every claim 3Gi and Bound, every
# file's sha256 as before, 2/2 Ready, templates 3Gi, request and status cleared, nothing left;
# the last operation is the second; over both operations the request was reported queued by one
# Event only; the journal replays both operations to Completed.
#   queued_request.sh STSRESIZE_BINARY
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
operation() {
  annotation state | jq -r '.id // empty' 2>/dev/null || true
}
# events REASON: "type count message" of each Event REASON on the StatefulSet web.
events() {
  k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=web,reason=$1" \
    -o jsonpath='{range .items[*]}{.type} {.count} {.message}{"\n"}{end}'
}
# wait_held OPERATION: until OPERATION waits for approval of BackingUp -> Recreating.
wait_held() {
  local deadline=$((SECONDS + 180))
  until [[ $(operation) == "$1" && $(annotation awaiting-approval) == "BackingUp -> Recreating" ]]; do
    ((SECONDS < deadline)) || fail "$1 does not wait at BackingUp -> Recreating (operation '$(operation)', phase '$(annotation phase)', awaiting '$(annotation awaiting-approval)')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}

step "StatefulSet web: 2 replicas, claims of 1Gi on sim-fixed, random data; stsresize.dev/mode=step"
e2e_statefulset web sim-fixed 2
e2e_claim_uids web 2 >"$work/uids-before"
k annotate statefulset web stsresize.dev/mode=step >/dev/null

step "request 2Gi: the operation waits at BackingUp -> Recreating"
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
deadline=$((SECONDS + 60))
first=$(operation)
until [[ -n $first ]]; do
  ((SECONDS < deadline)) || fail "no operation started: $(tail -n 20 "$work/controller.log")"
  sleep 0.3
  first=$(operation)
done
wait_held "$first"
ok "operation $first waits at BackingUp -> Recreating"

step "a second request, 3Gi, while it waits: queued, said once"
k annotate --overwrite statefulset web 'stsresize.dev/resize={"data":{"storage":"3Gi"}}' >/dev/null
deadline=$((SECONDS + 30))
until [[ $(annotation resize-status) == queued:* ]]; do
  ((SECONDS < deadline)) || fail "no queued status in 30 s: '$(annotation resize-status)'"
  sleep 0.3
done
queued=$(annotation resize-status)
[[ $queued == "queued: operation $first is running; this request is validated and started when it ends" ]] ||
  fail "the status does not name the running operation: $queued"
deadline=$((SECONDS + 15))
until [[ -n $(events ResizeRequestQueued) ]]; do
  ((SECONDS < deadline)) || fail "no Event ResizeRequestQueued in 15 s"
  sleep 0.3
done
said=$(events ResizeRequestQueued)
[[ $(wc -l <<<"$said") == 1 && $said == "Normal 1 "*"operation $first is running (BackingUp)"* ]] ||
  fail "want one Normal ResizeRequestQueued, given once, naming $first in BackingUp: $said"
rv=$(jp statefulset/web '{.metadata.resourceVersion}')
sleep 3
[[ $(annotation phase) == BackingUp && $(annotation awaiting-approval) == "BackingUp -> Recreating" ]] ||
  fail "the queued request moved the operation: phase $(annotation phase), awaiting '$(annotation awaiting-approval)'"
[[ $(operation) == "$first" && $(annotation resize) == '{"data":{"storage":"3Gi"}}' ]] ||
  fail "operation $(operation), request $(annotation resize)"
[[ $(jp statefulset/web '{.metadata.resourceVersion}') == "$rv" ]] || fail "the StatefulSet was written again while nothing changed"
[[ $(events ResizeRequestQueued) == "$said" ]] || fail "ResizeRequestQueued given again: $(events ResizeRequestQueued)"
e2e_claim_uids web 2 >"$work/uids-waiting"
diff -q "$work/uids-before" "$work/uids-waiting" >/dev/null || fail "a source claim changed: $(cat "$work/uids-waiting")"
ok "${queued:0:90}...; one Event: ${said:0:80}..."

step "approve: the first operation completes, the queued request starts a second"
out=$(advance --approve --as e2e-operator) || fail "advance --approve exited $?: $out"
deadline=$((SECONDS + 180))
# The StatefulSet is briefly absent while an operation re-creates it: read the id once per turn.
second=$(operation)
until [[ -n $second && $second != "$first" ]]; do
  ((SECONDS < deadline)) || fail "no second operation after 180 s (operation '$second', phase '$(annotation phase)', last $(annotation last-operation))"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.3
  second=$(operation)
done
grep -qF "operation $first: CleaningUp -> Completed" <<<"$(events ResizeCompleted)" ||
  fail "no ResizeCompleted for $first: $(events ResizeCompleted)"
grep -qF "operation $second: requested data 2Gi -> 3Gi" <<<"$(events ResizeStarted)" ||
  fail "no ResizeStarted for $second asking 2Gi -> 3Gi: $(events ResizeStarted)"
wait_held "$second"
ok "$first completed; $second started (2Gi -> 3Gi) and waits at BackingUp -> Recreating"

step "approve the second: it completes with the data"
out=$(advance --approve --as e2e-operator) || fail "advance --approve exited $?: $out"
e2e_wait_completed web 180
e2e_assert_resized web 2 3Gi
[[ -z $(annotation resize-status) ]] || fail "resize-status left: $(annotation resize-status)"
[[ $(annotation last-operation | jq -r .id) == "$second" ]] || fail "last-operation: $(annotation last-operation)"
said=$(events ResizeRequestQueued)
[[ $(wc -l <<<"$said") == 1 && $said == "Normal 1 "* ]] ||
  fail "the queued request was reported $(wc -l <<<"$said") times: $said"
e2e_stop_controller "$controller_pid"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
[[ $(jq -r '[.operations[] | "\(.operation) \(.finalPhase)"] | join(", ")' <<<"$rows") == "$first Completed, $second Completed" ]] ||
  fail "the journal replays to: $(jq -c '[.operations[] | {operation, finalPhase}]' <<<"$rows")"
ok "journal: $first and $second Completed; one ResizeRequestQueued in all"
