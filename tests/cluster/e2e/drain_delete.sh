#!/usr/bin/env bash
# Deleting a StatefulSet that opts in to the drain (statefulsets.kubernetes.io/scaledown-pod-
# template), on the local control plane with real data. StatefulSet web, 2 replicas of 1Gi on
# sim-fixed, random data in every volume (e2e_statefulset); its cleanup pod writes a file naming
# its hostname into the volume it drains and exits 0. `stsresize run` puts the finalizer
# statefulsets.kubernetes.io/scaledown on it (Event FinalizerAdded). Then:
#   background  `kubectl delete sts web`: every ordinal is drained — a cleanup pod web-0 and
#               web-1 each Succeeded on its own claim (it writes a file into the volume and
#               logs it read back with the replica's own id file found there) — then both claims are deleted, the finalizer removed (Event
#               DeletionDrained) and the StatefulSet gone; no pod, no claim left; the journal
#               replays (exit 0).
#   orphan      `kubectl delete sts web --cascade=orphan`: not a scale-down. The StatefulSet is
#               gone at once (Event OrphanDeleteNotDrained), its pods still run, both claims keep
#               their uids and every file its sha256; no cleanup pod was ever created.
# With 3 replicas and a cleanup command that holds (until a file release-the-drain is in the
# volume it drains), scaled 3 -> 2, once the cleanup pod web-2 runs (phase Draining):
#   during_drain         `kubectl delete sts web`: the running drain is not fought: no other
#                        cleanup pod starts and web-2's is not replaced while it holds, the delete
#                        is held (finalizer); released, it Succeeds and data-web-2 goes, then
#                        ordinals 0 and 1 are drained (their replicas' pods deleted first, a
#                        cleanup pod each); every cleanup pod Succeeded on its own claim, no pod,
#                        no claim left, the StatefulSet gone (Event DeletionDrained); the journal
#                        replays (exit 0) with both drains.
#   orphan_during_drain  `kubectl delete sts web --cascade=orphan`: not a scale-down, and not held
#                        while the cleanup holds: the drain is cancelled (its cleanup pod deleted
#                        before it Succeeded, Event DrainCancelled), the StatefulSet gone within
#                        seconds (Event OrphanDeleteNotDrained); pods web-0/1 still Running, all
#                        three claims the same uids with every file's sha256. Then the StatefulSet
#                        is applied again as it was (2 replicas, as a GitOps tool would): it adopts
#                        web-0/1, a new drain runs a new cleanup pod web-2, which Succeeds, and only
#                        then data-web-2 is deleted; web-0/1 untouched; the journal replays.
#   drain_delete.sh STSRESIZE_BINARY background|orphan|during_drain|orphan_during_drain
case_name=${2:?background, orphan, during_drain or orphan_during_drain}
# After a delete that drained every ordinal: no pod or claim left, every volume reclaimed (its
# directory gone), and the Event that let the delete finish.
assert_nothing_left() {
  local deadline=$((SECONDS + 60)) pv
  while [[ -n $(k get pods,pvc -o name) ]]; do
    ((SECONDS > deadline)) && fail "left behind: $(k get pods,pvc -o name | paste -sd' ')"
    sleep 0.5
  done
  for pv in $pvs; do
    [[ ! -e $nodesim_dir/volumes/$pv ]] || fail "the directory of $pv is still there"
  done
  e2e_wait_event web '^DeletionDrained: '
  ok "no pod, no claim left, volumes reclaimed; $event"
}

case $case_name in
  background | orphan | during_drain | orphan_during_drain) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY background|orphan|during_drain|orphan_during_drain" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# A finalizer left by a failure would hold the namespace's deletion: removed last.
# shellcheck disable=SC2016 # expanded at exit
on_exit 'k patch statefulset web --type merge -p '\''{"metadata":{"finalizers":null}}'\'' >/dev/null 2>&1; true'
e2e_init "${1:?path to the stsresize binary}"
use_namespace

replicas=2
hold=''
if [[ $case_name == *during_drain ]]; then
  replicas=3
  # shellcheck disable=SC2016 # expanded in the pod
  hold='echo holding until /data/release-the-drain exists; until [ -e /data/release-the-drain ]; do sleep 1; done; '
fi
# shellcheck disable=SC2016 # expanded in the pod
template='{"metadata":{"labels":{"app":"web-drain"}},"spec":{"containers":[{"name":"cleanup","image":"docker.io/library/busybox:1.36","command":["sh","-c","'"$hold"'echo \"drained by $(cat /proc/sys/kernel/hostname)\" > /data/drained-by && echo \"$(cat /data/drained-by) on the volume of $(cat /data/id)\""],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}'

