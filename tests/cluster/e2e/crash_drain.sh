#!/usr/bin/env bash
# kill -9 at every boundary and every side effect of a scale-down drain, on the local control
# plane, with real data and a cleanup command that does real work: the drain converges, nothing
# is done twice, and its journal replays.
#
# StatefulSet web: 3 replicas of 1Gi on sim-fixed with random data (e2e_statefulset), opted in to
# the drain (statefulsets.kubernetes.io/scaledown-pod-template). The cleanup command reads every
# file of the volume it drains and writes the sha256 of each (sha256sum, in the pod) into
# .drain-manifest in that volume, written whole (a temporary file renamed), with a line naming
# the hostname it ran as. A reader on the host copies each manifest out of the volume before the
# claim goes (it fails if the claim went first); the test compares it with the checksums it took
# on the host before the scale-down: the cleanup read every file, and read it whole.
# Scaled 3 -> 1 with no controller running; then `stsresize run --max-parallel-drains 1` (one
# ordinal at a time: 2, then 1, a fixed order of side effects) is started again and again with
# the failpoint test hook armed (STSRESIZE_FAILPOINT, adapters/failpoint/failpoint.h), each
# process SIGKILLing itself at its first boundary of the position chosen for it:
#   after-write       the first run (its first write: the drain's finalizer on the StatefulSet);
#                     after every after-annotation crash but the start's; and again after each
#                     after-write crash on anything but the StatefulSet: the side effects of a
#                     phase (cleanup pod created, cleanup pod deleted, claim deleted) one per
#                     process, until one process's first write is the StatefulSet's (the
#                     controller recording them)
#   after-annotation  the second run (the operation's start: its state annotation written with
#                     phase Pending), and after every after-journal crash (the restart resumes
#                     from the annotation, one phase behind: the same transition)
#   after-journal     after an after-write crash on the StatefulSet, and after the start's
#                     after-annotation crash (at Pending the next write is the transition to
#                     Draining, which an after-write run would pass without its after-journal)
# until the drain completed (no phase annotation, last-operation Completed); then:
# - every process died of SIGKILL (137) at the point it announced, the phase annotation the one
#   that point implies, and the object an after-write crash names as it says;
# - every drain transition (Pending -> Draining -> DeletingClaims -> Completed) was hit at
#   after-journal and after-annotation, the start at after-annotation, and after-write hit the
#   finalizer, a cleanup pod's create, a cleanup pod's delete and a claim's delete;
# - nothing was done twice: a watch on the pods labelled scaledown-pod saw one cleanup pod per
#   ordinal (one uid each);
# - the cleanup's work: the manifest of web-1 and of web-2, each written by the pod of that
#   hostname, lists every file of that volume with its sha256 as taken before;
# - data-web-1 and data-web-2 gone, data-web-0 the same uid with every file's sha256 as before,
#   1/1 Ready, no cleanup pod left;
# - `stsresize replay` exits 0, one operation, the one last-operation names, Completed.
# The crash points are printed last.
#   crash_drain.sh STSRESIZE_BINARY journal_kept|journal_lost
# journal_lost deletes journal.db after every crash: the controller resumes from the cluster
# alone (the replay then holds the last process's records, from its Resumed).
mode=${2:?journal_kept or journal_lost}
[[ $mode == journal_kept || $mode == journal_lost ]] || {
  echo "usage: $0 STSRESIZE_BINARY journal_kept|journal_lost" >&2
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
started=$SECONDS

# The boundaries each position must have hit ("<position> <what>").
want_points=(
  "after-annotation start -> Pending"
  "after-journal Pending -> Draining" "after-annotation Pending -> Draining"
  "after-journal Draining -> DeletingClaims" "after-annotation Draining -> DeletingClaims"
  "after-journal DeletingClaims -> Completed" "after-annotation DeletingClaims -> Completed"
  "after-write finalizer added" "after-write create cleanup pod" "after-write delete cleanup pod"
  "after-write delete claim"
)

# The cleanup command: the sha256 of every file of the drained volume (the files the test
# wrote, not the replica's id and marker), read in the pod, into /data/.drain-manifest.
# shellcheck disable=SC2016 # expanded in the pod
cleanup_script='set -eu
cd /data
host=$(cat /proc/sys/kernel/hostname)
{
  echo "hostname=$host"
  find . -type f ! -name id ! -name marker ! -name ".drain-manifest*" -print0 | xargs -0 -r sha256sum
} >/data/.drain-manifest.tmp
mv /data/.drain-manifest.tmp /data/.drain-manifest
echo "cleanup of $host: $(($(wc -l </data/.drain-manifest) - 1)) files read"'
template=$(jq -cn --arg script "$cleanup_script" '{
  metadata: {labels: {app: "web-drain"}},
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [{
      name: "cleanup",
      image: "docker.io/library/busybox:1.36",
      command: ["sh", "-c", $script],
      volumeMounts: [{name: "data", mountPath: "/data"}]
    }]
  }
}')

