#!/usr/bin/env bash
# What people and their tools do to a StatefulSet during a copy-path resize, on the local control
# plane, with pods that append to /data/writer.log all the time (a line: counter, pod, time), so a
# lost write shows as a line missing from the final claim. StatefulSet web: 3 replicas of 1Gi on
# sim-fixed, random data in every volume, an explicit request for 2Gi; no admission policy.
#   scale_up       mode=step: while BackingUp -> Recreating waits (every backup verified) someone
#                  scales the set back to 3 (a GitOps tool's self-heal) and then approves anyway.
#                  The controller must not go on: it scales back onto the intact source claims
#                  (same uids) and fails; the writers keep writing. Then `advance --retry` resizes
#                  for real: the last line each writer wrote before the scale-up, and the last
#                  line it wrote before the retried resize stopped it, are on the final claims.
#   state_removed  mode=manual, held at Recreating -> Restoring (every source replaced: on the
#                  rebind path, each claim created again on its copy's volume, no backup claim
#                  left; adapters/controller/attention.cc must still see the operation): the stsresize.dev/state and
#                  phase annotations are removed. The operation is continued from the journal
#                  (Warning OperationRecovered) and completes with every file's sha256 intact and
#                  3 replicas; one operation in the journal.
#   reapplied      as state_removed, but the StatefulSet is deleted and applied again from its
#                  manifest (3 replicas, no stsresize annotations): its pods start on the empty
#                  claims; the controller continues the operation, holds the set at 0 (Warning
#                  FenceRestored) until every restore is verified, and completes with the data.
#   journal_lost   as state_removed, and the controller comes back with an empty journal: it
#                  starts nothing over the backup claims (Warning UnfinishedOperation,
#                  resize-status), deletes nothing, leaves the set at 0. Backup claims still hold
#                  the data there only on the two-copy path (the rebind path has deleted them, each
#                  claim on its copy's volume): this case runs the controller with --no-rebind;
#                  the others run the default, rebind path.
#   edited         mode=step, held at BackingUp -> Recreating: the phase inside the state is
#                  edited to Completed. The controller restores the state from its journal
#                  (Warning StateRestored) and, approved, completes with the data.
#   scaled_down_forgotten
#                  mode=manual, no pre-copy (stsresize.dev/pre-copy=false), held at
#                  ScalingDown -> BackingUp (the set at 0, no backup yet):
#                  the controller stops, its journal is lost, the state and phase annotations are
#                  removed. The new controller starts a new operation from the replica count in
#                  stsresize.dev/original-replicas (3, Warning OriginalReplicasRecovered), not
#                  from the 0 the first one scaled to, and completes with 3/3 Ready.
#   people_mid_operation.sh STSRESIZE_BINARY CASE
case_name=${2:?scale_up, state_removed, reapplied, journal_lost, edited or scaled_down_forgotten}
case $case_name in
  scale_up | state_removed | reapplied | journal_lost | edited | scaled_down_forgotten) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY scale_up|state_removed|reapplied|journal_lost|edited|scaled_down_forgotten" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

