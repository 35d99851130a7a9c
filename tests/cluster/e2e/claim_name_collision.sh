#!/usr/bin/env bash
# Two StatefulSets whose claim names collide, on the local control plane: web-db with template
# `data` and db with template `data-web` both give data-web-db-0. web-db (1 replica, selector
# <key>=web-db) makes the claim first and its pod appends to /data/writer.log all the time (a
# line: counter, pod, time); db (2 replicas, selector app=db) then finds data-web-db-0 there,
# so its pod db-0 mounts web-db's claim, while db-1 gets its own data-web-db-1 (random data).
# db is asked for 2Gi on sim-fixed (the copy path) with the controller running. Whatever
# happens, web-db's claim is never touched: every watch event of data-web-db-0 carries its
# first uid and no deletionTimestamp, no copy Job or backup claim is ever made for it, it stays
# 1Gi and Bound, web-db-0 is the same pod, never restarted, and its log has every line, counted
# without a gap, the last one written before the request and the last before the end included.
#   labelled    web-db's selector is app=web-db, so data-web-db-0 carries app=web-db, another
#               value for db's selector key: the planner (engine/planner.cc) leaves it out, and
#               says so (one Warning ClaimsLeftAlone naming it and why). db's resize plans 1
#               claim and completes: data-web-db-1 2Gi (a new claim) with every
#               file's sha256 as before, 2/2 Ready, templates 2Gi, nothing left; the controller
#               then stays idle (one operation in the journal, which replays to Completed).
#   unlabelled  web-db's selector is name=web-db, so data-web-db-0 has no label for db's key
#               `app` and is planned with data-web-db-1; Planning finds web-db-0, a pod of
#               another owner, mounting it (states/fence.cc, every pod of the namespace): Failed
#               in Planning saying so ("pod web-db-0 (StatefulSet web-db) mounts data-web-db-0,
#               a claim this StatefulSet's name and template give too ..."), a Warning
#               ResizeFailed, the label stsresize.dev/failed; db never stopped (the same pods,
#               2/2 Ready), data-web-db-1 1Gi with every sha256 as before; no backup claim or Job
#               was made; the journal replays to Failed.
#   claim_name_collision.sh STSRESIZE_BINARY labelled|unlabelled
case_name=${2:?labelled or unlabelled}
case $case_name in
  labelled) web_db_key=app ;;
  unlabelled) web_db_key=name ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY labelled|unlabelled" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

# manifest NAME TEMPLATE REPLICAS SELECTOR_KEY SCRIPT: a StatefulSet of 1Gi claims on sim-fixed
# whose pods run SCRIPT with the claim at /data.
manifest() {
  cat <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $1
spec:
  serviceName: $1
  replicas: $3
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      $4: $1
  template:
    metadata:
      labels:
        $4: $1
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
        command: [sh, -c, $(printf '%s' "$5" | jq -Rs .)]
        volumeMounts:
        - name: $2
          mountPath: /data
  volumeClaimTemplates:
  - metadata:
      name: $2
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: sim-fixed
      resources:
        requests:
          storage: 1Gi
EOF
}
# shellcheck disable=SC2016 # expanded by the pods' shell
writer='n=$(tail -n 1 /data/writer.log 2>/dev/null | cut -d" " -f1)
n=${n:-0}
while :; do
  n=$((n + 1))
  echo "$n $HOSTNAME $(date +%s%N)" >> /data/writer.log
  sleep 0.1
done'
# shellcheck disable=SC2016 # expanded by the pods' shell
idler='echo "$HOSTNAME" > "/data/id-$HOSTNAME"
exec sleep infinity'

# sha256 of every file but the pods' identity files.
checksums() {
  (cd "$(pv_dir "$1")" && find . -type f ! -name 'id-*' -print0 | sort -z | xargs -0 sha256sum)
}
writer_log() { echo "$(pv_dir data-web-db-0)/writer.log"; }
# The last complete line of web-db-0's log (the very last may be half written).
last_line() { tail -n 2 "$(writer_log)" | head -n 1; }
# Every complete line of web-db-0's log is web-db-0's, counted 1, 2, 3... without a gap, and
# each line recorded in $work/recorded is there.
assert_writer_log() {
  local file bad line
  file=$(writer_log)
  bad=$(head -n -1 "$file" | awk '$1 != NR || $2 != "web-db-0" { print "line " NR ": " $0; exit }')
  [[ -z $bad ]] || fail "web-db-0's writer.log has a gap or a foreign line at $bad"
  while read -r line; do
    grep -qxF "$line" "$file" || fail "web-db-0's writer.log lost \"$line\" (last there: $(tail -n 1 "$file"))"
  done <"$work/recorded"
  ok "web-db-0's writer.log: $(($(wc -l <"$file") - 1)) lines counted without a gap, the $(wc -l <"$work/recorded") recorded ones there"
}
pod_state() { jp pod/web-db-0 '{.metadata.uid} {.status.containerStatuses[0].restartCount}'; }