phase_now() { jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true; }
completed() {
  [[ -z $(phase_now) && $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null) == *Completed* ]]
}

step "StatefulSet web: 3 replicas of 1Gi on sim-fixed with random data, a cleanup pod template"
e2e_statefulset web sim-fixed 3
k annotate statefulset web "statefulsets.kubernetes.io/scaledown-pod-template=$template" >/dev/null
e2e_claim_uids web 3 >"$work/uids-before"
declare -A volume
for o in 1 2; do volume[$o]=$(pv_dir "data-web-$o"); done
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host"

# Every cleanup pod created (the initial list arrives as ADDED too), with its uid.
k get pods -l scaledown-pod --watch --output-watch-events \
  -o jsonpath='{.type} {.object.metadata.name} {.object.metadata.uid} {.object.status.phase}{"\n"}' \
  >>"$work/watch-cleanup-pods" 2>>"$work/watch-errors" &
watcher=$!
# Each cleanup's manifest, copied out of its volume before the claim (and the volume) goes.
readers=()
for o in 1 2; do
  (
    dir=${volume[$o]}
    while [[ -d $dir ]]; do
      if [[ -f $dir/.drain-manifest ]]; then
        cp "$dir/.drain-manifest" "$work/manifest-web-$o" && exit 0
      fi
      sleep 0.1
    done
    exit 1
  ) &
  readers+=("$!")
done
# shellcheck disable=SC2016 # expanded at exit
on_exit 'kill "$watcher" "${readers[@]}" 2>/dev/null; true'

