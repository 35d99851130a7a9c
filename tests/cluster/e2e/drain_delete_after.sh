#!/usr/bin/env bash
# The claim policy stsresize.dev/scaledown-claims: delete-after=<duration> (no cleanup pod
# template), on the local control plane with real data. StatefulSet web, 3 replicas of 1Gi on
# sim-fixed, random data in every volume (e2e_statefulset), annotated delete-after=20s;
# `stsresize run`. Then:
#   1. scale 3 -> 2, and back to 3 8 s later, well inside the 20 s: the drain (phase Draining) is
#      cancelled (Event DrainCancelled, journaled), web-2 returns Ready on the same claim (uid)
#      with every file's sha256 as before; no claim deleted, none being deleted.
#   2. scale 3 -> 2 again and wait: data-web-2 is still there (not being deleted) 14 s after the
#      StatefulSet controller observed the scale-down (observedGeneration, status.replicas 2: the
#      moment the drain may begin), its delete is requested no sooner than 20 s after that
#      moment (the claim's deletionTimestamp, whole seconds, against the scale request, which
#      comes before the observation) and it is gone within 30 s more;
#      its volume follows its reclaim policy (sim-fixed: Delete, the PV and its directory gone);
#      data-web-0/1 keep their uids and every file's sha256; Events on the StatefulSet for the
#      claim's delete (naming the policy) and last-operation Completed; `stsresize status`
#      showed the drain while it waited; the journal replays (exit 0) and holds both drains.
#   drain_delete_after.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

delay=20 # seconds, the policy's duration

now() { date +%s.%N; }
# elapsed SINCE: seconds (with a fraction) from SINCE (a `now`) to now.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# later A B: A > B (decimal seconds).
later() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }


# scale_down_observed_at: scales web to 2; sets t_scale to the moment (a `now`) before the
# request and t0 to the first poll that saw the StatefulSet controller had observed it, as the
# drain reads it (observedGeneration at least the generation, status.replicas at most 2). The
# observation lies between the two: t0 bounds "still there before the delay" from above, t_scale
# bounds "deleted after the delay" from below (the controller may begin Draining before the poll
# sees the observation).
scale_down_observed_at() {
  local generation deadline=$((SECONDS + 60))
  t_scale=$(now)
  k scale statefulset web --replicas=2 >/dev/null
  generation=$(jp statefulset/web '{.metadata.generation}')
  until (($(jp statefulset/web '{.status.observedGeneration}') >= generation &&
    $(jp statefulset/web '{.status.replicas}') <= 2)); do
    ((SECONDS > deadline)) && fail "the StatefulSet controller did not observe the scale-down in 60s: $(jp statefulset/web '{.status}')"
    sleep 0.1
  done
  t0=$(now)
}

step "StatefulSet web: 3 replicas of 1Gi on sim-fixed with random data, stsresize.dev/scaledown-claims=delete-after=${delay}s"
e2e_statefulset web sim-fixed 3
k annotate statefulset web "stsresize.dev/scaledown-claims=delete-after=${delay}s" >/dev/null
e2e_claim_uids web 3 >"$work/uids-before"
pv_web_2=$(jp pvc/data-web-2 '{.spec.volumeName}')
reclaim=$(kubectl get pv "$pv_web_2" -o jsonpath='{.spec.persistentVolumeReclaimPolicy}')
# Every claim event from here on (the deletionTimestamp of data-web-2 is read from it).
k get pvc --watch --output-watch-events -o json >>"$work/watch-claims" 2>>"$work/watch-errors" &
# shellcheck disable=SC2034 # killed at exit
watcher=$!
# shellcheck disable=SC2016 # expanded at exit
on_exit 'kill "$watcher" 2>/dev/null; true'
ok "$(wc -l <"$work/before-web-0") files per volume; data-web-2 on $pv_web_2 (reclaim policy $reclaim)"

step "start the controller"
e2e_start_controller controller.log

