#!/usr/bin/env bash
# kill -9 at every transition boundary, on the local control plane, with real data: the same
# end state as an uninterrupted resize.
#
# 3 replicas with random data (e2e_statefulset), an explicit request for 2Gi; then `stsresize
# run` is started again and again with the failpoint test hook armed (STSRESIZE_FAILPOINT,
# adapters/failpoint/failpoint.h) so that each process SIGKILLs itself at its first boundary,
# alternating after-journal:1 (the transition journaled, the annotation not yet written) and
# after-annotation:1 (the annotation written: the boundary proper). An after-journal crash is
# followed by an after-annotation one at the same transition (the restart resumes from the
# annotation, one phase behind), so every transition is hit at both positions. Until the
# operation completes; then:
# - every process died of SIGKILL (137) at the point it announced, and the phase annotation
#   at each crash is the one that point implies;
# - every transition of the path (9 copy, 4 expansion) was hit at both positions;
# - nothing was created twice (a watch records every uid): each backup claim and copy Job once,
#   each source claim and the StatefulSet re-created at most once (expansion: the claims and
#   pods never);
# - sim-fixed takes the rebind path (the controller runs as the cluster's admin, who may get and
#   patch PersistentVolumes): one copy Job per claim, no restore Job; each claim ends bound to the
#   volume its backup claim was bound to (the copy's, seen by the watch, so journal-lost too;
#   journal-kept: also the one the journal's VolumeRetained names), every volume left Bound to
#   its claim with reclaim policy Delete, no volume of the old claims and no copy's left over
#   (rebind_assert_volumes); journal-kept: Planned says "Rebind path" and every policy put back
#   was journaled (ReclaimPolicyRestored, two distinct rows per claim);
# - e2e_assert_resized (sizes, sha256 of every file, 3/3 Ready, templates, nothing left), and
#   `stsresize replay` exits 0 with one operation, the one named by last-operation, Completed.
# The crash points are printed last.
#   crash_at_each_boundary.sh STSRESIZE_BINARY journal-kept|journal-lost [sim-fixed|sim-expandable|rolling]
# journal-lost deletes journal.db after every crash: the controller resumes from the cluster
# alone (the journal then holds the last process's records, from its Resumed event).
# sim-fixed (default) takes the copy path, sim-expandable the expansion path.
# rolling: sim-fixed with stsresize.dev/strategy: rolling (states/rolling.h), one ordinal at a time
# (StoppingReplica -> BackingUp -> Recreating -> Restoring -> StartingReplica -> CleaningUp, for
# ordinals 2, 1, 0). Besides every transition at both positions, while the first ordinal is in
# StoppingReplica or StartingReplica each process dies after its first write (after-write:1),
# one act per process: the pause (the finalizer, the Background delete), the eviction, and the
# resume (the Orphan delete, the definition's ConfigMap, the finalizer removed, the StatefulSet
# created again, the ConfigMap deleted), each a boundary the journal does not mark. Then also:
# at every instant (replaying a watch of the pods) at least 2 of the 3 pods Ready and not being
# deleted; each pod replaced exactly once (2 uids per name); the StatefulSet created 5 times
# (the request's re-create, then one per ordinal), no more; it ends not paused.
mode=${2:?journal-kept or journal-lost}
class=${3:-sim-fixed}
[[ $mode == journal-kept || $mode == journal-lost ]] || {
  echo "mode must be journal-kept or journal-lost, not $mode" >&2
  exit 2
}
[[ $class == sim-fixed || $class == sim-expandable || $class == rolling ]] || {
  echo "the class must be sim-fixed, sim-expandable or rolling, not $class" >&2
  exit 2
}
rolling=0
if [[ $class == rolling ]]; then
  rolling=1
  class=sim-fixed