step "StatefulSet web: $replicas replicas of 1Gi on sim-fixed with random data, a cleanup pod template${hold:+ whose command holds}"
e2e_statefulset web sim-fixed "$replicas"
k annotate statefulset web "statefulsets.kubernetes.io/scaledown-pod-template=$template" >/dev/null
e2e_claim_uids web "$replicas" >"$work/uids-before"
dirs=()
for ((i = 0; i < replicas; i++)); do dirs+=("$(pv_dir "data-web-$i")"); done
pvs=$(k get pvc -o jsonpath='{range .items[*]}{.spec.volumeName}{"\n"}{end}')
k get pods -l scaledown-pod --watch --output-watch-events -o json >>"$work/watch-cleanup-pods" 2>/dev/null &
# shellcheck disable=SC2034 # killed at exit
watcher=$!
# shellcheck disable=SC2016 # expanded at exit
on_exit 'kill "$watcher" 2>/dev/null; true'
ok "$(wc -l <"$work/before-web-0") files per volume"

step "start the controller: it puts the drain's finalizer on the StatefulSet"
e2e_start_controller controller.log
deadline=$((SECONDS + 60))
until [[ $(jp statefulset/web '{.metadata.finalizers}') == *statefulsets.kubernetes.io/scaledown* ]]; do
  ((SECONDS > deadline)) && fail "no finalizer statefulsets.kubernetes.io/scaledown on statefulset/web"
  sleep 0.5
done
ok "finalizer statefulsets.kubernetes.io/scaledown"


# assert_drained_by I: the cleanup pod of ordinal I ran as web-I on the volume of web-I (the
# file it wrote into the volume, read back with the replica's own id file there, in its log:
# the volume itself is gone with the claim).
assert_drained_by() {
  local log=$nodesim_dir/pods/${ns}_web-$1/cleanup.log
  grep -qx "drained by web-$1 on the volume of web-$1" "$log" 2>/dev/null ||
    fail "the cleanup of ordinal $1 did not run as web-$1 on data-web-$1: $(tail -n 3 "$log" 2>/dev/null)"
}

# cleanup_uids NAME: the uids of every cleanup pod NAME the watch saw, one a line.
cleanup_uids() {
  jq -r --arg n "$1" 'select(.object.metadata.name == $n) | .object.metadata.uid' "$work/watch-cleanup-pods" | sort -u
}

# seen_succeeded UID: the watch saw the cleanup pod UID Succeeded.
seen_succeeded() {
  jq -e -s --arg uid "$1" '[.[] | select(.object.metadata.uid == $uid) | .object.status.phase] | index("Succeeded")' \
    "$work/watch-cleanup-pods" >/dev/null
}

# scale_down_to_held_drain: scale 3 -> 2 and wait until the cleanup pod web-2 runs and holds
# (phase Draining); its uid in $cleanup_uid.
scale_down_to_held_drain() {
  local log deadline
  k scale statefulset web --replicas=2 >/dev/null
  deadline=$((SECONDS + 120))
  until [[ $(jp pod/web-2 '{.metadata.labels.scaledown-pod}' 2>/dev/null) == web-2 &&
    -n $(jp pod/web-2 '{.status.containerStatuses[0].state.running}' 2>/dev/null) ]]; do
    ((SECONDS > deadline)) && fail "no running cleanup pod web-2 within 120s (phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', pods: $(k get pods -o name | paste -sd' '))"
    sleep 0.5
  done
  cleanup_uid=$(jp pod/web-2 '{.metadata.uid}')
  log=$nodesim_dir/pods/${ns}_web-2/cleanup.log
  deadline=$((SECONDS + 30))
  until grep -q "holding until" "$log" 2>/dev/null; do
    ((SECONDS > deadline)) && fail "the cleanup command does not hold: $(tail -n 5 "$log" 2>/dev/null)"
    sleep 0.5
  done
  e2e_wait_phase web Draining 60
  ok "cleanup pod web-2 ($cleanup_uid) running and holding, phase Draining"
}