step "scale 3 -> 1; crash the controller at every boundary and side effect of the drain ($mode)"
k scale statefulset web --replicas=1 >/dev/null
crashes=0
points=()
position=after-write
while ! completed; do
  ((crashes < 40)) || fail "still not completed after $crashes crashes: ${points[*]}"
  log=run-$crashes.log
  before=$(phase_now)
  STSRESIZE_FAILPOINT=$position:1 e2e_start_controller "$log" --max-parallel-drains 1
  pid=$controller_pid
  # bash reports a job killed by a signal ("Killed") when it reaps it: keep that out of the
  # output; the exit status below says it.
  deadline=$((SECONDS + 120))
  while kill -0 "$pid" && ((SECONDS < deadline)) && ! completed; do sleep 0.2; done 2>/dev/null
  if kill -0 "$pid" 2>/dev/null; then
    completed && fail "run $crashes ($position:1) completed the drain without the failpoint firing"
    fail "run $crashes ($position:1, phase ${before:-none}) still alive after 120s: $(tail -n 20 "$work/$log")"
  fi
  status=0
  { wait "$pid"; } 2>/dev/null || status=$?
  ((status == 137)) || fail "run $crashes ($position:1) exited $status, not 137 (SIGKILL): $(tail -n 30 "$work/$log")"
  at=$(grep -F '"failpoint fired"' "$work/$log" | jq -r .at) || true
  [[ -n $at ]] || fail "run $crashes died of SIGKILL without announcing the failpoint: $(tail -n 30 "$work/$log")"
  annotated=$(phase_now)
  case $position in
    after-journal | after-annotation)
      # "after-journal:1 operation <id>: A -> B" or "after-annotation:1 StatefulSet <ns>/web: A -> B";
      # the annotation's A or B is "(none)" at the ends: before the start and at Completed.
      transition=${at##*: }
      from=${transition%% -> *}
      to=${transition##* -> }
      if [[ $position == after-annotation ]]; then
        [[ $from == "(none)" ]] && from=start
        [[ $to == "(none)" ]] && to=Completed
        want=$to
      else
        want=$from
      fi
      [[ $want == Completed ]] && want=''
      [[ $annotated == "$want" ]] ||
        fail "run $crashes crashed at $at but the phase annotation is '${annotated:-none}', not '${want:-none}'"
      point="$position $from -> $to"
      ;;
    after-write)
      # "after-write:1 <verb> <Kind> <ns>/<name>[ (phase P, finalizers F)]"
      read -r _ verb kind object _ <<<"$at"
      name=${object#*/}
      case "$verb $kind" in
        "create Pod")
          [[ $(k get pod "$name" -o json 2>/dev/null | jq -r '.metadata.labels["scaledown-pod"] // empty') == "$name" ]] ||
            fail "run $crashes crashed after creating pod $name, which is not a cleanup pod: $(k get pods -o name | paste -sd' ')"
          point="after-write create cleanup pod"
          ;;
        "delete Pod")
          [[ -z $(k get pod "$name" -o jsonpath='{.metadata.name}' 2>/dev/null) ||
            -n $(jp "pod/$name" '{.metadata.deletionTimestamp}' 2>/dev/null) ]] ||
            fail "run $crashes crashed after deleting pod $name, which is there and not being deleted"
          point="after-write delete cleanup pod"
          ;;
        "delete PersistentVolumeClaim")
          [[ -z $(k get pvc "$name" -o jsonpath='{.metadata.name}' 2>/dev/null) ||
            -n $(jp "pvc/$name" '{.metadata.deletionTimestamp}' 2>/dev/null) ]] ||
            fail "run $crashes crashed after deleting claim $name, which is there and not being deleted"
          point="after-write delete claim"
          ;;
        "update StatefulSet")
          if ((crashes == 0)); then
            [[ $(jp statefulset/web '{.metadata.finalizers}') == *statefulsets.kubernetes.io/scaledown* ]] ||
              fail "run 0 crashed after its first write, the StatefulSet, but it has no drain finalizer"
            point="after-write finalizer added"
          else
            point="after-write state annotation (${at#*(})"
            point=${point%)}
          fi
          ;;
        *) fail "run $crashes crashed after an unexpected write: $at" ;;
      esac
      ;;
  esac
  points+=("$point")
  note "crash $((crashes + 1)): $point (annotation ${annotated:-none}; ${SECONDS}s so far)"
  crashes=$((crashes + 1))
  # The next position (see the header).
  case $position in
    after-write)
      if ((crashes == 1)); then
        position=after-annotation
      elif [[ $kind == StatefulSet ]]; then
        position=after-journal
      fi
      ;;
    after-journal) position=after-annotation ;;
    after-annotation)
      # At Pending the next write is the transition to Draining: after-journal first.
      if [[ $annotated == Pending ]]; then position=after-journal; else position=after-write; fi
      ;;
  esac
  if [[ $mode == journal_lost ]] && ! completed; then rm -f "$work/journal.db" "$work/journal.db-wal" "$work/journal.db-shm"; fi
done
ok "completed after $crashes crashes, each a SIGKILL at the point it announced"