fi
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# The path of an explicit request, as the failpoint names the transitions.
if ((rolling)); then
  transitions=("Pending -> UpdatingTemplate" "UpdatingTemplate -> Planning" "Planning -> PreCopying"
    "PreCopying -> StoppingReplica" "StoppingReplica -> BackingUp" "BackingUp -> Recreating"
    "Recreating -> Restoring" "Restoring -> StartingReplica" "StartingReplica -> CleaningUp"
    "CleaningUp -> StoppingReplica" "CleaningUp -> Completed")
  # The acts of the pause and the resume, each hit by after-write in the first ordinal.
  acts=("update StatefulSet" "delete StatefulSet" "evict Pod" "create ConfigMap" "create StatefulSet"
    "delete ConfigMap")
elif [[ $class == sim-fixed ]]; then
  transitions=("Pending -> UpdatingTemplate" "UpdatingTemplate -> Planning" "Planning -> PreCopying"
    "PreCopying -> ScalingDown" "ScalingDown -> BackingUp" "BackingUp -> Recreating" "Recreating -> Restoring"
    "Restoring -> ScalingUp" "ScalingUp -> CleaningUp" "CleaningUp -> Completed")
else
  transitions=("Pending -> UpdatingTemplate" "UpdatingTemplate -> Planning" "Planning -> Expanding"
    "Expanding -> Completed")
fi
positions=(after-journal after-annotation)

e2e_init "${1:?path to the stsresize binary}"
# shellcheck source-path=SCRIPTDIR source=rebind_lib.sh
source "$(dirname "$0")/rebind_lib.sh"
use_namespace
started=$SECONDS

phase_now() { jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true; }
completed() {
  [[ -z $(phase_now) && $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null) == *Completed* ]]
}

step "StatefulSet web: 3 replicas, claims of 1Gi on $class, random data in every volume"
e2e_statefulset web "$class" 3
if ((rolling)); then
  k annotate statefulset web stsresize.dev/strategy=rolling >/dev/null
  # A failure would leave the finalizer holding the namespace's deletion: removed last.
  # shellcheck disable=SC2016 # expanded at exit
  on_exit 'k patch statefulset web --type merge -p '\''{"metadata":{"finalizers":null}}'\'' >/dev/null 2>&1; true'
fi
pod_uids_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host"

rebind_claim_volumes web 3 >"$work/volumes-before"
mapfile -t volumes_before < <(awk '{ print $2 }' "$work/volumes-before")

# Every create the namespace sees, with its uid (the initial list arrives as ADDED too), and the
# volume each claim names (a backup claim's, once bound, is its copy's volume).
for kind in pvc jobs statefulsets; do
  k get "$kind" --watch --output-watch-events \
    -o jsonpath='{.type} {.object.kind} {.object.metadata.name} {.object.metadata.uid} {.object.spec.volumeName}{"\n"}' \
    >>"$work/watch-$kind" 2>>"$work/watch-errors" &
  watchers+=("$!")
done
if ((rolling)); then
  # "type name uid deleting ready" of every pod change: what Ready was at every instant.
  k get pods -l app=web --watch --output-watch-events \
    -o jsonpath='{.type} {.object.metadata.name} {.object.metadata.uid} {.object.metadata.deletionTimestamp}x {.object.status.conditions[?(@.type=="Ready")].status}x{"\n"}' \
    >>"$work/pods" 2>>"$work/watch-errors" &
  watchers+=("$!")
fi
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; done; true'

