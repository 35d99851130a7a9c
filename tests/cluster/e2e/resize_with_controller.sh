#!/usr/bin/env bash
# `stsresize run` resizes a StatefulSet on the local control plane, end to end, on real data:
# 3 replicas whose volumes hold a few hundred files of random data, an explicit request
# (stsresize.dev/resize) for 2Gi, then: every claim 2Gi and Bound, every file's sha256 as before,
# 3/3 Ready, the templates updated, no backup claim or copy Job left, the journal replays
# Completed. STORAGE_CLASS sim-fixed takes the copy path; sim-expandable the expansion path
# (the pods keep running: same pod uids).
#   resize_with_controller.sh STSRESIZE_BINARY STORAGE_CLASS
class=${2:?sim-fixed or sim-expandable}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

step "StatefulSet web: 3 replicas, claims of 1Gi on $class, random data in every volume"
e2e_statefulset web "$class" 3
pod_uids_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host"

step "start the controller, watching only $ns"
e2e_start_controller controller.log

step "request 2Gi through the annotation"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_completed web 240
ok "completed; phases seen: ${phases[*]}"

step "check sizes, data, replicas, leftovers and the journal"
e2e_assert_resized web 3 2Gi
if [[ $class == sim-expandable ]]; then
  pod_uids_after=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
  [[ $pod_uids_after == "$pod_uids_before" ]] || fail "expansion restarted pods: $pod_uids_before -> $pod_uids_after"
  [[ " ${phases[*]} " != *" ScalingDown "* ]] || fail "expansion scaled down"
  ok "expansion: the same pods ran throughout"
else
  [[ " ${phases[*]} " == *" BackingUp "* ]] || note "BackingUp not observed between polls (fast)"
fi
e2e_stop_controller "$controller_pid"
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
grep -q "Completed" <<<"$replay" || fail "the journal does not replay to Completed: $replay"
ok "controller stopped cleanly on SIGTERM; journal replays to Completed"
e2e_assert_transition_events web "$work/journal.db"
