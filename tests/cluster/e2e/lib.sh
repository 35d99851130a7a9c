#!/usr/bin/env bash
# Shared steps of the end-to-end tests: a StatefulSet with random data in every volume, the
# controller started and stopped, a resize followed to its end, and the checks that the data
# survived. Source after proof/lib.sh (which gives step, ok, fail, k, jp, pv_dir, on_exit...).
#
#   e2e_init STSRESIZE_BINARY        sets $stsresize and $work (a temporary directory, removed
#                                    at exit); every controller started is SIGKILLed at exit
#   e2e_statefulset NAME CLASS N [MANIFEST]
#                                    N replicas of 1Gi on CLASS, Parallel, Ready; then 200 small
#                                    random files and 1 MiB per volume, written on the host;
#                                    checksums in $work/before-NAME-<i>. MANIFEST: of
#                                    tests/cluster/manifests, statefulset.yaml by default
#   e2e_checksums CLAIM              sha256 of every file in the claim's volume (sorted)
#   e2e_start_controller LOG [ARGS]  `stsresize run` on the namespace with $work/journal.db (unless
#                                    ARGS gives --journal), metrics off (unless ARGS gives
#                                    --metrics-bind-address), probes on a free port, poll 1s; its
#                                    pid in $controller_pid, added to $controllers
#   e2e_scrape LOG                   the /metrics text of the controller logging to LOG
#   e2e_metric LOG SERIES            the value of SERIES (name{labels} as /metrics spells it) on
#                                    the /metrics of the controller logging to LOG; 0 if absent
#   e2e_stop_controller PID          SIGTERM; fails unless it exits 0
#   e2e_wait_phase NAME PATTERN SECS waits until the phase annotation matches PATTERN (glob)
#   e2e_wait_completed NAME SECS     waits until the operation is over (no phase annotation and
#                                    last-operation says Completed); the phases seen, in order, in
#                                    $phases; fails early if every controller has exited
#   e2e_assert_resized NAME N SIZE [NOT_LEFTOVER]
#                                    every claim SIZE and Bound, every file's sha256 as before, N/N
#                                    Ready, templates SIZE, request cleared, nothing left behind
#                                    (NOT_LEFTOVER: a regex of `kubectl get -o name` lines that are
#                                    not leftovers, e.g. an installation's own ConfigMap)
#   e2e_assert_data_intact NAME N    every file's sha256 as before (claims of any size)
#   e2e_assert_transition_events NAME JOURNAL
#                                    an Event on the StatefulSet for every phase change journaled
#   e2e_wait_failed NAME SECS        waits until the phase annotation says Failed; the phases seen
#                                    in $phases; fails early on Completed or if every controller
#                                    has exited
#   e2e_claim_uids NAME N            "claim uid" lines of the N claims of NAME
#   e2e_warnings NAME                "reason: message" of every Warning event on statefulset/NAME
#   e2e_wait_event NAME ERE [SECS]   waits (20 s by default) until an Event on statefulset/NAME
#                                    reads "reason: message" matching ERE; that line in $event.
#                                    Events are sent after the write they report (and batched):
#                                    never check for one once, right after the state it follows
#   e2e_lease_holder LEASE           holderIdentity of the Lease LEASE in $ns (empty if none)
#   e2e_replay JOURNAL               `stsresize replay` of JOURNAL; fails unless it exits 0 (the
#                                    journal is consistent); its output in $replay

# Diagnostics of a failed e2e test (proof/lib.sh calls it first): the end of every controller
# log, and the whole report of a fatal signal (adapters/app/crash_handler.h) if there is one.
extra_diagnostics() {
  local log
  for log in "$work"/*.log; do
    [[ -f $log ]] || continue
    echo "--- ${log##*/} (tail)"
    tail -n 25 "$log" | cut -c1-400
    if grep -q "fatal signal" "$log"; then
      echo "--- ${log##*/}: fatal signal"
      grep -A 60 "fatal signal" "$log"
    fi
  done
}

e2e_init() {
  stsresize=${1:?path to the stsresize binary}
  work=$(mktemp -d)
  controllers=()
  controller_pid=''
  # shellcheck disable=SC2154 # $work is set above; expanded at exit
  on_exit "rm -rf '$work'"
  # shellcheck disable=SC2016 # expanded at exit
  on_exit 'for p in "${controllers[@]}"; do kill -KILL "$p" 2>/dev/null; done; true'
}

e2e_checksums() {
  local dir
  dir=$(pv_dir "$1")
  (cd "$dir" && find . -type f ! -name id ! -name marker -print0 | sort -z | xargs -0 sha256sum)
}

