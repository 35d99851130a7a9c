#!/usr/bin/env bash
# `stsresize run` resizes a StatefulSet on the local control plane, end to end, on real data:
# 3 replicas whose volumes hold a few hundred files of random data, an explicit request
# (stsresize.dev/resize) for 2Gi, then: every claim 2Gi and Bound, every file's sha256 as before,
# 3/3 Ready, the templates updated, no backup claim or copy Job left, the journal replays
# Completed. STORAGE_CLASS sim-fixed takes the copy path; sim-expandable the expansion path
# (the pods keep running: same pod uids, same volumes). With TO_CLASS, the request asks for that
# class alone (stsresize.dev/resize={"data":{"storageClassName":TO_CLASS}}, no size): the copy
# path moves every data claim to TO_CLASS at 1Gi, each bound to a volume of that class, every
# file's sha256 as before, the template naming TO_CLASS.
# The copy path is the rebind path (the controller may get and patch PersistentVolumes): the
# journal's Planned row says "Rebind path", each claim ends bound to the volume the journal's
# VolumeRetained row names as its copy's, one copy Job per claim, every policy put back
# (ReclaimPolicyRestored, two per claim). With --no-rebind the controller runs with --no-rebind:
# the two-copy path, Planned saying why ("not rebind: the controller runs with --no-rebind") and
# an Event RebindUnavailable, two copy Jobs per claim, no volume kept. Either way every volume
# left in the namespace is Bound to its claim with its own reclaim policy (Delete, the sim
# classes'), and no volume of the old claims, and no copy's, is left.
#   resize_with_controller.sh STSRESIZE_BINARY STORAGE_CLASS [TO_CLASS] [--no-rebind]
class=${2:?sim-fixed or sim-expandable}
to_class=''
no_rebind=0
for arg in "${@:3}"; do
  if [[ $arg == --no-rebind ]]; then no_rebind=1; else to_class=$arg; fi
done
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
# shellcheck source-path=SCRIPTDIR source=rebind_lib.sh
source "$(dirname "$0")/rebind_lib.sh"
use_namespace

step "StatefulSet web: 3 replicas, claims of 1Gi on $class, random data in every volume"
e2e_statefulset web "$class" 3
pod_uids_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
rebind_claim_volumes web 3 >"$work/volumes-before"
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host"

# Every copy Job the namespace sees (the initial list arrives as ADDED too).
k get jobs --watch --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' \
  >>"$work/watch-jobs" 2>>"$work/watch-errors" &
watcher=$!
on_exit "kill $watcher 2>/dev/null; true"

run_args=()
((no_rebind)) && run_args=(--no-rebind)
step "start the controller, watching only $ns ${run_args[*]}"
e2e_start_controller controller.log "${run_args[@]}"

if [[ -n $to_class ]]; then
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
  ok "every data claim in $to_class at 1Gi, on a volume of that class; template $to_class"
else
  e2e_assert_resized web 3 2Gi
fi
if [[ $class == sim-expandable && -z $to_class ]]; then
  pod_uids_after=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
  [[ $pod_uids_after == "$pod_uids_before" ]] || fail "expansion restarted pods: $pod_uids_before -> $pod_uids_after"
  [[ " ${phases[*]} " != *" ScalingDown "* ]] || fail "expansion scaled down"
  rebind_claim_volumes web 3 >"$work/volumes-after"
  diff -q "$work/volumes-before" "$work/volumes-after" >/dev/null ||
    fail "expansion moved claims to other volumes: $(diff "$work/volumes-before" "$work/volumes-after")"
  ok "expansion: the same pods and the same volumes throughout"
else
  [[ " ${phases[*]} " == *" BackingUp "* ]] || note "BackingUp not observed between polls (fast)"
fi
e2e_stop_controller "$controller_pid"
kill "$watcher" 2>/dev/null || true
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
grep -q "Completed" <<<"$replay" || fail "the journal does not replay to Completed: $replay"
ok "controller stopped cleanly on SIGTERM; journal replays to Completed"
e2e_assert_transition_events web "$work/journal.db"