advance() {
  "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --as e2e-operator "$@"
}
annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
# wait_awaiting TRANSITION SECONDS
wait_awaiting() {
  local deadline=$((SECONDS + $2))
  while [[ $(annotation awaiting-approval) != "$1" ]]; do
    ((SECONDS > deadline)) && fail "no wait for $1 in $2s (awaiting: '$(annotation awaiting-approval)', phase: '$(annotation phase)')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}
# approve_until TRANSITION: approves every transition that waits before TRANSITION waits.
approve_until() {
  local deadline=$((SECONDS + 300)) waiting
  while :; do
    waiting=$(annotation awaiting-approval)
    [[ $waiting == "$1" ]] && return 0
    if [[ -n $waiting && -z $(annotation advance) ]]; then
      out=$(advance --approve) || fail "advance --approve exited $? at $waiting: $out"
      ok "approved $waiting"
    fi
    ((SECONDS > deadline)) && fail "never waited for $1 (awaiting: '$waiting', phase: '$(annotation phase)')"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.3
  done
}
# sha256 of every file but the writer's log and the pods' identity files.
checksums() {
  (cd "$(pv_dir "$1")" && find . -type f ! -name id ! -name writer.log -print0 | sort -z | xargs -0 sha256sum)
}
# The last complete line of the writer's log in claim CLAIM's volume, read on the host.
last_line() {
  local file
  file="$(pv_dir "$1")/writer.log"
  [[ -s $file ]] || fail "$1 has no writer.log"
  tail -n 2 "$file" | head -n 1  # the very last may be half written
}
# expect_lines FILE: every line recorded in FILE ("claim line") is in that claim's writer.log.
expect_lines() {
  local claim line
  while read -r claim line; do
    grep -qxF "$line" "$(pv_dir "$claim")/writer.log" ||
      fail "$claim lost a write: \"$line\" is not in its writer.log (last there: $(tail -n 1 "$(pv_dir "$claim")/writer.log"))"
  done <"$1"
  ok "every recorded write is on the final claims ($(wc -l <"$1") checked)"
}
manifest() {
  cat <<EOF
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
          echo "\$HOSTNAME" > /data/id
          n=\$(tail -n 1 /data/writer.log 2>/dev/null | cut -d' ' -f1)
          n=\${n:-0}
          while :; do
            n=\$((n + 1))
            echo "\$n \$HOSTNAME \$(date +%s%N)" >> /data/writer.log
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
          storage: ${1:-1Gi}
EOF
}

step "StatefulSet web: 3 writers on claims of 1Gi (sim-fixed), random data in every volume"
manifest | k apply -f - >/dev/null
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
for i in 0 1 2; do
  dir=$(pv_dir "data-web-$i")
  mkdir -p "$dir/random"
  for f in $(seq 1 100); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
  checksums "data-web-$i" >"$work/before-$i"
done
sleep 1
ok "writers writing: $(last_line data-web-0)"
mode=manual
[[ $case_name == scale_up || $case_name == edited ]] && mode=step
k annotate statefulset web "stsresize.dev/mode=$mode" >/dev/null
# No backup claim before BackingUp: a pre-copy would make them in PreCopying, and a start that
# finds them with nothing saying where their operation stood is refused (UnfinishedOperation).
[[ $case_name == scaled_down_forgotten ]] && k annotate statefulset web stsresize.dev/pre-copy=false >/dev/null

step "start the controller; request 2Gi"
controller_args=()
[[ $case_name == journal_lost ]] && controller_args=(--no-rebind)
e2e_start_controller controller.log "${controller_args[@]}"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null

# Every file's sha256 as before, 3/3 Ready at 2Gi, nothing left, the journal consistent.
assert_completed() {
  e2e_wait_completed web 300
  ok "completed; phases seen: ${phases[*]}"
  for i in 0 1 2; do
    [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage}') == 2Gi ]] || fail "pvc/data-web-$i is not 2Gi"
    checksums "data-web-$i" >"$work/after-$i"
    diff -q "$work/before-$i" "$work/after-$i" >/dev/null || fail "data of data-web-$i differs: $(diff "$work/before-$i" "$work/after-$i" | head -n 5)"
  done
  ok "every claim 2Gi, every file's sha256 unchanged"
  k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready again"
  [[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "spec.replicas is not 3"
  leftovers=$(k get pvc,jobs,configmaps -o name | grep stsresize || true)
  [[ -z $leftovers ]] || fail "left behind: $leftovers"
  ok "3/3 Ready, nothing left behind"
}

case $case_name in
  scale_up)
    wait_awaiting "BackingUp -> Recreating" 300
    e2e_claim_uids web 3 >"$work/uids-before"
    step "someone scales web back to 3 while BackingUp -> Recreating waits, then approves"
    k scale statefulset web --replicas=3 >/dev/null
    # The approval races the controller, which may already have given up: either is fine, as
    # long as the sources are never touched.
    set +e
    out=$(advance --approve 2>&1)
    code=$?
    set -e
    [[ $code == 0 || ($code == 5 && ($out == *"in phase ScalingBack"* || $out == *"ended in phase Failed"*)) ]] ||
      fail "advance --approve exited $code: $out"
    ok "approve: exit $code"
    e2e_wait_failed web 180
    k rollout status statefulset/web --timeout=120s >/dev/null || fail "the writers did not start again"
    sleep 2
    for i in 0 1 2; do echo "data-web-$i $(last_line "data-web-$i")"; done >"$work/after-scale-up"
    ok "writers writing again: $(head -n 1 "$work/after-scale-up")"
    ok "Failed; phases seen: ${phases[*]}"
    failure=$(jq -r .failure <<<"$(annotation state)")
    # Either is the truth, whichever the controller saw first: its StatefulSet and pod caches are
    # fed by two watches, in no order between them (under load the pod started by the scale-up
    # can arrive before the StatefulSet's new spec).
    [[ $failure == *"the fence was broken during BackingUp"*"spec.replicas of the StatefulSet is 3"* ||
      $failure =~ "the fence was broken during BackingUp (pod web-"[0-2]" (StatefulSet web) mounts data-web-"[0-2]")" ]] ||
      fail "the failure does not say why: $failure"
    ok "failure: ${failure:0:120}..."
    e2e_claim_uids web 3 >"$work/uids-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "a source claim was replaced: $(cat "$work/uids-after")"
    [[ -z $(k get pvc data-web-0 data-web-1 data-web-2 -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] ||
      fail "a source claim is being deleted"
    [[ -z $(k get pvc -o name | grep stsresize-bak || true) ]] || fail "backup claims left: $(k get pvc -o name)"
    [[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "not at 3 replicas"
    ok "the same source claims, no backup claim left, 3 replicas writing"
    step "advance --retry: the resize again, every write kept"
    out=$(advance --retry) || fail "advance --retry exited $?: $out"
    approve_until "BackingUp -> Recreating"
    # The writers stopped when the retried resize scaled down: their last lines, on the sources.
    for i in 0 1 2; do echo "data-web-$i $(last_line "data-web-$i")"; done >"$work/before-stop"
    out=$(advance --approve) || fail "advance --approve exited $?: $out"
    assert_completed
    expect_lines "$work/after-scale-up"
    expect_lines "$work/before-stop"
    ;;
  state_removed | reapplied | journal_lost)
    approve_until "Recreating -> Restoring"
    if [[ $case_name == journal_lost ]]; then
      ok "every source claim replaced; the data only in $(k get pvc -o name | grep -c stsresize-bak) backup claims"
    else
      ok "every source claim replaced (the rebind path: each on its copy's volume)"
    fi
    if [[ $case_name == journal_lost ]]; then
      e2e_stop_controller "$controller_pid"
      rm -f "$work"/journal.db*
    fi
    if [[ $case_name == reapplied ]]; then
      step "kubectl delete statefulset web; kubectl apply the manifest again (3 replicas, 2Gi)"
      k delete statefulset web --wait=true >/dev/null
      manifest 2Gi | k apply -f - >/dev/null
    else
      step "the stsresize.dev/state and phase annotations removed (mode back to auto)"
      k annotate statefulset web stsresize.dev/state- stsresize.dev/phase- stsresize.dev/mode- \
        stsresize.dev/awaiting-approval- >/dev/null
    fi
    if [[ $case_name == journal_lost ]]; then
      e2e_start_controller controller-2.log "${controller_args[@]}"
      deadline=$((SECONDS + 60))
      until e2e_warnings web | grep -q UnfinishedOperation; do
        ((SECONDS > deadline)) && fail "no Warning UnfinishedOperation: $(e2e_warnings web)"
        sleep 0.5
      done
      ok "$(e2e_warnings web | grep UnfinishedOperation | head -n 1 | cut -c1-200)..."
      [[ $(annotation resize-status) == "rejected: backup claims data-web-0-stsresize-bak, data-web-1-stsresize-bak, data-web-2-stsresize-bak hold data"* ]] ||
        fail "resize-status: $(annotation resize-status)"
      sleep 3
      [[ $(k get pvc -o name | grep -c stsresize-bak) == 3 ]] || fail "a backup claim went: $(k get pvc -o name)"
      [[ -z $(annotation state) ]] || fail "an operation started: $(annotation state)"
      [[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "the set was scaled"
      ok "no operation started, the 3 backup claims kept, the set at 0"
      exit 0
    fi
    assert_completed
    warnings=$(e2e_warnings web)
    grep -q "OperationRecovered: operation .* had no state on this StatefulSet" <<<"$warnings" ||
      fail "no Warning OperationRecovered: $warnings"
    if [[ $case_name == reapplied ]]; then
      grep -q "FenceRestored" <<<"$warnings" || fail "no Warning FenceRestored: $warnings"
      ok "OperationRecovered and FenceRestored given"
    else
      ok "OperationRecovered given"
    fi
    e2e_replay "$work/journal.db"
    [[ $(grep -c "Completed" <<<"$replay") -ge 1 ]] || fail "the journal does not replay to Completed: $replay"
    ;;
  edited)
    wait_awaiting "BackingUp -> Recreating" 300
    step "the phase inside stsresize.dev/state edited to Completed"
    state=$(annotation state | jq -c '.phase = "Completed" | del(.awaitingApproval)')
    k annotate --overwrite statefulset web "stsresize.dev/state=$state" stsresize.dev/mode- >/dev/null
    deadline=$((SECONDS + 60))
    until e2e_warnings web | grep -q StateRestored; do
      ((SECONDS > deadline)) && fail "no Warning StateRestored: $(e2e_warnings web)"
      sleep 0.5
    done
    ok "$(e2e_warnings web | grep StateRestored | head -n 1 | cut -c1-160)..."
    assert_completed
    ;;
  scaled_down_forgotten)
    approve_until "ScalingDown -> BackingUp"
    [[ $(jp statefulset/web '{.spec.replicas}') == 0 ]] || fail "spec.replicas is not 0 after ScalingDown"
    [[ $(annotation original-replicas) == 3 ]] || fail "original-replicas: '$(annotation original-replicas)'"
    [[ -z $(k get pvc -o name | grep stsresize-bak || true) ]] || fail "a backup claim exists already"
    ok "scaled down to 0, no backup yet, original-replicas 3"
    step "the controller stops, its journal is lost, the state and phase annotations are removed"
    e2e_stop_controller "$controller_pid"
    rm -f "$work"/journal.db*
    k annotate statefulset web stsresize.dev/state- stsresize.dev/phase- stsresize.dev/mode- \
      stsresize.dev/awaiting-approval- >/dev/null
    e2e_start_controller controller-2.log
    deadline=$((SECONDS + 60))
    until [[ -n $(annotation state) ]]; do
      ((SECONDS > deadline)) && fail "no new operation started (resize-status: '$(annotation resize-status)')"
      sleep 0.3
    done
    original=$(jq -r .originalReplicas <<<"$(annotation state)")
    ((original == 3)) || fail "the new operation starts from $original replicas, not 3: $(k get events -o custom-columns=R:.reason,M:.message --field-selector involvedObject.name=web | tail -n 12) $(k get sts web -o json | jq -c .metadata.annotations) $("$stsresize" replay --journal "$work/journal.db" 2>&1 | head -n 20)"
    e2e_wait_event web '^OriginalReplicasRecovered: .*starts from the 3 replicas'
    ok "a new operation from 3 replicas: ${event:0:140}..."
    assert_completed
    [[ -z $(annotation original-replicas) ]] || fail "original-replicas left: $(annotation original-replicas)"
    ;;
esac
e2e_stop_controller "$controller_pid"