e2e_statefulset() {
  local name=$1 class=$2 replicas=$3 manifest=${4:-statefulset.yaml} i dir f
  apply_manifest "$manifest" NAME="$name" REPLICAS="$replicas" POD_MANAGEMENT=Parallel \
    STORAGE_CLASS="$class" SIZE=1Gi
  k rollout status "statefulset/$name" --timeout=180s >/dev/null || fail "statefulset/$name did not become ready"
  for ((i = 0; i < replicas; i++)); do
    dir=$(pv_dir "data-$name-$i")
    mkdir -p "$dir/random/nested"
    for f in $(seq 1 200); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
    head -c 1048576 /dev/urandom >"$dir/random/nested/big.bin"
    e2e_checksums "data-$name-$i" >"$work/before-$name-$i"
  done
}

e2e_start_controller() {
  local log=$1
  shift
  local journal=(--journal "$work/journal.db")
  [[ " $* " == *" --journal "* ]] && journal=()
  local metrics=(--metrics-bind-address 0)
  [[ " $* " == *" --metrics-bind-address "* ]] && metrics=()
  # shellcheck disable=SC2154 # ns comes from proof/lib.sh
  "$stsresize" run --kubeconfig "$KUBECONFIG" --namespace "$ns" "${journal[@]}" \
    "${metrics[@]}" --health-probe-bind-address "127.0.0.1:0" --poll-interval 1s \
    --log-format json "$@" >>"$work/$log" 2>&1 &
  controller_pid=$!
  controllers+=("$controller_pid")
}

# e2e_scrape LOG: the /metrics text of the controller that writes LOG.
e2e_scrape() {
  local address deadline=$((SECONDS + 20))
  until address=$(jq -r 'select(.msg == "listening" and .for == "metrics-bind-address") | .address' \
    "$work/$1" 2>/dev/null) && [[ -n $address ]]; do
    ((SECONDS < deadline)) || fail "$1: /metrics does not listen: $(tail -n 5 "$work/$1")"
    sleep 0.2
  done
  curl -sf "http://$address/metrics"
}

# e2e_metric LOG SERIES: the value of one series ("name{labels}"), 0 when absent.
e2e_metric() {
  e2e_scrape "$1" | awk -v want="$2" '$1 == want {print $2; found = 1}
    END {if (!found) print 0}'
}

e2e_stop_controller() {
  kill -TERM "$1"
  wait "$1" || fail "the controller $1 did not exit 0 on SIGTERM"
}