step "request 2Gi through the annotation; crash the controller at each boundary ($mode, $class)"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
crashes=0
points=()
boundaries=0   # crashes at after-journal or after-annotation: they alternate
first_round=1  # rolling: the first ordinal not yet past StartingReplica
writing=0      # rolling, first ordinal: in StoppingReplica or StartingReplica (after-write)
while ! completed; do
  ((crashes < 120)) || fail "still not completed after $crashes crashes: ${points[*]}"
  before=$(phase_now)
  position=${positions[boundaries % 2]}
  [[ $before == CleaningUp ]] && first_round=0
  if ((rolling && first_round)); then
    # No phase in between: the object gone for a moment while the resume creates it again.
    if [[ $before == StoppingReplica || $before == StartingReplica ]]; then
      writing=1
    elif [[ -n $before ]]; then
      writing=0
    fi
    ((writing)) && position=after-write
  fi
  log=run-$crashes.log
  STSRESIZE_FAILPOINT=$position:1 e2e_start_controller "$log"
  pid=$controller_pid
  # bash reports a job killed by a signal ("Killed") when it reaps it: keep that out of the
  # output; the exit status below says it.
  deadline=$((SECONDS + 120))
  while kill -0 "$pid" && ((SECONDS < deadline)) && ! completed; do sleep 0.2; done 2>/dev/null
  if kill -0 "$pid" 2>/dev/null; then
    completed && fail "run $crashes ($position:1) completed the operation without the failpoint firing"
    fail "run $crashes ($position:1, from ${before:-no phase}) still alive after 120s: $(tail -n 20 "$work/$log")"
  fi
  status=0
  { wait "$pid"; } 2>/dev/null || status=$?
  ((status == 137)) || fail "run $crashes ($position:1) exited $status, not 137 (SIGKILL): $(tail -n 30 "$work/$log")"
  at=$(grep -F '"failpoint fired"' "$work/$log" | jq -r .at) || true
  [[ -n $at ]] || fail "run $crashes died of SIGKILL without announcing the failpoint: $(tail -n 30 "$work/$log")"
  if [[ $position == after-write ]]; then
    # "after-write:1 <verb> <Kind> <ns>/<name>[ (phase P, finalizers F)]": one act per process
    # (a restart that wrote the same thing first every time would never get further: the bound
    # on the crashes above ends it).
    read -r _ verb kind object _ <<<"$at"
    points+=("after-write $verb $kind")
    note "crash $((crashes + 1)): after-write $verb $kind $object in ${before:-no phase (no StatefulSet)} (annotation $(phase_now); ${SECONDS}s so far)"
    crashes=$((crashes + 1))
    if [[ $mode == journal-lost ]] && ! completed; then rm -f "$work/journal.db" "$work/journal.db-wal" "$work/journal.db-shm"; fi
    continue
  fi
  boundaries=$((boundaries + 1))
  # "after-journal:1 operation <id>: A -> B" or "after-annotation:1 StatefulSet <ns>/web: A -> B";
  # the annotation's A or B is "(none)" at the ends: Pending and Completed.
  transition=${at##*: }
  from=${transition%% -> *}
  to=${transition##* -> }
  if [[ $position == after-annotation ]]; then
    [[ $from == "(none)" ]] && from=Pending
    [[ $to == "(none)" ]] && to=Completed
    want=$to
  else
    want=$from
  fi
  [[ $want == Pending || $want == Completed ]] && want=''
  annotated=$(phase_now)
  [[ $annotated == "$want" ]] ||
    fail "run $crashes crashed at $at but the phase annotation is '${annotated:-none}', not '${want:-none}'"
  points+=("$position $from -> $to")
  note "crash $((crashes + 1)): $position at $from -> $to (annotation ${annotated:-none}; run took ${SECONDS}s so far)"
  crashes=$((crashes + 1))
  if [[ $mode == journal-lost ]] && ! completed; then rm -f "$work/journal.db" "$work/journal.db-wal" "$work/journal.db-shm"; fi
done
ok "completed after $crashes crashes, each a SIGKILL at the point it announced"

step "every transition of the path crashed at both positions"
((crashes >= ${#transitions[@]})) || fail "only $crashes crashes for ${#transitions[@]} transitions"
# A loop, not `printf | grep -q`: grep quits at the first match, and under pipefail the
# printf it leaves writing into a closed pipe (SIGPIPE) would fail the check.
crashed_at() {
  local point
  for point in "${points[@]}"; do [[ $point == "$1" ]] && return 0; done
  return 1
}
for t in "${transitions[@]}"; do
  for p in "${positions[@]}"; do
    crashed_at "$p $t" || fail "no crash $p at $t; crashes: $(printf '%s; ' "${points[@]}")"
  done
done
ok "${#transitions[@]} transitions x ${#positions[@]} positions, $crashes crashes"
if ((rolling)); then
  for a in "${acts[@]}"; do
    crashed_at "after-write $a" || fail "no crash after-write $a; crashes: $(printf '%s; ' "${points[@]}")"
  done
  ok "and after each act of the pause and the resume: ${acts[*]}"
fi

step "nothing created twice"
for p in "${watchers[@]}"; do kill -0 "$p" 2>/dev/null || fail "a watch ended early: $(cat "$work/watch-errors")"; done
# uids per object name, from every ADDED event seen
uids() { awk -v kind="$1" '$1 == "ADDED" && $2 == kind { print $3, $4 }' "$work"/watch-* | sort -u; }
# The volume a claim was last seen bound to (for a backup claim: its copy's volume).
last_volume() { awk -v claim="$1" '$3 == claim && $5 != "" { v = $5 } END { print v }' "$work/watch-pvc"; }
twice=$(uids PersistentVolumeClaim | awk '$1 ~ /stsresize/ { n[$1]++ } END { for (c in n) if (n[c] > 1) print c }')
[[ -z $twice ]] || fail "backup claims created more than once: $twice"
twice=$(uids Job | awk '{ n[$1]++ } END { for (c in n) if (n[c] > 1) print c }')
[[ -z $twice ]] || fail "copy Jobs created more than once: $twice"
if [[ $class == sim-fixed ]]; then recreated=2; else recreated=1; fi
twice=$(uids PersistentVolumeClaim | awk -v max=$recreated '$1 !~ /stsresize/ { n[$1]++ } END { for (c in n) if (n[c] > max) print c }')
[[ -z $twice ]] || fail "source claims created more than $recreated time(s): $twice"
if ((rolling)); then
  sts_uids=$(uids StatefulSet | wc -l)
  ((sts_uids == 5)) || fail "$sts_uids StatefulSet uids, want 5 (the first, the request's re-create, one per ordinal): $(uids StatefulSet | paste -sd' ')"
  pod_uids=$(awk '$1 == "ADDED" { print $2, $3 }' "$work/pods" | sort -u)
  [[ $(awk '{ n[$1]++ } END { for (p in n) printf "%s=%d ", p, n[p] }' <<<"$pod_uids" | tr ' ' '\n' | sort | paste -sd' ') == "web-0=2 web-1=2 web-2=2" ]] ||
    fail "each pod must be replaced exactly once (2 uids per name): $(paste -sd' ' <<<"$pod_uids")"
  # Ready pods at every instant: an event's pod state replaces that pod's previous one.
  min_ready=$(awk '{ name = $2; if ($1 == "DELETED") delete ready[name]; else ready[name] = ($4 == "x" && $5 == "Truex")
      n = 0; for (p in ready) n += ready[p]; if (NR > 3 && (min == "" || n < min)) min = n } END { print min }' "$work/pods")
  ((min_ready >= 2)) || fail "only $min_ready pods Ready at some instant (want at least 2 of 3): $(cat "$work/pods")"
  [[ -z $(jp statefulset/web '{.metadata.deletionTimestamp}') && $(jp statefulset/web '{.metadata.finalizers}') != *stsresize.dev/rolling* ]] ||
    fail "the StatefulSet is still paused at the end"
  ok "5 StatefulSet uids; each pod replaced exactly once; at least $min_ready of 3 pods Ready at every instant; not paused"
else
  twice=$(uids StatefulSet | awk '{ n[$1]++ } END { for (c in n) if (n[c] > 2) print c }')
  [[ -z $twice ]] || fail "the StatefulSet was re-created more than once"
fi
backups=$(uids PersistentVolumeClaim | awk '$1 ~ /stsresize/' | wc -l)
jobs=$(uids Job | wc -l)
if [[ $class == sim-fixed ]]; then
  pre_copies=$(uids Job | awk '$1 ~ /-stsresize-precopy$/' | wc -l)
  ((backups == 3 && jobs == 6 && pre_copies == 3)) || fail "want 3 backup claims and 6 Jobs (the rebind path: a pre-copy and one copy per claim), each created once; saw $backups claims, $jobs Jobs of which $pre_copies pre-copies"
  ok "3 backup claims, 3 pre-copy and 3 copy Jobs (one copy per claim), each created once; each source claim re-created once$( ((rolling)) || echo ', and the StatefulSet')"
else
  ((backups == 0 && jobs == 0)) || fail "expansion created $backups backup claims and $jobs Jobs"
  pod_uids_after=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
  [[ $pod_uids_after == "$pod_uids_before" ]] || fail "expansion restarted pods: $pod_uids_before -> $pod_uids_after"
  ok "no backup claim or Job; the claims never re-created; the same pods throughout"
fi

step "end state: as after an uninterrupted resize"
e2e_assert_resized web 3 2Gi
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
# The operation that the StatefulSet's last-operation names replays to Completed.
operation=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' | jq -r .id)
grep -q "^operation $operation ($ns/web): Completed" <<<"$replay" ||
  fail "operation $operation does not replay to Completed: $replay"
grep '^operation ' <<<"$replay" | sed 's/^/    /'
# A crash between journaling the start and writing the first annotation must not leave a second
# operation "in progress" in the journal: the restart carries on with the journaled one.
(($(grep -c '^operation ' <<<"$replay") == 1)) || fail "the journal holds more than one operation: $replay"
ok "journal replays consistently: one operation, $operation, Completed"

if [[ $class == sim-fixed ]]; then
  step "the rebind path: each claim on its copy's volume, the volumes' policies back, no volume left"
  for i in 0 1 2; do
    claim=data-web-$i
    copy=$(last_volume "$claim-stsresize-bak")
    [[ -n $copy ]] || fail "the watch never saw $claim-stsresize-bak bound"
    [[ $(jp "pvc/$claim" '{.spec.volumeName}') == "$copy" ]] ||
      fail "pvc/$claim is bound to $(jp "pvc/$claim" '{.spec.volumeName}'), not its copy's volume $copy (the backup claim's)"
    [[ " ${volumes_before[*]} " != *" $copy "* ]] || fail "the copy of $claim is on an old volume $copy"
  done
  ok "each claim bound to the volume its backup claim held (its copy)"
  if [[ $mode == journal-kept ]]; then
    planned=$(rebind_planned "$work/journal.db")
    [[ $planned == "Rebind path, "* ]] || fail "Planned says: $planned"
    # Distinct rows: a crash between journaling a transition and its annotation write resumes
    # from the annotation, which holds neither the transition nor the progress journaled since
    # the last act before it: that progress is journaled again after the Resumed.
    copies=$(rebind_retained "$work/journal.db" copy | awk '{ print $1, $2 }' | sort -u)
    [[ $copies == "$(for i in 0 1 2; do echo "data-web-$i $(jp "pvc/data-web-$i" '{.spec.volumeName}')"; done)" ]] ||
      fail "the journal's copies ($copies) are not the claims' volumes"
    restored=$(_rebind_rows "$work/journal.db" ReclaimPolicyRestored | sort -u | grep -c . || true)
    ((restored == 6)) || fail "$restored distinct ReclaimPolicyRestored rows, not 6 (two per claim)"
    ok "journal: Planned \"${planned:0:40}...\", the copies journaled are the claims' volumes, 6 policies put back"
  fi
  rebind_assert_volumes web 3 Delete 60 "${volumes_before[@]}"
else
  rebind_assert_volumes web 3 Delete 5
fi

step "crash points ($mode, $class, $((SECONDS - started))s)"
printf '    %s\n' "${points[@]}"
