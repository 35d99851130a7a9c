#!/usr/bin/env bash
# Deleting a StatefulSet that opts in to the drain (statefulsets.kubernetes.io/scaledown-pod-
# template), on the local control plane with real data. StatefulSet web, 2 replicas of 1Gi on
# sim-fixed, random data in every volume (e2e_statefulset); its cleanup pod writes a file naming
# its hostname into the volume it drains and exits 0. `stsresize run` puts the finalizer
# statefulsets.kubernetes.io/scaledown on it (Event FinalizerAdded). Then:
#   background  `kubectl delete sts web`: every ordinal is drained — a cleanup pod web-0 and
#               web-1 each Succeeded on its own claim (the file it wrote is seen on the volume
#               before it goes) — then both claims are deleted, the finalizer removed (Event
#               DeletionDrained) and the StatefulSet gone; no pod, no claim left; the journal
#               replays (exit 0).
#   orphan      `kubectl delete sts web --cascade=orphan`: not a scale-down. The StatefulSet is
#               gone at once (Event OrphanDeleteNotDrained), its pods still run, both claims keep
#               their uids and every file its sha256; no cleanup pod was ever created.
#   drain_delete.sh STSRESIZE_BINARY background|orphan
case_name=${2:?background or orphan}
[[ $case_name == background || $case_name == orphan ]] || {
  echo "usage: $0 STSRESIZE_BINARY background|orphan" >&2
  exit 2
}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# A finalizer left by a failure would hold the namespace's deletion: removed last.
# shellcheck disable=SC2016 # expanded at exit
on_exit 'k patch statefulset web --type merge -p '\''{"metadata":{"finalizers":null}}'\'' >/dev/null 2>&1; true'
e2e_init "${1:?path to the stsresize binary}"
use_namespace

template='{"metadata":{"labels":{"app":"web-drain"}},"spec":{"containers":[{"name":"cleanup","image":"docker.io/library/busybox:1.36","command":["sh","-c","echo \"drained by $(cat /proc/sys/kernel/hostname)\" > /data/drained-by"],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}'

step "StatefulSet web: 2 replicas of 1Gi on sim-fixed with random data, a cleanup pod template"
e2e_statefulset web sim-fixed 2
k annotate statefulset web "statefulsets.kubernetes.io/scaledown-pod-template=$template" >/dev/null
e2e_claim_uids web 2 >"$work/uids-before"
pvs=$(k get pvc -o jsonpath='{range .items[*]}{.spec.volumeName}{"\n"}{end}')
k get pods -l scaledown-pod --watch --output-watch-events -o json >>"$work/watch-cleanup-pods" 2>/dev/null &
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

events() {
  k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=web" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'
}

case $case_name in
  background)
    step "kubectl delete sts web: every ordinal drained, then the StatefulSet goes"
    # Each cleanup pod's file, read from its volume while the claim is still there.
    readers=()
    for i in 0 1; do
      dir=$(pv_dir "data-web-$i")
      (
        until [[ -f $dir/drained-by ]] || ! k get pvc "data-web-$i" >/dev/null 2>&1; do sleep 0.2; done
        cat "$dir/drained-by" >"$work/drained-by-$i" 2>/dev/null
        true
      ) &
      readers+=("$!")
    done
    k delete statefulset web --wait=false >/dev/null
    deadline=$((SECONDS + 240))
    while k get statefulset web >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "statefulset/web is still there: finalizers $(jp statefulset/web '{.metadata.finalizers}'), phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', $(k get pods,pvc -o name | paste -sd' ')"
      sleep 0.5
    done
    for p in "${readers[@]}"; do wait "$p" || true; done
    for i in 0 1; do
      [[ $(cat "$work/drained-by-$i" 2>/dev/null) == "drained by web-$i" ]] ||
        fail "the cleanup of ordinal $i did not run as web-$i on data-web-$i: '$(cat "$work/drained-by-$i" 2>/dev/null)'"
    done
    ok "cleanup pods web-0 and web-1 ran on their own claims, each as its replica"
    deadline=$((SECONDS + 60))
    while [[ -n $(k get pods,pvc -o name) ]]; do
      ((SECONDS > deadline)) && fail "left behind: $(k get pods,pvc -o name | paste -sd' ')"
      sleep 0.5
    done
    for pv in $pvs; do
      [[ ! -e $nodesim_dir/volumes/$pv ]] || fail "the directory of $pv is still there"
    done
    events | grep -q '^DeletionDrained: ' || fail "no Event DeletionDrained: $(events)"
    ok "no pod, no claim left, volumes reclaimed; $(events | grep -m1 '^DeletionDrained')"
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
    events | grep -q '^OrphanDeleteNotDrained: ' || fail "no Event OrphanDeleteNotDrained: $(events)"
    ok "$(events | grep -m1 '^OrphanDeleteNotDrained')"
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
esac
