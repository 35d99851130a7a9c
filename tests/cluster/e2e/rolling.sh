#!/usr/bin/env bash
# The rolling strategy (`stsresize.dev/strategy: rolling`) on the local control plane: a copy
# resize (sim-fixed, 1Gi -> 2Gi) that works one ordinal at a time, highest first, each through
# StoppingReplica -> BackingUp -> Recreating -> Restoring -> StartingReplica -> CleaningUp, while
# the other replicas keep running, Ready, never restarted.
#
# 3 replicas of a writer (every 0.1 s a new file w/N holding N, then `last` = N, as pre_copy.sh's)
# with random data besides, dated an hour back. A sampler (`kubectl get statefulsets,pods,pvc`
# about every 0.3 s) records the phase, the StatefulSet, each pod's uid and readiness and each
# claim's uid and size; watches record every change of the pods, claims and StatefulSets.
#   rolling.sh STSRESIZE_BINARY writers|pdb|no-return
# writers: 16 MiB of random data per volume, a PodDisruptionBudget maxUnavailable 1. Checks below
#   ("the roll"), then prints, per ordinal, the time its pod was not Ready, the gap in its own
#   writes, and the largest gap in the other replicas' writes meanwhile (figures, not asserted).
# pdb: a budget minAvailable 3: the resize holds in StoppingReplica with one Warning
#   EvictionBlocked quoting the API server's refusal, given once; for 8 s the StatefulSet is the
#   same object, not being deleted, without the finalizer stsresize.dev/rolling, the pods the same
#   and Ready, the claims the same at 1Gi, no copy Job; then the budget relaxed to minAvailable 2:
#   the resize goes on by itself and completes, with the checks below.
# no-return: the new pod of ordinal 2 cannot become Ready (an init container waits while the host
#   file /ctl/block-web-2 exists; nodesim counts readiness probes as passing, and a container
#   that exits is Ready for an instant after each start); `run --scale-up-timeout 10s`: the
#   resize holds in StartingReplica with a Warning ScaleUpTimeout; meanwhile web-0 and web-1 are
#   the same pods, Ready and writing, their claims the same at 1Gi on the same volumes with their
#   random data as before, and no claim other than ordinal 2's was deleted. Then the file is
#   removed: the roll goes on and completes, with the checks below.
# The roll (every mode, once Completed):
#   - at every instant at least 2 of the 3 pods Ready and not being deleted (every sample, and
#     exactly, replaying the pods' watch); each pod replaced exactly once, web-2 then web-1 then
#     web-0, each new pod Ready before the next ordinal's pod is touched;
#   - every sample in BackingUp, Recreating or Restoring of ordinal k: no pod web-k, the
#     StatefulSet paused (being deleted, held by stsresize.dev/rolling), every lower ordinal its
#     first pod, Ready, on its first claim of 1Gi, every higher one a new pod, Ready, on 2Gi;
#   - phases sampled: only Pending, UpdatingTemplate, Planning, PreCopying before the roll (never
#     ScalingDown or ScalingUp), then 3 rounds in the order above (a sample may miss a phase as
#     short as StoppingReplica on a loaded machine: the journal has them all); the journal holds
#     exactly Planning -> PreCopying ->
#     (StoppingReplica -> ... -> CleaningUp) x 3 -> Completed, and an Event for each change;
#   - the StatefulSet created anew for each ordinal (4 uids), not paused at the end, every pod
#     owned by the last one; each claim re-created at most once;
#   - every claim 2Gi, Bound, on a new volume; every random file's sha256 as before; in each new
#     volume every file w/1 .. w/L the replica wrote before its own stop (L read from its old
#     volume once its old pod was gone), each holding its number; 3/3 Ready, templates 2Gi,
#     request cleared, no Job, backup claim or ConfigMap left, every volume Bound with Delete and
#     no old volume left.
mode=${2:?writers, pdb or no-return}
[[ $mode == writers || $mode == pdb || $mode == no-return ]] || {
  echo "mode must be writers, pdb or no-return, not $mode" >&2
  exit 2
}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
# shellcheck source-path=SCRIPTDIR source=rebind_lib.sh
source "$(dirname "$0")/rebind_lib.sh"

