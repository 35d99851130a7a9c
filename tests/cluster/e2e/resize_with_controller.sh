#!/usr/bin/env bash
# `stsresize run` resizes a StatefulSet on the local control plane, end to end, on real data:
# 3 replicas whose volumes hold a few hundred files of random data, an explicit request
# (stsresize.dev/resize) for 2Gi, then: every claim 2Gi and Bound, every file's sha256 as before,
# 3/3 Ready, the templates updated, no backup claim or copy Job left, the journal replays
# Completed. STORAGE_CLASS sim-fixed takes the copy path; sim-expandable the expansion path
# (the pods keep running: same pod uids). With TO_CLASS, the request asks for that class alone
# (stsresize.dev/resize={"data":{"storageClassName":TO_CLASS}}, no size): the copy path moves
# every data claim to TO_CLASS at 1Gi, each bound to a volume of that class, every file's sha256
# as before, the template naming TO_CLASS, no volume of the old claims left.
#   resize_with_controller.sh STSRESIZE_BINARY STORAGE_CLASS [TO_CLASS]
class=${2:?sim-fixed or sim-expandable}
to_class=${3:-}
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

if [[ -n $to_class ]]; then
  pvs_before=$(k get pvc -o jsonpath='{range .items[*]}{.spec.volumeName}{"\n"}{end}' | grep . | sort)
  step "request class $to_class alone through the annotation (no size)"
  k annotate statefulset web "stsresize.dev/resize={\"data\":{\"storageClassName\":\"$to_class\"}}" >/dev/null
else
  step "request 2Gi through the annotation"
  k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
fi
e2e_wait_completed web 240
ok "completed; phases seen: ${phases[*]}"

step "check sizes, data, replicas, leftovers and the journal"
if [[ -n $to_class ]]; then
  e2e_assert_resized web 3 1Gi
  for i in 0 1 2; do
    [[ $(jp "pvc/data-web-$i" '{.spec.storageClassName}') == "$to_class" ]] ||
      fail "pvc/data-web-$i is in class $(jp "pvc/data-web-$i" '{.spec.storageClassName}'), not $to_class"
    pv=$(jp "pvc/data-web-$i" '{.spec.volumeName}')
    [[ $(k get pv "$pv" -o jsonpath='{.spec.storageClassName}') == "$to_class" ]] ||
      fail "pvc/data-web-$i is bound to $pv, not a volume of class $to_class"
  done
  [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.storageClassName}') == "$to_class" ]] ||
    fail "the template does not name class $to_class"
  [[ " ${phases[*]} " != *" Expanding "* ]] || fail "a class change took the expansion path"
  # The old volumes (reclaim policy Delete) went with the old claims.
  deadline=$((SECONDS + 60))
  while :; do
    left=$(comm -12 <(k get pv -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort) - <<<"$pvs_before")
    [[ -z $left ]] && break
    ((SECONDS < deadline)) || fail "volumes of the old claims left behind: $left"
    sleep 1
  done
  ok "every data claim in $to_class at 1Gi, on a volume of that class; template $to_class; the old volumes gone"
else
  e2e_assert_resized web 3 2Gi
fi
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