step "StatefulSet web-db (template data, selector $web_db_key=web-db): 1 writer on data-web-db-0"
manifest web-db data 1 "$web_db_key" "$writer" | k apply -f - >/dev/null
k rollout status statefulset/web-db --timeout=180s >/dev/null || fail "statefulset/web-db did not become ready"
wait_file "$(writer_log)" 30
sleep 1
web_db_pod=$(pod_state)
web_db_claim_uid=$(jp pvc/data-web-db-0 '{.metadata.uid}')
ok "web-db-0 writing: $(last_line); data-web-db-0 uid $web_db_claim_uid, labels $(jp pvc/data-web-db-0 '{.metadata.labels}')"

step "StatefulSet db (template data-web, selector app=db, 2 replicas): db-0 mounts data-web-db-0 too"
manifest db data-web 2 app "$idler" | k apply -f - >/dev/null
k rollout status statefulset/db --timeout=180s >/dev/null || fail "statefulset/db did not become ready"
[[ $(k get pvc -o name | sort | tr '\n' ' ') == "persistentvolumeclaim/data-web-db-0 persistentvolumeclaim/data-web-db-1 " ]] ||
  fail "want the claims data-web-db-0 and data-web-db-1 only: $(k get pvc -o name)"
[[ $(jp pvc/data-web-db-0 '{.metadata.uid}') == "$web_db_claim_uid" ]] || fail "data-web-db-0 was replaced"
[[ $(jp pod/db-0 '{.spec.volumes[?(@.name=="data-web")].persistentVolumeClaim.claimName}') == data-web-db-0 ]] ||
  fail "db-0 does not mount data-web-db-0: $(jp pod/db-0 '{.spec.volumes}')"
dir=$(pv_dir data-web-db-1)
mkdir -p "$dir/random"
for f in $(seq 1 100); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
checksums data-web-db-1 >"$work/before-db-1"
db_claim_uid=$(jp pvc/data-web-db-1 '{.metadata.uid}')
ok "db-0 on web-db's data-web-db-0, db-1 on data-web-db-1 ($(wc -l <"$work/before-db-1") random files)"

# Every event of every claim and Job from here on (the initial list arrives as ADDED too).
watchers=()
k get pvc --watch --output-watch-events \
  -o jsonpath='{.type} {.object.metadata.name} {.object.metadata.uid} {.object.metadata.deletionTimestamp}{"\n"}' \
  >>"$work/watch-pvc" 2>>"$work/watch-errors" &
watchers+=("$!")
k get jobs --watch --output-watch-events \
  -o jsonpath='{.type} {.object.metadata.name} {.object.spec.template.spec.volumes[*].persistentVolumeClaim.claimName}{"\n"}' \
  >>"$work/watch-jobs" 2>>"$work/watch-errors" &
watchers+=("$!")
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; done; true'
# What the watches saw done to web-db's claim: data-web-db-0 deleted, replaced or marked for
# deletion, a claim made for it (a backup), a Job other than db-1's copies or mounting it.
touched() {
  awk -v uid="$web_db_claim_uid" '$2 == "data-web-db-0" && ($1 != "ADDED" && $1 != "MODIFIED" || $3 != uid || $4 != "") ||
    $2 ~ /^data-web-db-0-/' "$work/watch-pvc"
  awk '$2 !~ /^data-web-db-1-stsresize-/ || / data-web-db-0( |$)/' "$work/watch-jobs"
}

step "start the controller; request 2Gi for db (sim-fixed: the copy path)"
db_pods=$(k get pods -l app=db -o jsonpath='{.items[*].metadata.uid}')
e2e_start_controller controller.log
last_line >"$work/recorded"
k annotate statefulset db 'stsresize.dev/resize={"data-web":{"storage":"2Gi"}}' >/dev/null
# Until db's operation ends either way (so that the wrong end fails at once); the phases seen.
deadline=$((SECONDS + 240))
phases=()
last_phase=''
while :; do
  phase=$(jp statefulset/db '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
  if [[ -n $phase && $phase != "$last_phase" ]]; then
    phases+=("$phase")
    last_phase=$phase
  fi
  [[ $phase == Failed ]] && break
  [[ -z $phase && $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null) == *Completed* ]] && break
  bad=$(touched)
  [[ -z $bad ]] || fail "in ${phase:-no phase}, web-db's claim was touched: $bad"
  ((SECONDS < deadline)) || fail "db's operation did not end in 240s (phases seen: ${phases[*]})"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.3