planned=$(rebind_planned "$work/journal.db")
jobs=$(awk '$1 == "ADDED" && $2 !~ /-stsresize-precopy$/ { print $2 }' "$work/watch-jobs" | sort -u | grep -c . || true)
pre_copies=$(awk '$1 == "ADDED" && $2 ~ /-stsresize-precopy$/ { print $2 }' "$work/watch-jobs" | sort -u | grep -c . || true)
mapfile -t volumes_before < <(awk '{ print $2 }' "$work/volumes-before")
if [[ $class == sim-expandable && -z $to_class ]]; then
  [[ $planned == "Expand path, "* ]] || fail "Planned says: $planned"
  ((jobs == 0 && pre_copies == 0)) || fail "expansion ran $jobs Jobs and $pre_copies pre-copies"
  rebind_assert_volumes web 3 Delete 5
  exit 0
fi

if ((no_rebind)); then
  step "the two-copy path, and why: the controller runs with --no-rebind"
  [[ $planned == "Copy path, "*" (not rebind: the controller runs with --no-rebind)" ]] ||
    fail "Planned says: $planned"
  ok "Planned: $planned"
  e2e_wait_event web '^RebindUnavailable: .*takes the two-copy path.*the controller runs with --no-rebind'
  ok "Event $event"
  ((jobs == 6)) || fail "$jobs copy Jobs, not 6 (a backup and a restore per claim)"
  ((pre_copies == 3)) || fail "$pre_copies pre-copy Jobs, not 3 (one per claim, while its replica ran)"
  (($(rebind_count "$work/journal.db" VolumeRetained) == 0)) || fail "the two-copy path kept volumes"
  ok "6 copy Jobs (two copies per claim), no volume kept"
else
  step "the rebind path: each claim on its copy's volume, every policy put back"
  [[ $planned == "Rebind path, "* && $planned != *"not rebind"* ]] || fail "Planned says: $planned"
  ok "Planned: $planned"
  rebind_retained "$work/journal.db" copy >"$work/copies"
  rebind_retained "$work/journal.db" source >"$work/sources"
  for i in 0 1 2; do
    claim=data-web-$i
    read -r _ copy copy_policy < <(grep "^$claim " "$work/copies" || echo "- - -")
    read -r _ source source_policy < <(grep "^$claim " "$work/sources" || echo "- - -")
    [[ $source == "$(awk -v c="$claim" '$1 == c { print $2 }' "$work/volumes-before")" ]] ||
      fail "the journal keeps $source as the volume of $claim, not the one it had: $(cat "$work/volumes-before")"
    [[ $copy != - && $copy != "$source" ]] || fail "no copy's volume journaled for $claim: $(cat "$work/copies")"
    [[ $(jp "pvc/$claim" '{.spec.volumeName}') == "$copy" ]] ||
      fail "pvc/$claim is bound to $(jp "pvc/$claim" '{.spec.volumeName}'), not its copy's volume $copy"
    [[ $copy_policy == Delete && $source_policy == Delete ]] ||
      fail "$claim: policies journaled $source_policy (volume) and $copy_policy (copy), not Delete"
  done
  ok "each claim bound to the volume journaled as its copy's (VolumeRetained, own policy Delete)"
  restored=$(rebind_count "$work/journal.db" ReclaimPolicyRestored)
  ((restored == 6)) || fail "$restored ReclaimPolicyRestored rows, not 6 (two per claim)"
  ((jobs == 3)) || fail "$jobs copy Jobs, not 3 (one copy per claim)"
  ((pre_copies == 3)) || fail "$pre_copies pre-copy Jobs, not 3 (one per claim, while its replica ran)"
  ok "3 copy Jobs (one copy per claim), 6 policies put back"
fi
step "the volumes: each claim's Bound with its own policy; the old claims' and the copies' gone"
rebind_assert_volumes web 3 Delete 60 "${volumes_before[@]}"