replicas=3
controller_args=()
case $mode in
  writers) big_mib=16 budget='maxUnavailable: 1' ;;
  pdb) big_mib=1 budget='minAvailable: 3' ;;
  no-return)
    big_mib=1 budget=''
    # Without it the Warning comes after 30 minutes (engine/settings.h scale_up_timeout).
    help=$("$stsresize" run --help 2>&1) || true
    grep -q -- '--scale-up-timeout' <<<"$help" ||
      fail "stsresize run has no --scale-up-timeout: this mode needs a replica that does not come back to be reported within the test"
    controller_args=(--scale-up-timeout 10s)
    ;;
esac
use_namespace

# jq, shared by the sampler and the checks. A sample: {t, phase, sts: {uid, deleting, finalizers},
# pods: {"web-0": {uid, ready, deleting}}, claims: {"data-web-0": {uid, size, deleting}}}.
# shellcheck disable=SC2016 # jq's variables
jq_defs='
def ready: any(.status.conditions[]?; .type == "Ready" and .status == "True");
def sample($t):
  [.items[] | select(.kind == "StatefulSet" and .metadata.name == "web")][0] as $sts
  | {t: $t,
     phase: ($sts.metadata.annotations["stsresize.dev/phase"] // "" | if . == "" then null else . end),
     sts: (if $sts == null then null else
       {uid: $sts.metadata.uid, deleting: ($sts.metadata.deletionTimestamp != null),
        finalizers: ($sts.metadata.finalizers // [])} end),
     pods: ([.items[] | select(.kind == "Pod" and (.metadata.name | test("^web-[0-9]+$")))
       | {key: .metadata.name,
          value: {uid: .metadata.uid, ready: ready, deleting: (.metadata.deletionTimestamp != null)}}]
       | from_entries),
     claims: ([.items[] | select(.kind == "PersistentVolumeClaim" and (.metadata.name | test("^data-web-[0-9]+$")))
       | {key: .metadata.name,
          value: {uid: .metadata.uid, size: .spec.resources.requests.storage,
                  deleting: (.metadata.deletionTimestamp != null)}}]
       | from_entries)};
def rolling_phases: ["StoppingReplica", "BackingUp", "Recreating", "Restoring", "StartingReplica", "CleaningUp"];
def middle: . == "BackingUp" or . == "Recreating" or . == "Restoring";
def paused: .sts != null and .sts.deleting and (.sts.finalizers | index("stsresize.dev/rolling")) != null;
def ready_count: [.pods[] | select(.ready and (.deleting | not))] | length;
# The samples (an array) each with its round: 0 before the roll, then 1 for the first ordinal
# (the highest), 2 for the next...: a round begins where the phase goes back in rolling_phases.
def with_rounds:
  reduce .[] as $s ({round: 0, prev: -1, out: []};
    (rolling_phases | index($s.phase)) as $i
    | (if $i == null then .
       elif .round == 0 or $i < .prev then .round += 1 | .prev = $i
       else .prev = $i end)
    | .out += [$s + {round: .round}])
  | .out;
def collapse: reduce .[] as $p ([]; if .[-1] == $p then . else . + [$p] end);
# problems($orig; $k): what is wrong in sample . while ordinal $k is worked on: each lower
# ordinal untouched (its first pod, Ready; its first claim, 1Gi), each higher one done (a new
# pod, Ready; a claim of 2Gi). $n: the replicas.
def problems($orig; $k):
  . as $s
  | range(0; $n) | select(. != $k) | . as $j
  | "web-\($j)" as $pod | "data-web-\($j)" as $claim
  | $s.pods[$pod] as $p | $s.claims[$claim] as $c
  | (if $p == null then "\($pod) missing"
     elif $p.deleting then "\($pod) being deleted"
     elif ($p.ready | not) then "\($pod) not Ready"
     elif $j < $k and $p.uid != $orig.pods[$pod].uid then "\($pod) replaced before its turn"
     elif $j > $k and $p.uid == $orig.pods[$pod].uid then "\($pod) not replaced after its turn"
     else empty end),
    (if $c == null then "\($claim) missing"
     elif $c.deleting then "\($claim) being deleted"
     elif $j < $k and ($c.uid != $orig.claims[$claim].uid or $c.size != "1Gi") then "\($claim) changed before its turn (\($c.size))"
     elif $j > $k and $c.size != "2Gi" then "\($claim) not 2Gi after its turn (\($c.size))"
     else empty end);
'

# snapshot: one sample of the namespace now (one kubectl call: the phase, pods and claims of a
# sample are listed within milliseconds of each other).
snapshot() {
  local json t
  json=$(k get statefulsets,pods,pvc -o json 2>/dev/null) || return 1
  t=${EPOCHREALTIME/,/.}
  jq -c --argjson t "$t" "$jq_defs sample(\$t)" <<<"$json"
}

# check_sample SAMPLE JQ_EXPR: the problems JQ_EXPR (with jq_defs, $orig and $n) finds in SAMPLE.
check_sample() {
  jq -r --argjson orig "$orig" --argjson n "$replicas" "$jq_defs $2" <<<"$1"
}

# The sampler: a sample about every 0.3 s into $work/samples until $work/sampler.stop exists (a
# stop that lets it finish its line, unlike a kill).
sampler() {
  while [[ ! -e $work/sampler.stop ]]; do
    snapshot >>"$work/samples" || true
    sleep 0.3
  done
}
stop_sampler() {
  touch "$work/sampler.stop"
  wait "$sampler_pid" || true
}

# complete_lines FILE: the lines a watch has finished writing.
complete_lines() { head -n "$(wc -l <"$1")" "$1"; }

random_sums() { (cd "$1/random" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

# writes_missing DIR L: up to 10 of the numbers 1..L whose file w/N in DIR is missing or does not
# hold N (one awk: ~10 files a second per replica make thousands).
writes_missing() {
  (cd "$1/w" && find . -type f -name '[0-9]*' | awk -v last="$2" '
    { f = $0; n = f; sub(/^\.\//, "", n); line = ""; getline line <f; close(f); if (line == n) good[n] = 1 }
    END { for (i = 1; i <= last; i++) if (!(i in good)) { printf "%s%d", sep, i; sep = " "; if (++c == 10) exit } }')
}

# writer_mtimes DIR: "N mtime" of every writer file in DIR, by N.
writer_mtimes() {
  (cd "$1/w" && find . -type f -name '[0-9]*' -printf '%f %T@\n') | sort -n
}

# record_stops: each writer's last N (last_written), read from its old volume once the latest
# sample shows its first pod gone: no process writes there any more, and the old volume is still
# there (it goes once its claim is re-created, after a copy Job).
declare -A old_dir last_written first_pod
record_stops() {
  local sample i uid
  sample=$(tail -n 1 "$work/samples" 2>/dev/null) || return 0
  [[ -n $sample ]] || return 0
  for ((i = 0; i < replicas; i++)); do
    [[ -z ${last_written[$i]:-} ]] || continue
    uid=$(jq -r --arg pod "web-$i" '.pods[$pod].uid // ""' <<<"$sample" 2>/dev/null) || continue
    [[ $uid == "${first_pod[$i]}" ]] && continue
    [[ -f ${old_dir[$i]}/last ]] ||
      fail "web-$i stopped, but its old volume ${old_dir[$i]} is already gone: its last write cannot be read"
    last_written[$i]=$(<"${old_dir[$i]}/last")
    note "web-$i stopped; it wrote up to w/${last_written[$i]}"
  done
}

# follow WANT SECS: polls until the phase annotation is WANT (a glob), or, for WANT Completed,
# until the operation is over (no phase, last-operation Completed; the StatefulSet may be absent
# for a moment between two ordinals); meanwhile record_stops. Fails early on Failed or once the
# controller exited.
follow() {
  local want=$1 deadline=$((SECONDS + $2)) phase last
  while :; do
    record_stops
    IFS='|' read -r phase last < <(jp statefulset/web \
      '{.metadata.annotations.stsresize\.dev/phase}|{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null || true) || true
    if [[ $want == Completed ]]; then
      [[ -z $phase && $last == *Completed* ]] && return 0
    else
      # shellcheck disable=SC2053 # a glob on purpose
      [[ -n $phase && $phase == $want ]] && return 0
    fi
    [[ $phase == Failed ]] && fail "the resize failed: $(e2e_warnings web | tail -n 5)"
    ((SECONDS < deadline)) || fail "$want not reached in $2s (phase: ${phase:-none})"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.2
  done
}

step "StatefulSet web ($mode): $replicas writing replicas, strategy rolling, claims of 1Gi on sim-fixed, $big_mib MiB of random data each"
# /ctl: a directory of this test on the host. The init container `gate` waits while
# /ctl/block-<its pod> exists: a pod started then never becomes Ready, a pod already running is
# not affected (no-return).
ctl=$work/ctl
mkdir -p "$ctl"
sed "s|@CTL@|$ctl|" <<'EOF' | k apply -f - >/dev/null
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  annotations:
    stsresize.dev/strategy: rolling
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
      initContainers:
      - name: gate
        image: docker.io/library/busybox:1.36
        command:
        - sh
        - -c
        - |
          while [ -e "/ctl/block-$(cat /proc/sys/kernel/hostname)" ]; do sleep 0.5; done
        volumeMounts:
        - name: ctl
          mountPath: /ctl
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
      volumes:
      - name: ctl
        hostPath:
          path: @CTL@
          type: Directory
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
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
for ((i = 0; i < replicas; i++)); do
  dir=$(pv_dir "data-web-$i")
  old_dir[$i]=$dir
  mkdir -p "$dir/random/nested"
  for f in $(seq 1 100); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
  head -c $((big_mib * 1048576)) /dev/urandom >"$dir/random/nested/big.bin"
  # Written an hour ago, as most of a volume is (see pre_copy.sh): the copies after the warm
  # pre-copy then read only what the writers changed.
  find "$dir/random" -type f -exec touch -d "@$(($(date +%s) - 3600))" {} +
  random_sums "$dir" >"$work/before-$i"
done
ok "random data in place; the writers write"
volumes_before=()
for ((i = 0; i < replicas; i++)); do volumes_before+=("$(jp "pvc/data-web-$i" '{.spec.volumeName}')"); done

if [[ -n $budget ]]; then
  step "PodDisruptionBudget web: $budget"
  k apply -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  $budget
  selector:
    matchLabels:
      app: web
EOF
  # Counted by the disruption controller first: an eviction before that is refused for another
  # reason (the budget still being processed).
  wait_field pdb/web '{.status.currentHealthy}' 3 30
  ok "the budget counts 3 healthy pods; $(jp pdb/web '{.status.disruptionsAllowed}') disruption(s) allowed"
fi

# Every change of the pods ("type|name|uid|deletionTimestamp|Ready"), claims ("type|name|uid|
# deletionTimestamp") and StatefulSets ("type|uid|deletionTimestamp|finalizers"), the initial
# lists as ADDED: what sampling can miss.
watchers=()
k get pods --watch --output-watch-events \
  -o jsonpath='{.type}|{.object.metadata.name}|{.object.metadata.uid}|{.object.metadata.deletionTimestamp}|{.object.status.conditions[?(@.type=="Ready")].status}{"\n"}' \
  >>"$work/watch-pods" 2>>"$work/watch-errors" &
watchers+=("$!")
k get pvc --watch --output-watch-events \
  -o jsonpath='{.type}|{.object.metadata.name}|{.object.metadata.uid}|{.object.metadata.deletionTimestamp}{"\n"}' \
  >>"$work/watch-pvc" 2>>"$work/watch-errors" &
watchers+=("$!")
k get statefulsets --watch --output-watch-events \
  -o jsonpath='{.type}|{.object.metadata.uid}|{.object.metadata.deletionTimestamp}|{.object.metadata.finalizers}{"\n"}' \
  >>"$work/watch-sts" 2>>"$work/watch-errors" &
watchers+=("$!")
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; done; true'

orig=$(snapshot) || fail "cannot read the namespace"
for ((i = 0; i < replicas; i++)); do
  first_pod[$i]=$(jq -r --arg pod "web-$i" '.pods[$pod].uid' <<<"$orig")
done
# shellcheck disable=SC2016 # jq's variables
problems=$(check_sample "$orig" 'problems($orig; $n)')
[[ -z $problems ]] || fail "not $replicas Ready pods on claims of 1Gi before the request: $problems"

sampler &
sampler_pid=$!
on_exit "touch '$work/sampler.stop'; kill $sampler_pid 2>/dev/null; true"

step "start the controller; request 2Gi"
e2e_start_controller controller.log "${controller_args[@]}"
if [[ $mode == no-return ]]; then
  # web-2's next pod, the one on its new claim, will wait in its init container.
  touch "$ctl/block-web-2"
fi
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

if [[ $mode == pdb ]]; then
  step "the budget allows no disruption: the resize holds in StoppingReplica, nothing paused or deleted"
  follow StoppingReplica 180
  e2e_wait_event web '^EvictionBlocked: ' 30
  # shellcheck disable=SC2154 # $event is e2e_wait_event's answer
  grep -qi 'disruption budget' <<<"$event" || fail "EvictionBlocked does not quote the API server's refusal: $event"
  grep -q '^EvictionBlocked: ' <<<"$(e2e_warnings web)" || fail "EvictionBlocked is not a Warning: $event"
  ok "$event"
  # shellcheck disable=SC2016 # jq's variables
  held='(if .phase != "StoppingReplica" then "phase \(.phase)" else empty end),
    (if .sts == null then "no StatefulSet"
     elif .sts.uid != $held_uid then "the StatefulSet was re-created"
     elif .sts.deleting then "the StatefulSet is being deleted"
     elif (.sts.finalizers | index("stsresize.dev/rolling")) != null then "the StatefulSet holds stsresize.dev/rolling"
     else empty end),
    problems($orig; $n)'
  # Long enough for several attempts at the poll interval of 1 s.
  # The object as it is once held (the request's UpdatingTemplate created it anew before).
  held_uid=$(jp statefulset/web '{.metadata.uid}')
  held="(\"$held_uid\") as \$held_uid | $held"
  hold_end=$((SECONDS + 8))
  while ((SECONDS < hold_end)); do
    record_stops
    sample=$(snapshot) || fail "cannot read the namespace"
    problems=$(check_sample "$sample" "$held")
    [[ -z $problems ]] || fail "while the budget allows no disruption: $(paste -sd ';' <<<"$problems")"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.5
  done
  blocked=$(k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web -o json |
    jq -r '[.items[] | select(.reason == "EvictionBlocked")] | "\(length) \(map(.count // 1) | add)"')
  [[ $blocked == "1 1" ]] || fail "want one EvictionBlocked given once, got (events, count) $blocked"
  copies=$(k get jobs -o name | grep -v -- '-stsresize-precopy$' || true)
  [[ -z $copies ]] || fail "copy Jobs while the budget allows no disruption: $copies"
  ok "8 s in StoppingReplica: the same StatefulSet, not deleted, no finalizer; pods and claims the same; one EvictionBlocked, given once; no copy Job"

  step "the budget relaxed to minAvailable 2: the resize goes on by itself"
  k patch pdb web --type merge -p '{"spec":{"minAvailable":2}}' >/dev/null
fi

if [[ $mode == no-return ]]; then
  step "web-2 does not come back Ready: the roll holds in StartingReplica, web-1 and web-0 untouched"
  follow StartingReplica 240
  # Right after the phase is written the StatefulSet may be absent a moment (between the paused
  # one and the one created from the definition), or be there without the phase yet, and pod
  # web-2 not created yet: only another phase, or web-2 Ready, is wrong.
  # shellcheck disable=SC2016 # jq's variables
  held='(if .phase != null and .phase != "StartingReplica" then "phase \(.phase)" else empty end),
    problems($orig; $n - 1),
    (if .pods["web-2"] == null then empty
     elif .pods["web-2"].uid == $orig.pods["web-2"].uid then "web-2 is still its first pod"
     elif .pods["web-2"].ready then "web-2 is Ready: the gate did not hold it"
     else empty end)'
  declare -A last_before
  for i in 0 1; do last_before[$i]=$(<"${old_dir[$i]}/last"); done
  deadline=$((SECONDS + 90))
  warned_at=''
  while :; do
    record_stops
    sample=$(snapshot) || fail "cannot read the namespace"
    problems=$(check_sample "$sample" "$held")
    [[ -z $problems ]] || fail "while web-2 is not Ready: $(paste -sd ';' <<<"$problems")"
    if [[ -z $warned_at ]] && warning=$(grep -m1 '^ScaleUpTimeout: ' <<<"$(e2e_warnings web)"); then
      warned_at=$SECONDS
      ok "$warning"
    fi
    # Held a few seconds past the Warning too: the step keeps waiting.
    [[ -n $warned_at ]] && ((SECONDS >= warned_at + 5)) && break
    ((SECONDS < deadline)) || fail "no Warning ScaleUpTimeout within 90 s of StartingReplica: $(e2e_warnings web)"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.5
  done
  gate=$(jp pod/web-2 '{.metadata.uid} {.status.initContainerStatuses[0].state.running.startedAt}' 2>/dev/null || true)
  [[ $gate == *' '?* && $gate != "${first_pod[2]} "* ]] ||
    fail "web-2 is not a new pod held by its init container: $(jp pod/web-2 '{.metadata.uid} {.status}' 2>&1)"
  for i in 0 1; do
    claim=data-web-$i
    [[ $(jp "pvc/$claim" '{.spec.volumeName}') == "${volumes_before[$i]}" ]] || fail "$claim is on another volume"
    random_sums "${old_dir[$i]}" >"$work/held-$i"
    diff -q "$work/before-$i" "$work/held-$i" >/dev/null || fail "random data of $claim changed"
    (($(<"${old_dir[$i]}/last") > last_before[$i])) || fail "web-$i stopped writing (last stayed ${last_before[$i]})"
  done
  # Every claim deleted (a deletionTimestamp or gone) so far: ordinal 2's alone.
  deleted=$(complete_lines "$work/watch-pvc" | awk -F'|' '$1 == "DELETED" || $4 != "" { print $2 }' | sort -u |
    grep -vE '^data-web-2(-|$)' || true)
  [[ -z $deleted ]] || fail "claims deleted besides ordinal 2's: $deleted"
  ok "web-2 held in its init container; web-0 and web-1 the same pods, Ready, writing; their claims the same, 1Gi, same volumes, random data as before; no other claim deleted"

  step "web-2 released: the roll goes on"
  rm "$ctl/block-web-2"
fi

follow Completed 300
ok "completed"
stop_sampler
for p in "${watchers[@]}"; do kill -0 "$p" 2>/dev/null || fail "a watch ended early: $(cat "$work/watch-errors")"; done

step "the roll, from the samples: one ordinal at a time, the others Ready and untouched until their turn"
jq -c -s --argjson n "$replicas" "$jq_defs with_rounds | .[]" "$work/samples" >"$work/rounds"
note "$(wc -l <"$work/rounds") samples"
unknown=$(jq -r -s "$jq_defs"' [.[].phase | select(. != null)] | unique
  | map(select(. as $p | (rolling_phases + ["Pending", "UpdatingTemplate", "Planning", "PreCopying", "Completed"]) | index($p) == null))
  | join(" ")' "$work/samples")
[[ -z $unknown ]] || fail "phases outside the rolling path sampled: $unknown"
rounds=$(jq -s 'map(.round) | max' "$work/rounds")
phases_by_round=$(jq -r -s "$jq_defs"' group_by(.round)[]
  | "\(.[0].round): \([.[].phase | select(. != null)] | collapse | join(" "))"' "$work/rounds")
((rounds == replicas)) || fail "$rounds rounds of phases sampled, want $replicas (one per ordinal, in order): $phases_by_round"
while read -r line; do note "round $line"; done <<<"$phases_by_round"
for ((r = 1; r <= rounds; r++)); do
  middle=$(jq -s --argjson r "$r" "$jq_defs"' map(select(.round == $r and (.phase // "" | middle))) | length' "$work/rounds")
  ((middle > 0)) || fail "ordinal $((replicas - r)): no sample in BackingUp, Recreating or Restoring"
done
# Into a file: `jq | head` could fail jq with SIGPIPE, and pipefail the script with it.
jq -r --argjson orig "$orig" --argjson n "$replicas" "$jq_defs"'
  select(.phase // "" | middle) | ($n - .round) as $k
  | "\(.phase) of web-\($k) at \(.t): " as $at
  | ($at + problems($orig; $k)),
    (if .pods["web-\($k)"] != null then $at + "pod web-\($k) exists" else empty end),
    (if paused | not then $at + "the StatefulSet is not paused (\(.sts))" else empty end)' \
  "$work/rounds" >"$work/problems"
[[ ! -s $work/problems ]] || fail "$(head -n 10 "$work/problems")"
ok "every sample while an ordinal was copied: its pod gone, the StatefulSet paused, the lower ordinals untouched, the higher ones done"
low=$(jq -s "$jq_defs"' map(ready_count) | min' "$work/samples")
((low >= replicas - 1)) ||
  fail "only $low pods Ready in a sample: $(jq -c -s --argjson n "$replicas" "$jq_defs"' map(select(ready_count < $n - 1)) | first' "$work/samples")"
ok "at least $low of $replicas pods Ready in every sample"

step "the roll, from the pods' watch: every change of every pod"
# Per pod: the line of its first pod's first disruption (deleted, being deleted or not Ready once
# all were Ready), the line its next pod was first Ready, how many pods it had; and the fewest
# Ready, not being deleted, at any point once all were.
summary=$(awk -F'|' -v n="$replicas" '
  $2 !~ /^web-[0-9]+$/ { next }
  { name = $2 }
  !(name in first) { first[name] = $3 }
  !($3 in known) { known[$3] = 1; pods[name]++ }
  $1 == "DELETED" { up[name] = 0 }
  $1 != "DELETED" { up[name] = ($5 == "True" && $4 == "") }
  started && $3 == first[name] && !(name in down) && !up[name] { down[name] = NR }
  $3 != first[name] && up[name] && !(name in back) { back[name] = NR }
  { c = 0; for (p in up) c += up[p]; if (!started && c == n) { started = 1; low = n } if (started && c < low) low = c }
  END {
    print "low", (started ? low : -1)
    for (i = 0; i < n; i++) { p = "web-" i; print p, (p in down ? down[p] : 0), (p in back ? back[p] : 0), pods[p] + 0 }
  }' <(complete_lines "$work/watch-pods"))
read -r _ low_exact <<<"$(grep '^low ' <<<"$summary")"
((low_exact >= replicas - 1)) || fail "only $low_exact pods Ready at some point (pods' watch): $summary"
previous_back=0
for ((i = replicas - 1; i >= 0; i--)); do
  read -r _ down back count <<<"$(grep "^web-$i " <<<"$summary")"
  ((count == 2)) || fail "web-$i had $count pods, want 2 (replaced once, in its turn)"
  ((down > previous_back && back > down)) ||
    fail "web-$i disrupted (line $down) before the previous ordinal's pod was Ready (line $previous_back), or not back: $summary"
  previous_back=$back
done
ok "at least $low_exact of $replicas Ready at every change; each pod replaced once, web-2, web-1, web-0, each Ready before the next was touched"

step "the StatefulSet and the claims"
sts_uids=$(complete_lines "$work/watch-sts" | awk -F'|' '$1 == "ADDED" { print $2 }' | sort -u | grep -c . || true)
# The first object, the one the request's UpdatingTemplate created with the new template, and
# one for each ordinal.
((sts_uids == replicas + 2)) || fail "$sts_uids StatefulSet uids, want $((replicas + 2)) (the request's re-create, then one for each ordinal): $(cat "$work/watch-sts")"
IFS='|' read -r sts_uid sts_deleting sts_finalizers <<<"$(jp statefulset/web '{.metadata.uid}|{.metadata.deletionTimestamp}|{.metadata.finalizers}')"
[[ -z $sts_deleting && $sts_finalizers != *stsresize.dev/rolling* ]] ||
  fail "statefulset/web still paused: deletionTimestamp '$sts_deleting', finalizers '$sts_finalizers'"
owners=$(k get pods -l app=web -o json | jq -r --arg uid "$sts_uid" \
  '.items[] | select([.metadata.ownerReferences[]? | select(.controller and .uid == $uid)] | length == 0) | .metadata.name')
[[ -z $owners ]] || fail "pods not owned by the StatefulSet ($sts_uid): $owners"
recreated=$(complete_lines "$work/watch-pvc" | awk -F'|' '$1 == "ADDED" && $2 ~ /^data-web-[0-9]+$/ { print $2, $3 }' | sort -u |
  awk '{ n[$1]++ } END { for (c in n) if (n[c] > 2) print c }')
[[ -z $recreated ]] || fail "claims re-created more than once: $recreated"
ok "created anew for each ordinal ($sts_uids uids), not paused, owns every pod; each claim re-created at most once"

step "data: random files as before; every writer file up to where each replica stopped"
declare -A new_dir
for ((i = 0; i < replicas; i++)); do
  claim=data-web-$i
  [[ -n ${last_written[$i]:-} ]] || fail "never saw web-$i's first pod gone: its last write was not read"
  [[ $(jp "pvc/$claim" '{.spec.resources.requests.storage} {.status.phase}') == "2Gi Bound" ]] ||
    fail "pvc/$claim is $(jp "pvc/$claim" '{.spec.resources.requests.storage} {.status.phase}')"
  dir=$(pv_dir "$claim")
  new_dir[$i]=$dir
  [[ $dir != "${old_dir[$i]}" ]] || fail "$claim is still on its old volume"
  random_sums "$dir" >"$work/after-$i"
  diff -q "$work/before-$i" "$work/after-$i" >/dev/null ||
    fail "random data of $claim differs: $(diff "$work/before-$i" "$work/after-$i" | head -n 5)"
  wrong=$(writes_missing "$dir" "${last_written[$i]}") || fail "cannot read the writer files of $claim"
  [[ -z $wrong ]] || fail "$claim: w/N missing or wrong for N = $wrong (web-$i wrote up to ${last_written[$i]})"
done
ok "every random file's sha256 unchanged; w/1..w/L present and right in every new volume (L: ${last_written[*]})"
k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready again"
[[ $(jp statefulset/web '{.status.readyReplicas}') == "$replicas" ]] || fail "readyReplicas is not $replicas"
[[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 2Gi ]] ||
  fail "the template does not ask for 2Gi"
[[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/resize}') ]] || fail "the request annotation is still there"
# The definition ConfigMap included: only the namespace's own CA bundle may stay.
leftovers=$(k get pvc,jobs,configmaps -o name | grep -vxE 'persistentvolumeclaim/data-web-[0-9]+|configmap/kube-root-ca.crt' || true)
[[ -z $leftovers ]] || fail "left behind: $leftovers"
ok "$replicas/$replicas Ready, templates 2Gi, request cleared, nothing left behind"
rebind_assert_volumes web "$replicas" Delete 60 "${volumes_before[@]}"

step "journal: one ordinal after the other, every phase in order"
e2e_stop_controller "$controller_pid"
transitions=$("$stsresize" replay --journal "$work/journal.db" -o json | e2e_journal_transitions) || fail "replay failed"
expected=("Planning -> PreCopying" "PreCopying -> StoppingReplica")
for ((i = replicas - 1; i >= 0; i--)); do
  ((i == replicas - 1)) || expected+=("CleaningUp -> StoppingReplica")
  expected+=("StoppingReplica -> BackingUp" "BackingUp -> Recreating" "Recreating -> Restoring"
    "Restoring -> StartingReplica" "StartingReplica -> CleaningUp")
done
expected+=("CleaningUp -> Completed")
[[ $(sed -n '/^Planning -> PreCopying$/,$p' <<<"$transitions") == "$(printf '%s\n' "${expected[@]}")" ]] ||
  fail "the journal's phase changes are not Planning -> PreCopying, then the rolling phases of each ordinal: $(paste -sd ';' <<<"$transitions")"
! grep -qE 'Scaling(Down|Up)' <<<"$transitions" || fail "the journal holds ScalingDown or ScalingUp: $(paste -sd ';' <<<"$transitions")"
ok "$(grep -c . <<<"$transitions") phase changes, the rolling ones exactly as expected"
e2e_assert_transition_events web "$work/journal.db"

step "figures (not asserted)"
blocked=$(k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web -o json |
  jq -r '[.items[] | select(.reason == "EvictionBlocked") | .count // 1] | add // 0')
note "EvictionBlocked given $blocked time(s)"
for ((i = 0; i < replicas; i++)); do writer_mtimes "${new_dir[$i]}" >"$work/mtimes-$i"; done
for ((o = replicas - 1; o >= 0; o--)); do
  # From the samples: the first with web-o not its first pod Ready, the first after it with its
  # new pod Ready (to within a sample, ~0.4 s).
  read -r down up <<<"$(jq -r -s --argjson orig "$orig" --arg pod "web-$o" '
    $orig.pods[$pod].uid as $u
    | ([.[] | select(.pods[$pod] as $p | $p == null or $p.uid != $u or ($p.ready | not) or $p.deleting)] | first | .t) as $down
    | ([.[] | select($down != null and .t > $down and (.pods[$pod] as $p | $p != null and $p.uid != $u and $p.ready and ($p.deleting | not)))] | first | .t) as $up
    | "\($down) \($up)"' "$work/samples")"
  if [[ $down == null || $up == null ]]; then
    note "web-$o: not seen going and coming back in the samples"
    continue
  fi
  line="web-$o: not Ready $(awk -v a="$down" -v b="$up" 'BEGIN { printf "%.1f", b - a }') s;"
  # Its own writes: from w/L (the last on its old volume) to w/L+1 (the first on its new one).
  line+=" its writes stopped $(awk -v l="${last_written[$o]}" '$1 == l { a = $2 } $1 == l + 1 { b = $2 }
    END { if (a && b) printf "%.1f s", b - a; else printf "? s" }' "$work/mtimes-$o");"
  for ((j = 0; j < replicas; j++)); do
    ((j == o)) && continue
    line+=" web-$j's largest gap meanwhile $(awk -v from="$down" -v to="$up" '
      $2 >= from - 1 && $2 <= to + 1 { if (have && $2 - prev > gap) gap = $2 - prev; prev = $2; have = 1 }
      END { printf "%.2f s", gap }' "$work/mtimes-$j");"
  done
  note "$line"
done