case $case_name in
  background)
    step "kubectl delete sts web: every ordinal drained, then the StatefulSet goes"
    k delete statefulset web --wait=false >/dev/null
    deadline=$((SECONDS + 240))
    while k get statefulset web >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "statefulset/web is still there: finalizers $(jp statefulset/web '{.metadata.finalizers}'), phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', $(k get pods,pvc -o name | paste -sd' ')"
      sleep 0.5
    done
    for i in 0 1; do assert_drained_by "$i"; done
    ok "cleanup pods web-0 and web-1 ran on their own claims, each as its replica"
    assert_nothing_left
    e2e_stop_controller "$controller_pid"
    e2e_replay "$work/journal.db"
    ok "the journal replays (exit 0)"
    ;;

  orphan)
    step "kubectl delete sts web --cascade=orphan: nothing drained, the StatefulSet goes at once"
    k delete statefulset web --cascade=orphan --wait=false >/dev/null
    deadline=$((SECONDS + 60))
    while k get statefulset web >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "statefulset/web is still there: finalizers $(jp statefulset/web '{.metadata.finalizers}')"
      sleep 0.5
    done
    e2e_wait_event web '^OrphanDeleteNotDrained: '
    ok "$event"
    sleep 3 # time for a wrong drain to show
    e2e_claim_uids web 2 >"$work/uids-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "a claim changed: $(diff "$work/uids-before" "$work/uids-after")"
    [[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted"
    for i in 0 1; do
      [[ $(jp "pod/web-$i" '{.status.phase}') == Running ]] || fail "pod web-$i is not Running"
      e2e_checksums "data-web-$i" | diff -q "$work/before-web-$i" - >/dev/null || fail "the files of web-$i changed"
    done
    [[ ! -s $work/watch-cleanup-pods ]] || fail "a cleanup pod was created: $(head -c 400 "$work/watch-cleanup-pods")"
    ok "pods web-0/1 still Running, both claims the same uids, every file's sha256 as before, no cleanup pod"
    ;;

  during_drain)
    step "scale 3 -> 2 with a cleanup command that holds"
    scale_down_to_held_drain

    step "kubectl delete sts web while the drain of ordinal 2 runs: the running drain is not fought"
    k delete statefulset web --wait=false >/dev/null
    sleep 8
    k get statefulset web >/dev/null 2>&1 || fail "statefulset/web went before anything was drained"
    [[ -n $(jp statefulset/web '{.metadata.deletionTimestamp}') ]] || fail "statefulset/web is not being deleted"
    [[ $(jp pod/web-2 '{.metadata.uid}') == "$cleanup_uid" && $(jp pod/web-2 '{.status.phase}') == Running ]] ||
      fail "the cleanup pod web-2 was replaced or stopped: $(k get pod web-2 -o wide 2>&1)"
    [[ $(cleanup_uids web-2) == "$cleanup_uid" ]] || fail "another cleanup pod web-2 was seen: $(cleanup_uids web-2 | paste -sd' ')"
    [[ -z $(cleanup_uids web-0)$(cleanup_uids web-1) ]] || fail "a cleanup pod of ordinal 0 or 1 started while web-2's runs"
    e2e_claim_uids web 3 >"$work/uids-held"
    diff -q "$work/uids-before" "$work/uids-held" >/dev/null || fail "a claim changed while held: $(diff "$work/uids-before" "$work/uids-held")"
    ok "8s later: the delete held (finalizer), cleanup pod web-2 the same and Running, no other cleanup pod, every claim there"

    step "the cleanup released: ordinal 2 drained, then ordinals 0 and 1, then the StatefulSet goes"
    for i in 0 1 2; do echo released >"${dirs[$i]}/release-the-drain"; done
    deadline=$((SECONDS + 240))
    while k get statefulset web >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "statefulset/web is still there: finalizers $(jp statefulset/web '{.metadata.finalizers}'), phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', $(k get pods,pvc -o name | paste -sd' ')"
      sleep 0.5
    done
    for i in 0 1 2; do
      assert_drained_by "$i"
      uids=$(cleanup_uids "web-$i")
      [[ $(wc -l <<<"$uids") == 1 && -n $uids ]] || fail "not one cleanup pod web-$i: $(paste -sd' ' <<<"$uids")"
      seen_succeeded "$uids" || fail "the cleanup pod web-$i ($uids) was never seen Succeeded"
    done
    [[ $(cleanup_uids web-2) == "$cleanup_uid" ]] || fail "web-2's cleanup pod was replaced"
    ok "one cleanup pod per ordinal, each Succeeded on its own claim as its replica (web-2's the one that held)"
    assert_nothing_left
    e2e_stop_controller "$controller_pid"
    e2e_replay "$work/journal.db"
    operations=$("$stsresize" journal list --journal "$work/journal.db" | grep -c "web-")
    ((operations == 2)) || fail "the journal holds $operations operations, not 2 (the scale-down's drain, the delete's): $("$stsresize" journal list --journal "$work/journal.db")"
    ok "the journal replays (exit 0): the scale-down's drain and the delete's"
    ;;

  orphan_during_drain)
    step "scale 3 -> 2 with a cleanup command that holds"
    scale_down_to_held_drain
    # What a GitOps tool applies again: the StatefulSet as declared (no server fields, no
    # stsresize state).
    k get statefulset web -o json | jq 'del(.status, .metadata.uid, .metadata.resourceVersion,
        .metadata.generation, .metadata.creationTimestamp, .metadata.managedFields,
        .metadata.finalizers)
      | .metadata.annotations |= with_entries(select(.key | startswith("stsresize.dev/") | not))' \
      >"$work/applied.json"

    step "kubectl delete sts web --cascade=orphan while the cleanup holds: not held, nothing drained"
    started=$SECONDS
    k delete statefulset web --cascade=orphan --wait=false >/dev/null
    deadline=$((SECONDS + 60))
    while k get statefulset web >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "statefulset/web is still there $((SECONDS - started))s after the orphan delete: finalizers $(jp statefulset/web '{.metadata.finalizers}'), phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')'"
      sleep 0.2
    done
    held=$((SECONDS - started))
    e2e_wait_event web '^OrphanDeleteNotDrained: '
    e2e_wait_event web '^DrainCancelled: .*orphan'
    ok "the StatefulSet gone ${held}s after the orphan delete: $event"
    deadline=$((SECONDS + 30))
    while k get pod web-2 >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "the cleanup pod web-2 is still there"
      sleep 0.5
    done
    seen_succeeded "$cleanup_uid" && fail "the cleanup pod $cleanup_uid was seen Succeeded: it was let go"
    [[ ! -e ${dirs[2]}/drained-by ]] || fail "the cleanup of web-2 ran to its end"
    ! grep -q '^drained by' "$nodesim_dir/pods/${ns}_web-2/cleanup.log" || fail "the cleanup of web-2 ran to its end"
    sleep 3 # time for a wrong drain to show
    e2e_claim_uids web 3 >"$work/uids-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "a claim changed: $(diff "$work/uids-before" "$work/uids-after")"
    [[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted"
    for i in 0 1; do
      [[ $(jp "pod/web-$i" '{.status.phase}') == Running ]] || fail "pod web-$i is not Running"
    done
    e2e_assert_data_intact web 3
    [[ $(cleanup_uids web-2) == "$cleanup_uid" && -z $(cleanup_uids web-0)$(cleanup_uids web-1) ]] ||
      fail "another cleanup pod was created: $(jq -r '.object.metadata.name' "$work/watch-cleanup-pods" | sort -u | paste -sd' ')"
    ok "cleanup pod web-2 deleted before it Succeeded; pods web-0/1 Running; all 3 claims the same uids, every file's sha256 as before"

    step "the StatefulSet applied again (2 replicas): ordinal 2 drained anew, its claim deleted only after that cleanup Succeeded"
    echo released >"${dirs[2]}/release-the-drain"
    k apply -f "$work/applied.json" >/dev/null
    deadline=$((SECONDS + 180))
    while k get pvc data-web-2 >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "data-web-2 is still there: phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', $(k get pods -o name | paste -sd' ')"
      sleep 0.5
    done
    assert_drained_by 2
    second=$(cleanup_uids web-2 | grep -vx "$cleanup_uid" || true)
    [[ -n $second && $(wc -l <<<"$second") == 1 ]] || fail "not one new cleanup pod web-2: '$second'"
    seen_succeeded "$second" || fail "the new cleanup pod web-2 ($second) was never seen Succeeded"
    ok "a new cleanup pod web-2 ($second) Succeeded on data-web-2; the claim then deleted"
    e2e_wait_completed web 60
    sts_uid=$(jp statefulset/web '{.metadata.uid}')
    for i in 0 1; do
      [[ $(jp "pod/web-$i" '{.metadata.ownerReferences[0].uid}') == "$sts_uid" ]] || fail "web-$i was not adopted by the StatefulSet applied again"
    done
    e2e_claim_uids web 2 >"$work/uids-final"
    diff -q <(head -n 2 "$work/uids-before") "$work/uids-final" >/dev/null || fail "data-web-0/1 changed: $(diff <(head -n 2 "$work/uids-before") "$work/uids-final")"
    e2e_assert_data_intact web 2
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left"
    ok "web-0/1 adopted, their claims the same uids with every file's sha256; no cleanup pod left"
    e2e_stop_controller "$controller_pid"
    e2e_replay "$work/journal.db"
    ok "the journal replays (exit 0)"
    ;;
esac
