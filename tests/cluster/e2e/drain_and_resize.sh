#!/usr/bin/env bash
# A resize and a scale-down drain wanted on one StatefulSet, on the local control plane with real
# data: one operation at a time, both complete, nothing lost. StatefulSet web: 3 replicas of 1Gi
# on sim-fixed (the copy path), random data per volume (e2e_statefulset); the annotation
# statefulsets.kubernetes.io/scaledown-pod-template holds a cleanup pod that drains its volume
# into an archive outside the cluster: it lists every file it reads (all but the replica's id and
# marker), records the sha256 of each in /receipts/<hostname>.sha256, tars them into
# /receipts/<hostname>.tar, extracts the archive again and checks every sha256, and only then
# deletes the files. /receipts is a hostPath directory of this test, so the receipt and the
# archive outlive the claim: the test checks both against the sha256 taken before. With
# DRAIN_HOLD the cleanup first waits for /receipts/release.
# Watches record every value of the StatefulSet's stsresize.dev/state (kind, operation id,
# phase), every cleanup pod (label scaledown-pod) and every claim.
#   drain_first    `kubectl scale --replicas 2` and the request {"data":{"storage":"2Gi"}} in one
#                  go, then `stsresize run`: the drain goes first. While its cleanup pod holds
#                  (phase Draining) the request waits and says so naming the drain
#                  (resize-status: queued: drain <id> ...), nothing is copied; released, web-2's
#                  files are archived with their sha256 and data-web-2 goes; then the resize of
#                  data-web-0/1 to 2Gi, every sha256 as before, 2/2 Ready. The state's sequence:
#                  every drain value before every resize value; data-web-2 never backed up nor
#                  2Gi; the journal replays (exit 0): the drain Completed, then the resize
#                  Completed, the second started after the first ended.
#   resize_first   stsresize.dev/mode=manual, the request for 2Gi; approved up to Recreating ->
#                  Restoring (every source claim deleted and created again on its copy's volume,
#                  the rebind path); then `kubectl scale --replicas 2` (no admission fence installed).
#                  To the resize that is a breach of its fence, not a scale-down: it sets 0 again
#                  (Warning FenceRestored naming spec.replicas 2 and the 3 replicas it ends at;
#                  the set also restarts on the recreated claims, which may make a restore
#                  recreate a claim again: Restoring -> Recreating), no drain starts (the set is at
#                  0 because of the resize, stsresize.dev/original-replicas), and, the mode back
#                  to auto, it completes at the 3 replicas it started from: 3 claims of 2Gi, every
#                  sha256 as before, 3/3 Ready, no cleanup pod ever. The person's scale-down,
#                  made again once the resize is over, drains ordinal 2 (its resized claim): the
#                  receipt is web-2's original files. The journal: the resize Completed, then
#                  the drain Completed.
#   drain_and_resize.sh STSRESIZE_BINARY drain_first|resize_first
case_name=${2:?drain_first or resize_first}
case $case_name in
  drain_first | resize_first) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY drain_first|resize_first" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# Last thing before the namespace goes: the drain's finalizer would hold its deletion.
# shellcheck disable=SC2016 # expanded at exit
on_exit 'k patch statefulset web --type merge -p '\''{"metadata":{"finalizers":null}}'\'' >/dev/null 2>&1; true'
e2e_init "${1:?path to the stsresize binary}"
use_namespace

template_key=statefulsets.kubernetes.io/scaledown-pod-template
receipts=$work/receipts
mkdir -p "$receipts"
chmod 777 "$receipts"

# The cleanup command (sh, host tools). DRAIN_HOLD non-empty: wait for /receipts/release first.
# shellcheck disable=SC2016 # expanded in the pod
cleanup_script='set -eu
host=$(cat /proc/sys/kernel/hostname)
r=/receipts/$host
echo "cleanup of $host"
if [ -n "${DRAIN_HOLD:-}" ]; then
  echo "holding until /receipts/release exists"
  until [ -e /receipts/release ]; do sleep 0.5; done
