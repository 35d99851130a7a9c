#!/usr/bin/env bash
# The warm pre-copy (PreCopying) on the local control plane, with replicas that keep writing:
# 3 replicas of a writer (every 0.1 s a new file w/N holding N, then `last` = N) on sim-fixed,
# 16 MiB of random data in each volume besides; a request for 2Gi. Then:
#   - while PreCopying, the replicas are 3/3 Ready and write (their highest N grows), and each
#     pre-copy Job runs on the node of the replica whose claim it copies;
#   - every pre-copy Job is gone before the first copy Job is created (deleted in the
#     foreground: its pod with it);
#   - the journal has a PreCopied row per claim, none skipped;
#   - once Completed: every random file's sha256 as before, and in each new volume every file
#     w/1 .. w/L the replica wrote before it was stopped (L read from its old volume once the
#     replicas were stopped), each holding its number: nothing written during the pre-copy was
#     lost by copying only what changed after it;
#   - each copy with the replicas stopped read (to prove it) only the files changed since the
#     pre-copy, not the 16 MiB file.
# With `stsresize.dev/pre-copy: "false"` (the second argument `off`): no PreCopying, no
# pre-copy Job, the same data checks.
#   pre_copy.sh STSRESIZE_BINARY [on|off]
mode=${2:-on}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

step "StatefulSet web: 3 writing replicas, claims of 1Gi on sim-fixed, 16 MiB of random data each"
k apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
        command:
        - sh
        - -c
        - |
          mkdir -p /data/w
          n=$(cat /data/last 2>/dev/null || echo 0)
          trap 'exit 0' TERM
          while :; do
            n=$((n + 1))
            echo "$n" > /data/w/$n
            echo "$n" > /data/last.new && mv /data/last.new /data/last
            sleep 0.1
          done
        volumeMounts:
        - name: data
          mountPath: /data
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: sim-fixed
      resources:
        requests:
          storage: 1Gi
EOF
if [[ $mode == off ]]; then
  k annotate statefulset web stsresize.dev/pre-copy=false >/dev/null