done
if [[ $case_name == labelled ]]; then
  [[ $phase != Failed ]] || fail "db's resize failed: $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/state}' | jq -r .failure)"
  ok "completed; phases seen: ${phases[*]}"
else
  [[ $phase == Failed ]] || fail "db's resize completed; phases seen: ${phases[*]}"
  ok "Failed; phases seen: ${phases[*]}"
fi
last_line >>"$work/recorded"
sleep 3  # anything the controller would still do to the claims, it does now

step "web-db's claim untouched, its writer never stopped"
for p in "${watchers[@]}"; do kill -0 "$p" 2>/dev/null || fail "a watch ended early: $(cat "$work/watch-errors")"; done
events=$(awk '$2 == "data-web-db-0"' "$work/watch-pvc")
[[ -n $events ]] || fail "the watch saw nothing of data-web-db-0: $(cat "$work/watch-pvc")"
bad=$(touched)
[[ -z $bad ]] || fail "web-db's claim was touched: $bad"
[[ $(jp pvc/data-web-db-0 '{.metadata.uid} {.spec.resources.requests.storage} {.status.phase}') == "$web_db_claim_uid 1Gi Bound" ]] ||
  fail "data-web-db-0 is now $(jp pvc/data-web-db-0 '{.metadata.uid} {.spec.resources.requests.storage} {.status.phase}')"
ok "data-web-db-0: $(wc -l <<<"$events") watch event(s), each uid $web_db_claim_uid without deletionTimestamp; 1Gi, Bound"
ok "no backup claim or copy Job for data-web-db-0"
[[ $(pod_state) == "$web_db_pod" ]] || fail "web-db-0 was replaced or restarted: $web_db_pod -> $(pod_state)"
[[ $(tail -n 2 "$(writer_log)" | head -n 1) != "$(tail -n 1 "$work/recorded")" ]] || fail "web-db-0 stopped writing"
assert_writer_log
ok "web-db-0 the same pod, never restarted, still writing"