_e2e_any_controller_alive() {
  local p
  for p in "${controllers[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}

e2e_wait_phase() {
  local name=$1 pattern=$2 deadline=$((SECONDS + $3)) phase
  while :; do
    phase=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
    # shellcheck disable=SC2053 # a glob on purpose
    [[ -n $phase && $phase == $pattern ]] && return 0
    ((SECONDS > deadline)) && fail "phase $pattern not reached in $3s (last: ${phase:-none})"
    sleep 0.2
  done
}

e2e_wait_completed() {
  local name=$1 deadline=$((SECONDS + $2)) phase last last_phase=''
  phases=()
  while :; do
    phase=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
    if [[ -n $phase && $phase != "$last_phase" ]]; then
      phases+=("$phase")
      last_phase=$phase
    fi
    last=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null || true)
    [[ -z $phase && $last == *Completed* ]] && return 0
    if ((SECONDS > deadline)); then
      tail -n 30 "$work"/*.log
      fail "no completion after $2s (phases seen: ${phases[*]})"
    fi
    _e2e_any_controller_alive || fail "every controller exited: $(tail -n 20 "$work"/*.log)"
    sleep 0.5
  done
}

e2e_assert_data_intact() {
  local name=$1 replicas=$2 i claim
  for ((i = 0; i < replicas; i++)); do
    claim=data-$name-$i
    e2e_checksums "$claim" >"$work/after-$name-$i"
    diff -q "$work/before-$name-$i" "$work/after-$name-$i" >/dev/null || fail "data of $claim differs"
  done
}

e2e_assert_resized() {
  local name=$1 replicas=$2 size=$3 not_leftover=${4:-'^$'} i claim leftovers
  for ((i = 0; i < replicas; i++)); do
    claim=data-$name-$i
    [[ $(jp "pvc/$claim" '{.spec.resources.requests.storage}') == "$size" ]] || fail "pvc/$claim does not ask for $size"
    [[ $(jp "pvc/$claim" '{.status.phase}') == Bound ]] || fail "pvc/$claim is not Bound"
  done
  e2e_assert_data_intact "$name" "$replicas"
  ok "every claim $size and Bound; every file's sha256 unchanged"
  k rollout status "statefulset/$name" --timeout=120s >/dev/null || fail "statefulset/$name is not ready again"
  [[ $(jp "statefulset/$name" '{.status.readyReplicas}') == "$replicas" ]] || fail "readyReplicas is not $replicas"
  [[ $(jp "statefulset/$name" '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == "$size" ]] ||
    fail "the template does not ask for $size"
  [[ -z $(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/resize}') ]] ||
    fail "the request annotation is still there"
  leftovers=$(k get pvc,jobs,configmaps -o name | grep -E 'stsresize' | grep -vE "$not_leftover" || true)
  [[ -z $leftovers ]] || fail "left behind: $leftovers"
  ok "$replicas/$replicas Ready, templates $size, request cleared, nothing left behind"
}

# e2e_assert_transition_events NAME JOURNAL: every phase change the journal holds for NAME has its
# Kubernetes Event on the StatefulSet (PhaseChanged, ResizeCompleted or ResizeFailed, whose
# message names "<from> -> <to>"), and the operation's start has its ResizeStarted.
e2e_assert_transition_events() {
  local name=$1 journal_file=$2 transitions messages t missing=()
  transitions=$("$stsresize" replay --journal "$journal_file" --namespace "$ns" --statefulset "$name" -o json |
    jq -r '.rows[] | select(.event == "PhaseChanged") | "\(.phaseBefore) -> \(.phaseAfter)"') ||
    fail "replay of $journal_file failed"
  [[ -n $transitions ]] || fail "the journal holds no phase change for $name"
  messages=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=$name" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}')
  grep -q '^ResizeStarted: ' <<<"$messages" || missing+=("ResizeStarted")
  while read -r t; do
    # The scale-back's last step reports the failure rather than the transition.
    [[ $t == "ScalingBack -> Failed" ]] && { grep -q '^ResizeFailed: scaled back' <<<"$messages" || missing+=("$t"); continue; }
    grep -qF -- "$t" <<<"$messages" || missing+=("$t")
  done <<<"$transitions"
  ((${#missing[@]} == 0)) || fail "no event for: ${missing[*]}; events: $messages"
  ok "an event on statefulset/$name for each of its $(wc -l <<<"$transitions") phase changes"
}

e2e_wait_failed() {
  local name=$1 deadline=$((SECONDS + $2)) phase last last_phase=''
  phases=()
  while :; do
    phase=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
    if [[ -n $phase && $phase != "$last_phase" ]]; then
      phases+=("$phase")
      last_phase=$phase
    fi
    [[ $phase == Failed ]] && return 0
    last=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null || true)
    [[ -z $phase && $last == *Completed* ]] && fail "the operation completed instead of failing"
    if ((SECONDS > deadline)); then
      tail -n 30 "$work"/*.log
      fail "not Failed after $2s (phases seen: ${phases[*]})"
    fi
    _e2e_any_controller_alive || fail "every controller exited: $(tail -n 20 "$work"/*.log)"
    sleep 0.5
  done
}

e2e_claim_uids() {
  local name=$1 replicas=$2 i
  for ((i = 0; i < replicas; i++)); do
    echo "data-$name-$i $(jp "pvc/data-$name-$i" '{.metadata.uid}')"
  done
}

e2e_warnings() {
  k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=$1,type=Warning" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'
}

e2e_wait_event() {
  local name=$1 pattern=$2 secs=${3:-20} messages
  local deadline=$((SECONDS + secs))
  while :; do
    messages=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=$name" \
      -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}') || messages=''
    # A here-string, not a pipe into grep -q: under pipefail, grep quitting at its first match
    # can fail the writer with SIGPIPE.
    # shellcheck disable=SC2034 # $event is this function's answer
    event=$(grep -m1 -E -- "$pattern" <<<"$messages") && return 0
    ((SECONDS < deadline)) || fail "no Event on statefulset/$name matching $pattern after ${secs}s: $messages"
    sleep 0.5
  done
}

e2e_lease_holder() {
  k get lease "$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true
}

# e2e_journal_transitions < REPLAY_JSON: the journal's phase changes ("<from> -> <to>", one per
# line, in order) from `stsresize replay -o json`. A transition journaled again after a Resumed
# is left out: an annotation write that failed (Conflict after its attempts) leaves the journal a
# transition ahead, and the next reconcile resumes from the annotation and runs that step again.
# That is the engine's documented recovery, not a second transition, and the fold refuses a
# repeat without a Resumed before it.
e2e_journal_transitions() {
  jq -r '[.rows[] | select(.event == "PhaseChanged" or .event == "Resumed")]
    | reduce .[] as $r ({out: [], resumed: false};
        if $r.event == "Resumed" then .resumed = true
        else "\($r.phaseBefore) -> \($r.phaseAfter)" as $t
          | (if .resumed and (.out | last) == $t then . else .out += [$t] end) | .resumed = false
        end)
    | .out[]'
}

e2e_replay() {
  replay=$("$stsresize" replay --journal "$1" 2>&1) || fail "replay of $1 exited $?: $replay"
}