fi
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
declare -A old_dir
random_sums() { (cd "$1/random" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
for i in 0 1 2; do
  dir=$(pv_dir "data-web-$i")
  old_dir[$i]=$dir
  mkdir -p "$dir/random/nested"
  for f in $(seq 1 100); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
  head -c $((16 * 1048576)) /dev/urandom >"$dir/random/nested/big.bin"
  # Written an hour ago, as most of a volume is: data written within 3 s of the pre-copy's last
  # pass is marked for copying again (see pre_copy_script), and would be read again too.
  find "$dir/random" -type f -exec touch -d "@$(($(date +%s) - 3600))" {} +
  random_sums "$dir" >"$work/before-$i"
done
ok "random data in place; the writers write"

k get jobs --watch --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' \
  >>"$work/watch-jobs" 2>>"$work/watch-errors" &
watcher=$!
on_exit "kill $watcher 2>/dev/null; true"

step "start the controller; request 2Gi"
e2e_start_controller controller.log
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

# Poll through the operation: what PreCopying looked like, and each writer's last N once the
# replicas were stopped (from BackingUp to Restoring: ScalingDown is over, no replica runs).
declare -A last_written
stopped_seen=0
seen_pre_copying=0
low_ready=3
grew=0
first_n=''
deadline=$((SECONDS + 300))
while :; do
  # The phase and the Ready count from one read: read apart, the phase could be PreCopying and the
  # count already ScalingDown's.
  IFS='|' read -r phase ready < <(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}|{.status.readyReplicas}' 2>/dev/null || true) || true
  if [[ $phase == PreCopying ]]; then
    seen_pre_copying=1
    ((${ready:-0} < low_ready)) && low_ready=${ready:-0}
    n=$(cat "${old_dir[0]}/last" 2>/dev/null || echo 0)
    if [[ -z $first_n ]]; then first_n=$n; elif ((n > first_n)); then grew=1; fi
    for job in $(k get jobs -o name | grep -- '-stsresize-precopy$' || true); do
      claim=${job#job.batch/}
      claim=${claim%-stsresize-precopy}
      pod=$(k get pods -l job-name="${job#job.batch/}" -o jsonpath='{.items[0].spec.nodeName}' 2>/dev/null || true)
      replica=$(k get pod "web-${claim##*-}" -o jsonpath='{.spec.nodeName}' 2>/dev/null || true)
      if [[ -n $pod && -n $replica && $pod != "$replica" ]]; then
        fail "the pre-copy of $claim runs on $pod, its replica on $replica"
      fi
    done
  fi
  if [[ ($phase == BackingUp || $phase == Recreating || $phase == Restoring) && $stopped_seen == 0 ]]; then
    [[ $(k get pods -l app=web -o name | grep -c . || true) == 0 ]] ||
      fail "replicas still running in $phase: $(k get pods -l app=web -o name)"
    for i in 0 1 2; do last_written[$i]=$(cat "${old_dir[$i]}/last"); done
    stopped_seen=1
    ok "replicas stopped; each wrote up to: ${last_written[*]}"
  fi
  last=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null || true)
  [[ -z $phase && $last == *Completed* ]] && break
  ((SECONDS < deadline)) || fail "no completion after 300s (phase $phase); $(tail -n 20 "$work/controller.log")"
  _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.2
done
((stopped_seen)) || fail "never saw the replicas stopped (BackingUp, Recreating or Restoring)"
pre_copies=$(awk '$1 == "ADDED" && $2 ~ /-stsresize-precopy$/ { print $2 }' "$work/watch-jobs" | sort -u | grep -c . || true)
if [[ $mode == off ]]; then
  ((seen_pre_copying == 0 && pre_copies == 0)) ||
    fail "stsresize.dev/pre-copy=false, yet PreCopying seen ($seen_pre_copying) or $pre_copies pre-copy Jobs"
  ok "no PreCopying, no pre-copy Job"
else
  ((seen_pre_copying)) || fail "PreCopying was never seen"
  ((low_ready == 3)) || fail "only $low_ready replicas Ready during PreCopying"
  ((grew)) || fail "the writer of data-web-0 did not write during PreCopying (last stayed $first_n)"
  ok "PreCopying: 3/3 Ready throughout, the writers writing, each pre-copy beside its replica"
  ((pre_copies == 3)) || fail "$pre_copies pre-copy Jobs, not 3: $(cat "$work/watch-jobs")"
  # Every pre-copy Job deleted (its pod gone first: foreground) before the first copy Job.
  awk '$2 ~ /-stsresize-precopy$/ && $1 == "DELETED" { deleted++ }
       $2 ~ /-stsresize-backup$/ && $1 == "ADDED" && !seen++ { if (deleted < 3) bad = 1 }
       END { exit bad }' "$work/watch-jobs" ||
    fail "a copy Job was created before every pre-copy Job was gone: $(cat "$work/watch-jobs")"
  ok "3 pre-copy Jobs, all gone before the first copy Job"
  e2e_stop_controller "$controller_pid"
  rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay failed"
  copied=$(jq -r '.rows[] | select(.event == "PreCopied") | .details' <<<"$rows")
  [[ $(grep -c 'bytes copied while its replica ran' <<<"$copied") == 3 ]] ||
    fail "want 3 PreCopied rows that copied: $copied"
  ok "journal: $(tr '\n' ';' <<<"$copied")"
fi

step "the copies with the replicas stopped read only what changed since the pre-copy"
# Each backup copy's summary (kept by the node simulator): the bytes it read to prove the copy.
# After a pre-copy, its manifests leave out every file unchanged since: the 16 MiB file and the
# random ones; without one (pre-copy=false), both trees are read whole.
summaries=0
for f in "$nodesim_dir/pods/${ns}_"*-stsresize-backup-*/copy.termination-log; do
  [[ -f $f ]] || continue
  summary=$(cat "$f")
  read -r hashed data < <(jq -r '"\(.hashed) \(.source.bytes)"' <<<"$summary") ||
    fail "no copy summary in $f: $summary"
  if [[ $mode == off ]]; then
    ((hashed == 2 * data)) || fail "no pre-copy, yet ${f%/*} read $hashed bytes of 2 x $data"
  else
    ((hashed * 8 < 2 * data)) ||
      fail "${f%/*} read $hashed bytes of 2 x $data with the replica stopped: the manifests went unused"
  fi
  summaries=$((summaries + 1))
  hashed_all="${hashed_all:-}$hashed of 2 x $data; "
done
((summaries >= 3)) || fail "$summaries copy summaries of backup Jobs, want 3"
ok "bytes read to prove each copy: ${hashed_all}"

step "data: random files as before; every writer file up to where each replica stopped"
for i in 0 1 2; do
  [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase}') == "2Gi Bound" ]] ||
    fail "pvc/data-web-$i is $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase}')"
  dir=$(pv_dir "data-web-$i")
  [[ $dir != "${old_dir[$i]}" ]] || fail "data-web-$i is still on its old volume"
  random_sums "$dir" >"$work/after-$i"
  diff -q "$work/before-$i" "$work/after-$i" >/dev/null ||
    fail "random data of data-web-$i differs: $(diff "$work/before-$i" "$work/after-$i" | head -n 5)"
  for ((n = 1; n <= last_written[$i]; n++)); do
    [[ $(cat "$dir/w/$n" 2>/dev/null) == "$n" ]] || fail "data-web-$i: w/$n missing or wrong (the replica wrote up to ${last_written[$i]})"
  done
done
ok "every random file's sha256 unchanged; w/1..w/L present and right in every volume (L: ${last_written[*]})"
k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready again"
leftovers=$(k get pvc,jobs -o name | grep -E 'stsresize' || true)
[[ -z $leftovers ]] || fail "left behind: $leftovers"
ok "3/3 Ready again, nothing left behind"