step "1. scale 3 -> 2, then back to 3 inside the ${delay}s: the drain is cancelled, nothing deleted"
scale_down_observed_at
e2e_wait_phase web Draining 30
ok "phase Draining $(elapsed "$t0")s after the StatefulSet controller observed the scale-down"
"$stsresize" status --kubeconfig "$KUBECONFIG" --namespace "$ns" -o wide >"$work/status-1" 2>&1 ||
  fail "stsresize status exited $?: $(cat "$work/status-1")"
{ grep -q 'web' "$work/status-1" && grep -q 'scale-down' "$work/status-1"; } ||
  fail "stsresize status does not show the drain of web: $(cat "$work/status-1")"
note "$(grep 'web' "$work/status-1" | head -n 1)"
# Scaled back once part of the delay has passed (8 s), clearly before its end.
until later "$(elapsed "$t0")" 8; do sleep 0.2; done
waited=$(elapsed "$t0")
later "$waited" $((delay - 8)) && fail "too late to scale back inside the delay: ${waited}s after the scale-down (a slow machine?)"
k scale statefulset web --replicas=3 >/dev/null
ok "scaled back to 3 after ${waited}s"
deadline=$((SECONDS + 120))
until [[ $(jp pod/web-2 '{.metadata.ownerReferences[0].kind}' 2>/dev/null) == StatefulSet &&
  $(jp statefulset/web '{.status.readyReplicas}') == 3 ]]; do
  ((SECONDS > deadline)) && fail "web-2 did not return Ready: $(k get pods -o wide)"
  sleep 0.5
done
deadline=$((SECONDS + 60))
while phase=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') && [[ -n $phase ]]; do
  ((SECONDS > deadline)) && fail "the drain is still in phase $phase after the scale back up"
  sleep 0.5
