#!/usr/bin/env bash
# `stsresize status` and `stsresize describe` on a resize under way, on the local control plane:
# a 3-replica StatefulSet resized on the copy path by `stsresize run`, while `status -o json` is
# polled. Every poll must agree with the StatefulSet's phase annotation (between its readings
# just before and just after the poll), report the path (rebind, the copy path's default) and 3 claims once planned, and never go backwards (phases
# in the machine's order; within a phase, claims done never fall); the phases must advance and
# the claims done must rise within a phase. After completion: the table shows Completed,
# `describe --journal` lists every phase in the order the journal has them, and a cluster that
# cannot be reached gives exit code 4.
#
# The copy pods are slowed (nodesim podStartDelay, one copy Job at a time) so that each claim's
# copy lasts a few seconds: long enough for polls to see the claims done rise, whatever the load.
#   operator_status.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
on_exit "clear_fault podStartDelay"

status() { "$stsresize" status --kubeconfig "$KUBECONFIG" "$@"; }
phase_annotation() { jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true; }

# The machine's order of the copy path's phases (an explicit request starts in UpdatingTemplate).
order=(Pending UpdatingTemplate Planning PreCopying ScalingDown BackingUp Recreating Restoring ScalingUp CleaningUp Completed)
rank() {
  local i
  for i in "${!order[@]}"; do [[ ${order[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo -1
}

step "StatefulSet web: 3 replicas, 1Gi on sim-fixed (the copy path), random data"
e2e_statefulset web sim-fixed 3

step "before any request: nothing to show"
out=$(status -n "$ns") || fail "status exited $?: $out"
[[ $out == "No resize operations found in namespace $ns." ]] || fail "unexpected: $out"
ok "$out"

step "start the controller (one copy at a time, copy pods delayed 3s), request 2Gi"
set_fault podStartDelay 3s
e2e_start_controller controller.log --max-parallel-copies 1 --leader-elect --metrics-bind-address 127.0.0.1:0
# status -w follows the whole resize, from before the request (nothing to print yet).
status -n "$ns" -w >"$work/watch.out" 2>"$work/watch.err" &
watch_pid=$!
on_exit "kill $watch_pid 2>/dev/null || true"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

step "poll status -o json until Completed"
deadline=$((SECONDS + 300))
last_rank=-1 last_done=-1 polls=0
declare -A max_done_rise=()
seen=()
while :; do
  before=$(phase_annotation)
  json=$(status -n "$ns" web -o json) || fail "status exited $?: $json"
  after=$(phase_annotation)
  polls=$((polls + 1))
  if [[ $(jq '.items | length' <<<"$json") == 0 ]]; then
    # Not picked up yet: no stsresize annotation so far.
    ((last_rank < 0)) || fail "the operation vanished from status after ${order[$last_rank]}"
    ((SECONDS > deadline)) && fail "the request was never picked up"
    sleep 0.3
    continue
  fi
  kind=$(jq -r '.items[0].status' <<<"$json")
  phase=$(jq -r '.items[0].phase' <<<"$json")
  [[ $kind == Completed ]] && break
  [[ $kind == InProgress ]] || fail "status $kind: $json"
  r=$(rank "$phase")
  ((r >= 0)) || fail "phase $phase is not on the copy path"
  # The annotation may move on while status reads: its phase lies between the two readings.
  [[ -n $after ]] || after=Completed
  (($(rank "$before") <= r && r <= $(rank "$after"))) ||
    fail "status says $phase, the annotation said ${before:-none} before and $after after"
  ((r >= last_rank)) || fail "phase went back: ${order[$last_rank]} -> $phase"
  ((r > last_rank)) && { seen+=("$phase"); last_done=-1; }
  if [[ $(jq -r '.items[0].claims' <<<"$json") != null ]]; then
    # The copy path's default variant, which copies each claim once (--no-rebind gives copy).
    [[ $(jq -r '.items[0].path' <<<"$json") == rebind ]] || fail "path is not rebind: $json"
    [[ $(jq -r '.items[0].claims.total' <<<"$json") == 3 ]] || fail "claims total is not 3: $json"
    done_now=$(jq -r '.items[0].claims.done' <<<"$json")
    ((done_now >= last_done)) || fail "claims done fell in $phase: $last_done -> $done_now"
    ((last_done >= 0 && done_now > last_done)) && max_done_rise[$phase]=1
    last_done=$done_now
  fi
  last_rank=$r
  # While it runs (the copies are slow), /metrics has its series: when its phase began, and
  # that it awaits no approval.
  if [[ $phase == PreCopying && -z ${gauges_seen:-} ]]; then
    scrape=$(e2e_scrape controller.log)
    grep -Eq "^stsresize_operation_phase_start_seconds\{[^}]*statefulset=\"web\"[^}]*\} [0-9.e+]+$" <<<"$scrape" ||
      fail "no stsresize_operation_phase_start_seconds for web while it runs: $(grep operation_ <<<"$scrape")"
    grep -Eq "^stsresize_operation_awaiting_approval\{[^}]*statefulset=\"web\"[^}]*\} 0$" <<<"$scrape" ||
      fail "no stsresize_operation_awaiting_approval 0 for web while it runs"
    gauges_seen=1
  fi
  ((SECONDS > deadline)) && fail "not Completed after 300s (phases seen: ${seen[*]}); last: $json"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.3
done
clear_fault podStartDelay
((${#seen[@]} >= 3)) || fail "the phases did not advance under $polls polls: ${seen[*]}"
((${#max_done_rise[@]} >= 1)) || fail "claims done never rose within a phase (phases seen: ${seen[*]})"
[[ -n ${gauges_seen:-} ]] || fail "PreCopying was never seen: the per-operation series were not checked"
ok "$polls polls, phases seen in order: ${seen[*]}; claims done rose in: ${!max_done_rise[*]}"
[[ -z $(phase_annotation) ]] || fail "status said Completed while the phase annotation is still set"

step "the table after completion"
out=$(status -n "$ns") || fail "status exited $?"
note "$out"
grep -Eq '^web +- +Completed +- ' <<<"$out" || fail "no Completed row for web: $out"
out=$(status -A -o wide) || fail "status -A exited $?"
grep -Eq "^$ns +web +- +Completed " <<<"$out" || fail "-A has no Completed row for $ns/web: $out"
ok "web shows Completed, also with -A -o wide"

step "status -w printed a row per change, the header once"
sleep 1  # the watch reads again at once on the last annotation change
kill "$watch_pid" 2>/dev/null || fail "status -w exited early: $(cat "$work/watch.err")"
note "$(cat "$work/watch.out")"
headers=$(grep -c '^NAME ' "$work/watch.out" || true)
((headers == 1)) || fail "status -w printed the header $headers times"
watched=$(awk '$1 == "web" {print $3}' "$work/watch.out" | uniq | tr '\n' ' ')
[[ $watched == *"Completed "* ]] || fail "status -w never printed Completed: $watched"
(($(wc -w <<<"$watched") >= 4)) || fail "status -w printed too few phases: $watched"
ok "status -w: $watched"

step "the kubectl plugin: kubectl stsresize, and its completion through kubectl"
# The plugin is the binary under the names installed beside it (kubectl finds them on PATH).
bin_dir=$(dirname "$(readlink -f "$stsresize")")
[[ -x $bin_dir/kubectl-stsresize && -x $bin_dir/kubectl_complete-stsresize ]] ||
  fail "no kubectl-stsresize / kubectl_complete-stsresize beside $stsresize"
direct=$(status -n "$ns" -o wide) || fail "status exited $?"
plugin=$(PATH="$bin_dir:$PATH" kubectl stsresize status --kubeconfig "$KUBECONFIG" -n "$ns" -o wide) ||
  fail "kubectl stsresize status exited $?: $plugin"
# STEP AGE may tick between the two: compare every column but that one.
[[ $(awk '{$5=""; print}' <<<"$plugin") == $(awk '{$5=""; print}' <<<"$direct") ]] ||
  fail "kubectl stsresize status differs from stsresize status: '$plugin' against '$direct'"
completed=$(PATH="$bin_dir:$PATH" kubectl __complete stsresize describe --kubeconfig "$KUBECONFIG" -n "$ns" "" 2>/dev/null) ||
  fail "kubectl __complete stsresize exited $?"
grep -qx 'web' <<<"$completed" || fail "kubectl did not complete the StatefulSet web: $completed"
# The bash script: completing `stsresize describe -n NS w` in a shell that sourced it.
reply=$(PATH="$bin_dir:$PATH" bash -c '
  source <(stsresize completion bash)
  COMP_WORDS=(stsresize describe --kubeconfig "$1" -n "$2" w); COMP_CWORD=6
  _stsresize_complete; printf "%s\n" "${COMPREPLY[@]}"' _ "$KUBECONFIG" "$ns") ||
  fail "the bash completion failed: $reply"
[[ $reply == web ]] || fail "bash completed 'w' to '$reply', expected web"
ok "kubectl stsresize status = stsresize status; kubectl and bash complete web"

step "every series deploy/monitoring/ names is one the controller exports"
scrape=$(e2e_scrape controller.log) || fail "no /metrics"
source_dir=$(cd "$(dirname "$0")/../../.." && pwd)
named=$(cat "$source_dir/deploy/monitoring/prometheus-rule.yaml" "$source_dir/deploy/monitoring/grafana-dashboard.json" |
  grep -oE '\b(stsresize|process)_[a-z_]+' | sed -E 's/_(bucket|sum|count)$//' | sort -u)
for family in $named; do
  grep -q "^# TYPE $family " <<<"$scrape" || fail "deploy/monitoring/ names $family, which /metrics does not export"
done
copied=$(e2e_metric controller.log 'stsresize_copied_bytes_total{kind="resize",path="rebind"}')
degraded=$(e2e_metric controller.log 'stsresize_operation_degraded_seconds_total{kind="resize"}')
[[ $copied != 0 && $degraded != 0 ]] ||
  fail "after the resize: bytes copied $copied, seconds short of Ready replicas $degraded"
ok "$(wc -w <<<"$named") families named, all exported; $copied bytes copied, ${degraded}s short of Ready replicas"

step "describe with the journal: every phase, in order"
e2e_stop_controller "$controller_pid"
out=$("$stsresize" describe --kubeconfig "$KUBECONFIG" "$ns/web" --journal "$work/journal.db") ||
  fail "describe exited $?: $out"
grep -q '^Status: *Completed$' <<<"$out" || fail "describe does not say Completed: $out"
# The journal's phase table: lines "    <Phase>   <time>   <duration>" under "  Operation ...".
listed=$(awk '/^  Operation /{table=1; next} table && /^    [A-Z]/{print $1} /^$/{table=0}' <<<"$out" |
  grep -v '^PHASE$' | tr '\n' ' ')
expected="UpdatingTemplate Planning PreCopying ScalingDown BackingUp Recreating Restoring ScalingUp CleaningUp Completed "
[[ $listed == "$expected" ]] || fail "describe lists phases '$listed', expected '$expected': $out"
grep -q 'ResizeCompleted' <<<"$out" || fail "describe shows no ResizeCompleted event: $out"
ok "phases in order: $listed; events shown"

step "a cluster that cannot be reached: exit code 4"
sed -E 's#(server: *)https?://[^ ]+#\1https://127.0.0.1:9#' "$KUBECONFIG" >"$work/unreachable.kubeconfig"
set +e
out=$("$stsresize" status --kubeconfig "$work/unreachable.kubeconfig" -n "$ns" 2>&1)
code=$?
set -e
((code == 4)) || fail "exit code $code, expected 4: $out"
grep -q 'no answer from the API server' <<<"$out" || fail "unexpected message: $out"
ok "exit 4: $out"