step "every transition at both positions, every kind of side effect at after-write"
# A loop, not `printf | grep -q`: grep quits at the first match, and under pipefail the
# printf it leaves writing into a closed pipe (SIGPIPE) would fail the check.
crashed_at() {
  local point
  for point in "${points[@]}"; do [[ $point == "$1" ]] && return 0; done
  return 1
}
for p in "${want_points[@]}"; do
  crashed_at "$p" || fail "no crash $p; crashes: $(printf '%s; ' "${points[@]}")"
done
ok "${#want_points[@]} boundaries, $crashes crashes"

step "nothing created twice: one cleanup pod per ordinal"
kill -0 "$watcher" 2>/dev/null || fail "the watch of the cleanup pods ended early: $(cat "$work/watch-errors")"
created=$(awk '$1 == "ADDED" { print $2, $3 }' "$work/watch-cleanup-pods" | sort -u)
[[ $(awk '{ print $1 }' <<<"$created" | sort | uniq -d) == '' ]] || fail "a cleanup pod was created more than once: $created"
[[ $(awk '{ print $1 }' <<<"$created" | paste -sd' ') == "web-1 web-2" ]] || fail "want one cleanup pod web-1 and one web-2, saw: $created"
ok "cleanup pods: $(paste -sd' ' <<<"$created")"

step "the cleanup's work: each manifest lists every file of its volume with its sha256"
for i in "${!readers[@]}"; do
  wait "${readers[$i]}" || fail "data-web-$((i + 1)) went before its cleanup's manifest was seen"
done
for o in 1 2; do
  manifest=$work/manifest-web-$o
  [[ $(head -n 1 "$manifest") == "hostname=web-$o" ]] || fail "the manifest of web-$o was written by: $(head -n 1 "$manifest")"
  tail -n +2 "$manifest" | LC_ALL=C sort -k2 >"$work/read-web-$o"
  LC_ALL=C sort -k2 "$work/before-web-$o" | diff - "$work/read-web-$o" >"$work/read-web-$o.diff" ||
    fail "the cleanup of web-$o did not read every file whole (< before, > read): $(head -n 20 "$work/read-web-$o.diff")"
  ok "web-$o: the cleanup, hostname web-$o, read all $(wc -l <"$work/read-web-$o") files, every sha256 as before"
done

step "end state: data-web-1/2 gone, data-web-0 untouched, 1/1 Ready, no cleanup pod left"
for o in 1 2; do
  ! k get pvc "data-web-$o" >/dev/null 2>&1 || fail "data-web-$o is still there"
done
[[ $(e2e_claim_uids web 1) == "$(head -n 1 "$work/uids-before")" ]] || fail "data-web-0 changed: $(e2e_claim_uids web 1)"
e2e_assert_data_intact web 1
k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready"
[[ $(jp statefulset/web '{.status.readyReplicas}') == 1 ]] || fail "readyReplicas is not 1"
[[ $(jp pod/web-0 '{.status.conditions[?(@.type=="Ready")].status}') == True ]] || fail "web-0 is not Ready"
[[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left: $(k get pods -l scaledown-pod -o name)"
ok "no claim data-web-1/2; data-web-0 the same uid, every sha256 as before; web-0 Ready; no cleanup pod"

step "the journal replays"
e2e_replay "$work/journal.db"
operation=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' | jq -r .id)
grep -q "^operation $operation ($ns/web): Completed" <<<"$replay" ||
  fail "operation $operation does not replay to Completed: $replay"
grep '^operation ' <<<"$replay" | sed 's/^/    /'
if [[ $mode == journal_kept ]]; then
  (($(grep -c '^operation ' <<<"$replay") == 1)) || fail "the journal holds more than one operation: $replay"
  ok "exit 0: one operation, $operation, Completed"
else
  ok "exit 0: $operation Completed"
fi

step "crash points ($mode, $((SECONDS - started))s)"
printf '    %s\n' "${points[@]}"