if [[ $case_name == labelled ]]; then
  step "db: its own claim resized with its data, data-web-db-0 left out of the plan"
  started=$(k get events --field-selector 'involvedObject.kind=StatefulSet,involvedObject.name=db,reason=ResizeStarted' \
    -o jsonpath='{.items[0].message}')
  [[ $started == *"requested data-web 1Gi -> 2Gi (1 claim)"* ]] || fail "ResizeStarted: $started"
  left=$(e2e_warnings db | grep '^ClaimsLeftAlone: ' || true)
  [[ $(wc -l <<<"$left") == 1 && $left == *"leaves alone data-web-db-0 (label app=web-db; the selector says app=db)"* ]] ||
    fail "want one Warning ClaimsLeftAlone naming data-web-db-0 and why: $(e2e_warnings db)"
  ok "said: ${left:0:140}..."
  [[ $(jp pvc/data-web-db-1 '{.spec.resources.requests.storage} {.status.phase}') == "2Gi Bound" ]] ||
    fail "data-web-db-1 is $(jp pvc/data-web-db-1 '{.spec.resources.requests.storage} {.status.phase}')"
  [[ $(jp pvc/data-web-db-1 '{.metadata.uid}') != "$db_claim_uid" ]] || fail "data-web-db-1 was not replaced"
  checksums data-web-db-1 >"$work/after-db-1"
  diff -q "$work/before-db-1" "$work/after-db-1" >/dev/null || fail "data of data-web-db-1 differs: $(diff "$work/before-db-1" "$work/after-db-1" | head -n 5)"
  ok "data-web-db-1: a new claim of 2Gi, Bound, every file's sha256 unchanged"
  jobs=$(awk '$1 == "ADDED" { print $2 ":" $3 "," $4 }' "$work/watch-jobs" | sort -u | tr '\n' ' ')
  # The rebind path (the default) copies once: the backup Job only, no restore Job.
  [[ $jobs == "data-web-db-1-stsresize-backup:data-web-db-1,data-web-db-1-stsresize-bak data-web-db-1-stsresize-precopy:data-web-db-1,data-web-db-1-stsresize-bak " ]] ||
    fail "want one pre-copy and one backup Job of data-web-db-1 (and no other), mounting only its claim and backup claim: $jobs"
  ok "copy Jobs (source,destination): $jobs"
  k rollout status statefulset/db --timeout=120s >/dev/null || fail "statefulset/db is not ready again"
  [[ $(jp statefulset/db '{.spec.replicas} {.status.readyReplicas}') == "2 2" ]] || fail "db is not 2/2 Ready"
  [[ $(jp statefulset/db '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 2Gi ]] ||
    fail "db's template does not ask for 2Gi"
  [[ -z $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/resize}') ]] || fail "the request is still there"
  leftovers=$(k get pvc,jobs,configmaps -o name | grep stsresize || true)
  [[ -z $leftovers ]] || fail "left behind: $leftovers"
  ok "db 2/2 Ready, template 2Gi, request cleared, nothing left behind"
  [[ -z $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/phase}') ]] || fail "another operation started on db"
  e2e_stop_controller "$controller_pid"
  rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
  [[ $(jq -r .consistent <<<"$rows") == true ]] || fail "the journal is not consistent"
  [[ $(jq -r '[.operations[] | "\(.statefulset) \(.finalPhase)"] | join(",")' <<<"$rows") == "db Completed" ]] ||
    fail "want one operation of db, Completed: $(jq -c .operations <<<"$rows")"
  planned=$(jq -r '[.rows[] | select(.event == "Planned") | .details] | join("; ")' <<<"$rows")
  [[ $planned == *"1 claim"*"data-web-db-1"* && $planned != *"data-web-db-0"* ]] || fail "the plan: $planned"
  ok "the journal: one operation, Completed, planned \"$planned\""
else
  step "db: Failed in Planning saying which pod mounts which claim; nothing stopped, nothing made"
  state=$(jp statefulset/db '{.metadata.annotations.stsresize\.dev/state}')
  failure=$(jq -r .failure <<<"$state")
  [[ $failure == "pod web-db-0 (StatefulSet web-db) mounts data-web-db-0, a claim this StatefulSet's name and template give too: "* ]] ||
    fail "the failure does not say why: $failure"
  [[ $(jq -r .failedIn <<<"$state") == Planning ]] || fail "not failed in Planning: $(jq -r .failedIn <<<"$state")"
  ok "failure: ${failure:0:160}..."
  warnings=$(e2e_warnings db)
  grep -q "^ResizeFailed: .*pod web-db-0 (StatefulSet web-db) mounts data-web-db-0" <<<"$warnings" ||
    fail "no Warning ResizeFailed naming web-db-0: $warnings"
  [[ $(jp statefulset/db '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no stsresize.dev/failed label"
  ok "Warning ResizeFailed (the pod and claim), label stsresize.dev/failed"
  [[ $(k get pods -l app=db -o jsonpath='{.items[*].metadata.uid}') == "$db_pods" ]] ||
    fail "db's pods were stopped: before $db_pods, now $(k get pods -l app=db -o jsonpath='{.items[*].metadata.uid}')"
  ok "db's pods the same, never stopped"
  [[ -z $(cat "$work/watch-jobs") ]] || fail "copy Jobs were made: $(cat "$work/watch-jobs")"
  [[ -z $(awk '$2 ~ /stsresize/' "$work/watch-pvc") ]] || fail "backup claims were made: $(awk '$2 ~ /stsresize/' "$work/watch-pvc")"
  bad=$(awk -v uid="$db_claim_uid" '$2 == "data-web-db-1" && ($1 != "ADDED" && $1 != "MODIFIED" || $3 != uid || $4 != "")' "$work/watch-pvc")
  [[ -z $bad ]] || fail "data-web-db-1 was deleted, replaced or marked for deletion: $bad"
  [[ $(jp pvc/data-web-db-1 '{.spec.resources.requests.storage} {.status.phase}') == "1Gi Bound" ]] ||
    fail "data-web-db-1 is $(jp pvc/data-web-db-1 '{.spec.resources.requests.storage} {.status.phase}')"
  checksums data-web-db-1 >"$work/after-db-1"
  diff -q "$work/before-db-1" "$work/after-db-1" >/dev/null || fail "data of data-web-db-1 differs"
  ok "no Job or backup claim ever made; data-web-db-1 the same claim, 1Gi, every file's sha256 unchanged"
  k rollout status statefulset/db --timeout=120s >/dev/null || fail "statefulset/db is not ready again"
  [[ $(jp statefulset/db '{.spec.replicas} {.status.readyReplicas}') == "2 2" ]] || fail "db is not 2/2 Ready"
  ok "db 2/2 Ready"
  e2e_stop_controller "$controller_pid"
  rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay exited $?"
  [[ $(jq -r .consistent <<<"$rows") == true ]] || fail "the journal is not consistent"
  [[ $(jq -r '[.operations[] | "\(.statefulset) \(.finalPhase)"] | join(",")' <<<"$rows") == "db Failed" ]] ||
    fail "want one operation of db, Failed: $(jq -c .operations <<<"$rows")"
  ok "the journal: one operation, Failed"
fi
