#!/usr/bin/env bash
# The journal of a real resize, replayed: `stsresize run` resizes a 2-replica StatefulSet on the
# copy path (explicit request, sim-fixed) on the local control plane; the phases seen on the
# StatefulSet's annotation while polling and the progress Events (ResizeStarted, whose message
# ends with the first transition, PhaseChanged, ResizeCompleted) are recorded. Then:
#   - `replay -o json` of the journal lists exactly the phases of the copy path in order; the
#     polled phases are a subsequence of them; the journal's phase changes are exactly the
#     Events' transitions, in the same order;
#   - `journal export` then `journal import` into a fresh journal file: replay of the import and
#     `replay --file` of the export print exactly what replay of the original prints (table,
#     JSON, --step, --step JSON);
#   - a record changed with sqlite3 is reported with exit 1, naming its sequence; an export
#     edited by hand is a checksum mismatch (exit 1), and --ignore-checksum names the record.
#   replay_real_journal.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

step "StatefulSet web: 2 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 2
ok "$(wc -l <"$work/before-web-0") files per volume"

step "resize to 2Gi with the controller, polling the phase annotation"
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_completed web 300
polled=("${phases[@]}")
ok "completed; phases polled: ${polled[*]}"
e2e_assert_data_intact web 2

journal=$work/journal.db
step "replay -o json lists exactly the phases of the copy path, in order"
"$stsresize" replay --journal "$journal" --namespace "$ns" --statefulset web -o json >"$work/replay.json" ||
  fail "replay exited $?: $(cat "$work/replay.json")"
[[ $(jq '.operations | length' "$work/replay.json") == 1 ]] || fail "not one operation: $(cat "$work/replay.json")"
[[ $(jq -r '.consistent' "$work/replay.json") == true ]] || fail "the journal is not consistent"
op=$(jq -r '.operations[0].operation' "$work/replay.json")
e2e_journal_transitions <"$work/replay.json" >"$work/journal-transitions"
mapfile -t journal_phases < <(awk -F' -> ' 'NR == 1 { print $1 } { print $2 }' "$work/journal-transitions")
expected=(Pending UpdatingTemplate Planning PreCopying ScalingDown BackingUp Recreating Restoring ScalingUp CleaningUp Completed)
[[ "${journal_phases[*]}" == "${expected[*]}" ]] ||
  fail "journal phases: ${journal_phases[*]}; expected: ${expected[*]}"
ok "operation $op: ${journal_phases[*]}"

# Every polled phase appears in the journal's list, in the same order.
i=0
for p in "${polled[@]}"; do
  while ((i < ${#journal_phases[@]})) && [[ ${journal_phases[i]} != "$p" ]]; do i=$((i + 1)); done
  ((i < ${#journal_phases[@]})) || fail "polled phases (${polled[*]}) are not a subsequence of the journal's"
  i=$((i + 1))
done
ok "the ${#polled[@]} polled phases are a subsequence of the journal's"

step "the journal's phase changes are the Events' transitions, in the same order"
# ResizeStarted announces the start's own transition ("...; Pending -> UpdatingTemplate").
# Event names end in the recorder's clock in hex ("web.<nanos>"): ordered by (length, text).
# The last Event is recorded right after the journal commit that ends the operation: poll.
deadline=$((SECONDS + 60))
while :; do
  k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=web" -o json |
    jq -r --arg prefix "operation $op: " '.items
      | map(select((.reason == "ResizeStarted" or .reason == "PhaseChanged"
                    or .reason == "ResizeCompleted") and (.message | startswith($prefix))))
      | sort_by(.metadata.name | split(".") | last | [length, .])
      | .[] | if .reason == "ResizeStarted" then .message | split("; ") | last
              else .message | ltrimstr($prefix) end' >"$work/event-transitions"
  diff -q "$work/journal-transitions" "$work/event-transitions" >/dev/null && break
  ((SECONDS > deadline)) &&
    fail "journal and Events differ: $(diff "$work/journal-transitions" "$work/event-transitions")"
  sleep 1
done
ok "$(wc -l <"$work/journal-transitions") transitions, the same in the journal and in the Events"
e2e_stop_controller "$controller_pid"

step "export, import into a fresh journal, replay: identical output"
"$stsresize" journal export --journal "$journal" --operation "$op" -o "$work/export.json" >/dev/null ||
  fail "export exited $?"
"$stsresize" journal import --journal "$work/fresh.db" "$work/export.json" >/dev/null ||
  fail "import exited $?"
for flags in "" "--step" "-o json" "--step -o json"; do
  # shellcheck disable=SC2086 # word splitting of $flags on purpose
  {
    "$stsresize" replay --journal "$journal" --operation "$op" $flags >"$work/a.out" || fail "replay ($flags) of the original exited $?"
    "$stsresize" replay --journal "$work/fresh.db" $flags >"$work/b.out" || fail "replay ($flags) of the import exited $?"
    "$stsresize" replay --file "$work/export.json" $flags >"$work/c.out" || fail "replay --file ($flags) exited $?"
  }
  cmp -s "$work/a.out" "$work/b.out" || fail "replay $flags differs after import: $(diff "$work/a.out" "$work/b.out" | head)"
  cmp -s "$work/a.out" "$work/c.out" || fail "replay --file $flags differs: $(diff "$work/a.out" "$work/c.out" | head)"
done
ok "table, JSON, --step and --step JSON identical for the original, the import and the export"

step "a record changed with sqlite3 is named; so is one in an export edited by hand"
seq=$(jq -r '.rows[] | select(.event == "PhaseChanged" and .phaseAfter == "Recreating") | .sequence' "$work/replay.json")
sqlite3 "$journal" ".backup '$work/tampered.db'"
sqlite3 "$work/tampered.db" \
  "UPDATE events SET data = json_set(data, '\$.to', 'Restoring') WHERE operation_id = '$op' AND sequence = $seq"
set +e
out=$("$stsresize" replay --journal "$work/tampered.db" 2>&1 >/dev/null)
code=$?
set -e
((code == 1)) || fail "replay of the tampered journal exited $code: $out"
[[ $out == *"operation $op, sequence $seq, event PhaseChanged"* && $out == *"BackingUp -> Restoring"* ]] ||
  fail "the message does not name sequence $seq: $out"
ok "exit 1: ${out#stsresize replay: }"

jq --argjson seq "$seq" '(.records[] | select(.sequence == $seq) | .data.to) = "Restoring"' \
  "$work/export.json" >"$work/edited.json"
set +e
out=$("$stsresize" replay --file "$work/edited.json" 2>&1 >/dev/null)
code=$?
set -e
((code == 1)) && [[ $out == *"checksum mismatch"* ]] || fail "edited export: exit $code: $out"
set +e
out=$("$stsresize" replay --file "$work/edited.json" --ignore-checksum 2>&1 >/dev/null)
code=$?
set -e
((code == 1)) && [[ $out == *"operation $op, sequence $seq, event PhaseChanged"* ]] ||
  fail "edited export with --ignore-checksum: exit $code: $out"
ok "edited export: checksum mismatch, then with --ignore-checksum sequence $seq named"