done
last=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}')
e2e_wait_event web '^DrainCancelled: '
ok "web-2 is the StatefulSet's pod again, 3/3 Ready; drain over: $event"
note "last-operation: $last"
e2e_claim_uids web 3 >"$work/uids-after-1"
diff -q "$work/uids-before" "$work/uids-after-1" >/dev/null || fail "a claim changed: $(diff "$work/uids-before" "$work/uids-after-1")"
[[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted"
jq -e -s '[.[] | select(.type == "DELETED")] | length == 0' "$work/watch-claims" >/dev/null ||
  fail "a claim was deleted: $(jq -c -s '[.[] | select(.type == "DELETED") | .object.metadata.name]' "$work/watch-claims")"
e2e_assert_data_intact web 3
ok "every claim the same uid, none deleted or being deleted; every file's sha256 as before on all 3"
# The cancellation outlives the delay: nothing is deleted once it has passed either.
sleep $((delay + 3))
e2e_claim_uids web 3 >"$work/uids-after-1b"
diff -q "$work/uids-before" "$work/uids-after-1b" >/dev/null || fail "a claim changed after the delay: $(diff "$work/uids-before" "$work/uids-after-1b")"
[[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted after the delay"
ok "$((delay + 3))s later: still every claim the same uid, none being deleted"

step "2. scale 3 -> 2 and wait: data-web-2 deleted only once ${delay}s have passed"
scale_down_observed_at
t_scale_whole=${t_scale%.*}
e2e_wait_phase web Draining 30
"$stsresize" status --kubeconfig "$KUBECONFIG" --namespace "$ns" -o wide >"$work/status-2" 2>&1 ||
  fail "stsresize status exited $?: $(cat "$work/status-2")"
note "$(grep 'web' "$work/status-2" | head -n 1)"
# Still there, and not being deleted, well before the delay has passed.
until later "$(elapsed "$t0")" $((delay - 6)); do
  [[ $(jp pvc/data-web-2 '{.metadata.uid}' 2>/dev/null) == "$(awk '$1 == "data-web-2" { print $2 }' "$work/uids-before")" ]] ||
    fail "data-web-2 is gone $(elapsed "$t0")s after the scale-down, before the ${delay}s"
  [[ -z $(jp pvc/data-web-2 '{.metadata.deletionTimestamp}') ]] ||
    fail "data-web-2 is being deleted $(elapsed "$t0")s after the scale-down, before the ${delay}s"
  sleep 0.5
done
ok "data-web-2 still there (same uid, not being deleted) $(elapsed "$t0")s after the scale-down"
deadline=$((SECONDS + delay + 30))
while k get pvc data-web-2 >/dev/null 2>&1; do
  ((SECONDS > deadline)) && fail "data-web-2 is still there $(elapsed "$t0")s after the scale-down: phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')'"
  sleep 0.5
done
gone_after=$(elapsed "$t0")
# Its deletion as the API server stamped it (whole seconds, rounded down): from the watch.
deadline=$((SECONDS + 10))
until deleted_at=$(jq -r -s '[.[] | select(.type == "DELETED" and .object.metadata.name == "data-web-2")
    | .object.metadata.deletionTimestamp] | first // empty' "$work/watch-claims") && [[ -n $deleted_at ]]; do
  ((SECONDS > deadline)) && fail "the watch saw no DELETED event of data-web-2"
  sleep 0.5
done
deleted_s=$(date -d "$deleted_at" +%s)
# t_scale rounded down too: a delete requested at t_scale + delay or later (the observation
# comes after the request) has a stamp >= t_scale_whole + delay.
((deleted_s >= t_scale_whole + delay)) ||
  fail "data-web-2's delete was requested at $deleted_at, $((deleted_s - t_scale_whole))s after the scale-down: before the ${delay}s"
ok "data-web-2 deleted at $deleted_at ($((deleted_s - t_scale_whole))s after the scale-down request, whole seconds), gone ${gone_after}s after the observation was seen"

if [[ $reclaim == Delete ]]; then
  deadline=$((SECONDS + 60))
  while kubectl get pv "$pv_web_2" >/dev/null 2>&1; do
    ((SECONDS > deadline)) && fail "pv/$pv_web_2 (reclaim Delete) is still there"
    sleep 0.5
  done
  [[ ! -e $nodesim_dir/volumes/$pv_web_2 ]] || fail "the directory of $pv_web_2 is still there"
  ok "its volume $pv_web_2 (reclaim policy Delete) deleted, its directory gone"
else
  sleep 3
  [[ $(kubectl get pv "$pv_web_2" -o jsonpath='{.status.phase}') == Released ]] ||
    fail "pv/$pv_web_2 (reclaim $reclaim) is not Released"
  ok "its volume $pv_web_2 (reclaim policy $reclaim) kept, Released"
fi

step "the drain completed; web-0 and web-1 untouched; Events, journal"
e2e_wait_completed web 60
last=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}')
ok "last-operation: $last"
e2e_claim_uids web 2 >"$work/uids-after-2"
diff -q <(head -n 2 "$work/uids-before") "$work/uids-after-2" >/dev/null ||
  fail "data-web-0/1 changed: $(diff <(head -n 2 "$work/uids-before") "$work/uids-after-2")"
e2e_assert_data_intact web 2
[[ $(jp statefulset/web '{.status.readyReplicas}') == 2 ]] || fail "readyReplicas is not 2"
[[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod exists: $(k get pods -l scaledown-pod -o name)"
ok "data-web-0/1 the same uids, every file's sha256 as before, 2/2 Ready, no cleanup pod ever needed"
e2e_wait_event web '^SuccessfulDelete: .*data-web-2.*scaledown-claims'
ok "$event"
e2e_stop_controller "$controller_pid"
e2e_replay "$work/journal.db"
ok "the journal replays (exit 0)"
"$stsresize" replay --journal "$work/journal.db" --namespace "$ns" --statefulset web -o json >"$work/replay.json" ||
  fail "replay -o json exited $?"
jq -e '[.rows[] | select(.event == "DrainCancelled")] | length == 1' "$work/replay.json" >/dev/null ||
  fail "the journal does not hold one DrainCancelled: $(jq -c '[.rows[].event]' "$work/replay.json")"
jq -e '[.rows[] | select(.event == "DrainedClaimDeleted")] | length >= 1' "$work/replay.json" >/dev/null ||
  fail "the journal does not hold the claim's delete: $(jq -c '[.rows[].event]' "$work/replay.json")"
ok "journaled: $(jq -r '[.rows[].event] | join(", ")' "$work/replay.json")"