fi
cd /data
find . -type f ! -name id ! -name marker | LC_ALL=C sort >"$r.files"
xargs -r -d "\n" sha256sum <"$r.files" >"$r.sha256"
tar -cf "$r.tar" -T "$r.files"
rm -rf "$r.check"
mkdir -p "$r.check"
tar -xf "$r.tar" -C "$r.check"
(cd "$r.check" && xargs -r -d "\n" sha256sum <"$r.files") | cmp - "$r.sha256"
rm -rf "$r.check"
xargs -r -d "\n" rm -f <"$r.files"
find /data -mindepth 1 -type d -empty -delete
echo "cleanup of $host: $(wc -l <"$r.files") files archived in $r.tar, every sha256 checked, deleted"'

# cleanup_template HOLD: the JSON Pod (metadata + spec) of the annotation. No volume "data":
# stsresize adds it, bound to the drained ordinal's claim.
cleanup_template() {
  jq -cn --arg script "$cleanup_script" --arg hold "$1" --arg receipts "$receipts" '{
    metadata: {labels: {app: "web-drain"}},
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: "cleanup",
        image: "docker.io/library/busybox:1.36",
        command: ["sh", "-c", $script],
        env: [{name: "DRAIN_HOLD", value: $hold}],
        volumeMounts: [{name: "data", mountPath: "/data"}, {name: "receipts", mountPath: "/receipts"}]
      }],
      volumes: [{name: "receipts", hostPath: {path: $receipts, type: "Directory"}}]
    }
  }'
}

annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
operation() {
  annotation state | jq -r '.id // empty' 2>/dev/null || true
}
last_operation() {
  annotation last-operation | jq -r '.id // empty' 2>/dev/null || true
}
advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" "$@"
}

# states: "<kind> <operation> <phase>" of every value of stsresize.dev/state the watch saw, in
# order, repeats folded (an object the watch is still writing left out).
states() {
  jq -r '.metadata.annotations["stsresize.dev/state"] // empty | fromjson
      | "\(.kind // "Resize") \(.id) \(.phase)"' "$work/watch-sts" 2>/dev/null | uniq || true
}
cleanup_pods() { jq -c '.object' "$work/watch-cleanup-pods" 2>/dev/null || true; }
claim_events() { jq -c '.object' "$work/watch-claims" 2>/dev/null || true; }

# wait_gone OBJECT SECS
wait_gone() {
  local deadline=$((SECONDS + $2))
  while k get "$1" >/dev/null 2>&1; do
    ((SECONDS > deadline)) && fail "$1 is still there after $2s: $(k get "$1" -o jsonpath='{.metadata.deletionTimestamp} {.metadata.finalizers}')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.5
  done
}

# wait_ended ID SECS: until operation ID is the last one, Completed, and no state is there.
wait_ended() {
  local deadline=$((SECONDS + $2))
  until [[ -z $(annotation phase) && $(last_operation) == "$1" && $(annotation last-operation) == *Completed* ]]; do
    ((SECONDS > deadline)) && fail "operation $1 not Completed after $2s: phase '$(annotation phase)', last $(annotation last-operation)"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.5
  done
}

# wait_new_operation NOT SECS: "ID KIND" of the running operation once it is not NOT, both from
# one read of its state: a drain of one ordinal whose cleanup is quick can be over (its state
# removed) by the next read. The last-operation annotation of that same read goes to
# $work/last-at-new: a resize that begins in UpdatingTemplate deletes the StatefulSet (orphan)
# and creates it again, so a later read may find no object at all. A new operation that began
# and ended between two reads (a quick drain) is found as the last operation instead.
wait_new_operation() {
  local deadline=$((SECONDS + $2)) object state id last last_id first_last=unread
  while :; do
    object=$(k get statefulset web -o json 2>/dev/null || true)
    state=$(jq -r '.metadata.annotations["stsresize.dev/state"] // empty' <<<"$object" 2>/dev/null || true)
    id=$(jq -r '.id // empty' <<<"$state" 2>/dev/null || true)
    last=$(jq -r '.metadata.annotations["stsresize.dev/last-operation"] // empty' <<<"$object" 2>/dev/null || true)
    last_id=$(jq -r '.id // empty' <<<"$last" 2>/dev/null || true)
    if [[ -n $id && $id != "$1" ]]; then
      printf '%s\n' "$last" >"$work/last-at-new"
      echo "$id $(jq -r '.kind // "Resize"' <<<"$state")"
      return 0
    fi
    if [[ -n $object ]]; then
      [[ $first_last == unread ]] && first_last=$last_id
      if [[ -n $last_id && $last_id != "$1" && $last_id != "$first_last" ]]; then
        printf '%s\n' "$last" >"$work/last-at-new"
        echo "$last_id $(jq -r '.kind // "Resize"' <<<"$last")"
        return 0
      fi
    fi
    ((SECONDS > deadline)) && fail "no new operation after $2s (phase '$(annotation phase)', last $(annotation last-operation), status '$(annotation resize-status)')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}

# assert_receipt ORDINAL: the cleanup of web-ORDINAL read every file web-ORDINAL had, with its
# sha256 as before, and its archive holds them with the same sha256.
assert_receipt() {
  local o=$1 r=$receipts/web-$1
  [[ -s $r.sha256 && -s $r.tar ]] || fail "no receipt or archive from the cleanup of web-$o: $(ls "$receipts")"
  LC_ALL=C sort -k2 "$work/before-web-$o" >"$work/want-$o"
  LC_ALL=C sort -k2 "$r.sha256" | diff "$work/want-$o" - >"$work/receipt-$o.diff" ||
    fail "the cleanup of web-$o read other files than web-$o had (< before, > read): $(head -n 10 "$work/receipt-$o.diff")"
  mkdir -p "$work/archive-$o"
  tar -xf "$r.tar" -C "$work/archive-$o"
  (cd "$work/archive-$o" && find . -type f -print0 | xargs -0 sha256sum) | LC_ALL=C sort -k2 |
    diff "$work/want-$o" - >"$work/archive-$o.diff" ||
    fail "the archive of web-$o differs (< before, > archived): $(head -n 10 "$work/archive-$o.diff")"
  ok "the cleanup of web-$o read all $(wc -l <"$work/want-$o") files with their sha256 as before; its archive holds them, the same"
}

# assert_cleanup_succeeded ORDINAL: the watch saw the cleanup pod web-ORDINAL Succeeded, then
# it and data-web-ORDINAL are gone.
assert_cleanup_succeeded() {
  cleanup_pods | jq -e -s --arg n "web-$1" '[.[] | select(.metadata.name == $n) | .status.phase] | index("Succeeded")' >/dev/null ||
    fail "the cleanup pod web-$1 was never seen Succeeded"
  wait_gone "pod/web-$1" 60
  wait_gone "pvc/data-web-$1" 60
  ok "the cleanup pod web-$1 Succeeded; it and data-web-$1 are gone"
}

# assert_sequence KIND1 ID1 KIND2 ID2: the states the watch saw (printed) are those of ID1 (of
# KIND1) and ID2 (of KIND2) only, and every one of ID1 comes before every one of ID2: one
# operation at a time, in that order.
assert_sequence() {
  states >"$work/states"
  sed 's/^/    /' "$work/states"
  jq -nr --rawfile s "$work/states" --arg k1 "$1" --arg a "$2" --arg k2 "$3" --arg b "$4" '
      [$s | split("\n")[] | select(. != "") | split(" ")] as $rows
      | ($rows | map(.[1])) as $ids
      | if ($ids | unique) != ([$a, $b] | unique) then "operations seen: \($ids | unique)"
        elif ($rows | map(select(.[1] == $a)) | all(.[0] == $k1)) | not then "\($a) is not a \($k1)"
        elif ($rows | map(select(.[1] == $b)) | all(.[0] == $k2)) | not then "\($b) is not a \($k2)"
        elif ($ids | index($b)) < ($ids | rindex($a)) then "\($a) and \($b) interleave"
        else empty end' >"$work/sequence-error"
  [[ ! -s $work/sequence-error ]] || fail "state sequence: $(cat "$work/sequence-error")"
  ok "$(grep -c . "$work/states") states: every one of $1 $2, then every one of $3 $4; never both"
}

# slow_stop: e2e_statefulset web sim-fixed 3, but each pod takes 5 s to stop after SIGTERM (grace
# period 15 s): for those seconds after a scale-down the StatefulSet controller still counts the
# replica and its pod still mounts its claim, so no drain may begin yet. (The pod's shell runs
# with set -e: nothing in the trap may fail. nodesim signals every process of the pod, the sleep
# too.)
slow_stop() {
  local i f dir
  # shellcheck disable=SC2016 # the manifest's own variables
  NAME=web REPLICAS=3 POD_MANAGEMENT=Parallel STORAGE_CLASS=sim-fixed SIZE=1Gi \
    envsubst '${NAME} ${REPLICAS} ${POD_MANAGEMENT} ${STORAGE_CLASS} ${SIZE}' <"$manifests/statefulset.yaml" |
    sed -e 's/terminationGracePeriodSeconds: 2$/terminationGracePeriodSeconds: 15/' \
      -e 's|exec sleep infinity$|trap "sleep 5; exit 0" TERM; sleep infinity \& wait|' >"$work/web.yaml"
  grep -q 'trap "sleep 5; exit 0" TERM; sleep infinity & wait$' "$work/web.yaml" || fail "the manifest did not take the slow stop"
  k apply -f "$work/web.yaml" >/dev/null
  k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
  for i in 0 1 2; do
    dir=$(pv_dir "data-web-$i")
    mkdir -p "$dir/random/nested"
    for f in $(seq 1 200); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
    head -c 1048576 /dev/urandom >"$dir/random/nested/big.bin"
    e2e_checksums "data-web-$i" >"$work/before-web-$i"
  done
}

# --- the StatefulSet, its data, the cleanup template, the watches ----------------------------------

if [[ $case_name == drain_first ]]; then
  step "StatefulSet web: 3 replicas of 1Gi on sim-fixed whose pods take 5 s to stop, random data per volume"
  slow_stop
else
  step "StatefulSet web: 3 replicas of 1Gi on sim-fixed, random data per volume"
  e2e_statefulset web sim-fixed 3
fi
e2e_claim_uids web 3 >"$work/uids-before"
ok "$(wc -l <"$work/before-web-0") files per volume"

if [[ $case_name == drain_first ]]; then
  template=$(cleanup_template hold)
else
  template=$(cleanup_template "")
fi
k annotate statefulset web "$template_key=$template" >/dev/null
ok "annotated $template_key: the cleanup archives the volume's files into $receipts"

watchers=()
k get statefulset web --watch -o json >>"$work/watch-sts" 2>>"$work/watch-errors" &
watchers+=("$!")
k get pods -l scaledown-pod --watch --output-watch-events -o json >>"$work/watch-cleanup-pods" 2>>"$work/watch-errors" &
watchers+=("$!")
k get pvc --watch --output-watch-events -o json >>"$work/watch-claims" 2>>"$work/watch-errors" &
watchers+=("$!")
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; done; true'
wait_file "$work/watch-sts" 20

case $case_name in
  drain_first)
    step "start the controller: it puts the drain's finalizer on the StatefulSet"
    e2e_start_controller controller.log
    deadline=$((SECONDS + 60))
    until [[ $(jp statefulset/web '{.metadata.finalizers}') == *statefulsets.kubernetes.io/scaledown* ]]; do
      ((SECONDS > deadline)) && fail "no finalizer statefulsets.kubernetes.io/scaledown on statefulset/web"
      sleep 0.5
    done
    ok "finalizer statefulsets.kubernetes.io/scaledown: the controller has read web"

    step "scale 3 -> 2 and request 2Gi in one go: the request waits for the drain web-2 leaves"
    k scale statefulset web --replicas=2 >/dev/null
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
    # web-2 takes 5 s to stop: no drain can begin before, and the controller reads the request
    # meanwhile. The watch of the StatefulSet holds every value it had: the request's status
    # says it waits for the drain before any operation's state is there.
    waiting="queued: the drain of ordinal 2, left by a scale-down, goes first;"
    deadline=$((SECONDS + 30))
    until { jq --arg w "$waiting" '.metadata.annotations["stsresize.dev/resize-status"] // "" | startswith($w)' \
      "$work/watch-sts" 2>/dev/null || true; } | grep -q true; do
      ((SECONDS > deadline)) && fail "the request did not wait for the drain of ordinal 2: status '$(annotation resize-status)', state '$(annotation state | cut -c1-200)', pods: $(k get pods -o name | paste -sd' ')"
      sleep 0.2
    done
    jq -r --arg w "$waiting" '.metadata.annotations // {}
        | if (.["stsresize.dev/resize-status"] // "" | startswith($w)) then "waiting"
          elif .["stsresize.dev/state"] then (.["stsresize.dev/state"] | fromjson | .kind // "Resize")
          else empty end' "$work/watch-sts" 2>/dev/null | uniq >"$work/before-drain" || true
    [[ $(head -n 1 "$work/before-drain") == waiting ]] ||
      fail "an operation began before the request waited: $(paste -sd' ' "$work/before-drain")"
    ok "resize-status: $(jq -r --arg w "$waiting" '.metadata.annotations["stsresize.dev/resize-status"] // "" | select(startswith($w))' "$work/watch-sts" 2>/dev/null | head -n 1 || true)"

    step "the drain goes first: its cleanup pod holds, the request waits and names the drain"
    deadline=$((SECONDS + 120))
    until [[ $(annotation phase) == Draining ]] &&
      grep -q "holding until" "$nodesim_dir/pods/${ns}_web-2/cleanup.log" 2>/dev/null; do
      ((SECONDS > deadline)) && fail "no drain holding within 120s (phase '$(annotation phase)', state kind '$(annotation state | jq -r '.kind // "Resize"' 2>/dev/null)', status '$(annotation resize-status)', pods: $(k get pods -o name | paste -sd' '))"
      _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
      sleep 0.5
    done
    drain=$(operation)
    [[ $(annotation state | jq -r '.kind // "Resize"') == Drain ]] || fail "the running operation is not a drain: $(annotation state)"
    deadline=$((SECONDS + 30))
    until [[ $(annotation resize-status) == "queued: drain $drain "* ]]; do
      ((SECONDS > deadline)) && fail "the request does not say it waits for drain $drain: '$(annotation resize-status)'"
      sleep 0.5
    done
    queued=$(annotation resize-status)
    [[ $queued == *"goes first"* && $queued == *"started when it ends"* ]] || fail "resize-status: $queued"
    ok "drain $drain Draining, cleanup pod web-2 holding; resize-status: $queued"
    sleep 3
    [[ $(operation) == "$drain" && $(annotation phase) == Draining ]] || fail "the drain moved while held: $(annotation phase) $(operation)"
    for i in 0 1 2; do
      [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage}') == 1Gi ]] || fail "data-web-$i was resized while the drain runs"
    done
    [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 1Gi ]] ||
      fail "the template was changed while the drain runs"
    [[ -z $(k get pvc,jobs -o name | grep stsresize || true) ]] || fail "a copy began while the drain runs: $(k get pvc,jobs -o name | grep stsresize)"
    [[ $(jp statefulset/web '{.spec.replicas}') == 2 && $(jp statefulset/web '{.status.readyReplicas}') == 2 ]] ||
      fail "web does not run 2 replicas while the drain runs"
    ok "3 s later: the same drain, Draining; every claim 1Gi, template 1Gi, no backup claim or Job, 2/2 Ready"

    step "release the cleanup: web-2's files archived, data-web-2 gone; then the resize"
    touch "$receipts/release"
    new=$(wait_new_operation "$drain" 180)
    resize=${new%% *}
    [[ ${new#* } == Resize ]] || fail "operation $resize is not a resize: $new"
    last=$(cat "$work/last-at-new")
    [[ $(jq -r '.id // empty' <<<"$last" 2>/dev/null) == "$drain" && $last == *Completed* ]] ||
      fail "the resize began but the drain did not complete first: last-operation '$last' as the resize began"
    ! k get pvc data-web-2 >/dev/null 2>&1 || fail "the resize began while data-web-2 is still there"
    ok "drain $drain Completed, data-web-2 gone; resize $resize began"
    assert_cleanup_succeeded 2
    assert_receipt 2
    wait_ended "$resize" 300
    ok "resize $resize Completed"

    step "data-web-0/1 resized, every file as before"
    e2e_assert_resized web 2 2Gi
    [[ -z $(annotation resize-status) ]] || fail "resize-status left: $(annotation resize-status)"
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left"

    step "the sequence: never both at once, the drain first"
    assert_sequence Drain "$drain" Resize "$resize"
    claim_events | jq -e -s '[.[] | select(.metadata.name | startswith("data-web-2-stsresize"))] | length == 0' >/dev/null ||
      fail "a backup of data-web-2 was made"
    claim_events | jq -e -s '[.[] | select(.metadata.name == "data-web-2") | .spec.resources.requests.storage] | all(. == "1Gi")' >/dev/null ||
      fail "data-web-2 was resized"
    ok "data-web-2 never backed up nor resized"
    jq -r '.metadata.annotations["stsresize.dev/resize-status"] // empty' "$work/watch-sts" 2>/dev/null | uniq |
      sed 's/^/    resize-status seen: /' || true
    expected_kinds="drain resize"
    ;;

  resize_first)
    step "mode manual, request 2Gi, start the controller; approve up to Recreating -> Restoring"
    k annotate statefulset web stsresize.dev/mode=manual >/dev/null
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
    e2e_start_controller controller.log
    deadline=$((SECONDS + 300))
    approved=''
    # One read per turn: the transition read is the one approved, never the one to stop at.
    while awaiting=$(annotation awaiting-approval) && [[ $awaiting != "Recreating -> Restoring" ]]; do
      ((SECONDS > deadline)) && fail "no wait at Recreating -> Restoring (phase '$(annotation phase)', awaiting '$awaiting')"
      _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
      if [[ -n $awaiting && "$(operation) $awaiting" != "$approved" ]]; then
        out=$(advance --approve --as e2e-operator 2>&1) || fail "advance --approve ($awaiting) exited $?: $out"
        approved="$(operation) $awaiting"
        note "approved $awaiting"
      fi
      sleep 0.3
    done
    resize=$(operation)
    # The rebind path (the default): each claim created again on its copy's volume, no backup
    # claim left.
    [[ -z $(k get pvc -o name | grep stsresize-bak || true) ]] || fail "a backup claim is left: $(k get pvc -o name)"
    [[ $(e2e_claim_uids web 3) != "$(cat "$work/uids-before")" ]] || fail "the source claims were not recreated"
    ok "resize $resize waits at Recreating -> Restoring: the claims recreated on their copies' volumes"

    step "scale to 2 during the resize: the fence set again, no drain"
    k scale statefulset web --replicas=2 >/dev/null
    deadline=$((SECONDS + 60))
    until grep -q '^FenceRestored: .*spec.replicas of the StatefulSet is 2.*then scales it back to the 3 replicas it started from' <<<"$(e2e_warnings web)"; do
      ((SECONDS > deadline)) && fail "no Warning FenceRestored naming spec.replicas 2 and the 3 replicas it ends at: $(e2e_warnings web)"
      sleep 0.5
    done
    deadline=$((SECONDS + 60))
    until [[ $(jp statefulset/web '{.spec.replicas}') == 0 && -z $(k get pods -l app=web -o name) ]]; do
      ((SECONDS > deadline)) && fail "the fence is not back: replicas $(jp statefulset/web '{.spec.replicas}'), pods $(k get pods -o name | paste -sd' ')"
      sleep 0.5
    done
    [[ $(operation) == "$resize" && $(annotation state | jq -r '.kind // "Resize"') == Resize ]] ||
      fail "the running operation is no longer the resize: $(annotation state)"
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod runs during the resize"
    ok "$(grep -m1 '^FenceRestored' <<<"$(e2e_warnings web)" | cut -c1-160)...; replicas 0 again, no pod"
    sleep 3
    [[ -z $(cleanup_pods) ]] || fail "a cleanup pod was made during the resize: $(cleanup_pods | head -n 1 | cut -c1-300)"
    [[ $(operation) == "$resize" ]] || fail "the operation changed: $(annotation state)"
    ok "3 s later: still resize $resize, no cleanup pod ever"

    step "mode auto: the resize completes at the 3 replicas it started from"
    k annotate --overwrite statefulset web stsresize.dev/mode=auto >/dev/null
    wait_ended "$resize" 300
    e2e_assert_resized web 3 2Gi
    [[ -z $(cleanup_pods) ]] || fail "a cleanup pod was made: $(cleanup_pods | head -n 1 | cut -c1-300)"
    [[ -z $(annotation original-replicas) ]] || fail "original-replicas left: $(annotation original-replicas)"
    ok "3/3, nothing drained, no cleanup pod ever"

    step "the person scales to 2 again: ordinal 2's resized claim is drained"
    k scale statefulset web --replicas=2 >/dev/null
    new=$(wait_new_operation "$resize" 120)
    drain=${new%% *}
    [[ ${new#* } == Drain ]] || fail "operation $drain is not a drain: $new"
    wait_ended "$drain" 180
    assert_cleanup_succeeded 2
    assert_receipt 2
    e2e_claim_uids web 2 >"$work/uids-resized"
    e2e_assert_data_intact web 2
    for i in 0 1; do
      [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage}') == 2Gi ]] || fail "data-web-$i is not 2Gi"
    done
    k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready"
    [[ $(jp statefulset/web '{.status.readyReplicas}') == 2 ]] || fail "readyReplicas is not 2"
    ok "drain $drain Completed; data-web-0/1 2Gi with every file as before, 2/2 Ready"
    step "the sequence: never both at once, the resize first"
    assert_sequence Resize "$resize" Drain "$drain"
    note "Warnings on statefulset/web:"
    e2e_warnings web | cut -c1-200 | sed 's/^/      /'
    expected_kinds="resize drain"
    ;;
esac

# --- the journal --------------------------------------------------------------------------------

step "the journal: two operations, both Completed, one after the other"
e2e_stop_controller "$controller_pid"
e2e_replay "$work/journal.db"
rows=$("$stsresize" replay --journal "$work/journal.db" -o json) || fail "replay -o json exited $?"
ended=$(jq -r '[.operations[] | "\(.operation) \(.finalPhase)"] | sort | join(", ")' <<<"$rows")
if [[ $expected_kinds == "drain resize" ]]; then
  want="$drain Completed, $resize Completed"
else
  want="$resize Completed, $drain Completed"
fi
[[ $ended == "$(tr ',' '\n' <<<"$want" | sed 's/^ //' | sort | paste -sd, | sed 's/,/, /g')" ]] ||
  fail "the journal replays to: $ended (want $want)"
# The second began after the first ended: its first record is later than the first's last.
first=${want%% *}
second=${want#*, }
second=${second%% *}
jq -e --arg a "$first" --arg b "$second" '
    ([.rows[] | select(.operation == $a) | .time] | max) <= ([.rows[] | select(.operation == $b) | .time] | min)' <<<"$rows" >/dev/null ||
  fail "the operations overlap in the journal: $(jq -c --arg a "$first" --arg b "$second" '[.rows[] | select(.operation == $a or .operation == $b) | [.operation, .time, .event]]' <<<"$rows" | cut -c1-600)"
ok "replay exit 0: $ended; $first ended before $second began"
