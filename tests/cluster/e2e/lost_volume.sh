#!/usr/bin/env bash
# Lost-volume recovery on a private control plane with 5 simulated nodes (a node is lost or
# deleted here, which no other test may see). StatefulSet web: 3 replicas of 1Gi on sim-fixed
# (hostPath volumes pinned to their node), one per node (required pod anti-affinity), 200 random
# files and 1 MiB per volume; stsresize.dev/lost-volume-recovery and a grace of 5s; the
# controller checks every 1s. The node of web-1 (N) is lost: the simulator stops it (nodesim
# fault lostNodes: no heartbeat, its pods' processes killed, its volumes unreachable) and then:
#   deleted         `kubectl delete node N` (not registered again): web-1 runs Ready on another
#                   node on a new, empty claim data-web-1 annotated stsresize.dev/recovered-from
#                   its old volume, the pod annotated too; the old volume kept (Retain) with every
#                   file's sha256 as before; web-0 and web-2 the same pod and claim uids, their
#                   data unchanged; Events RecoveryStarted, VolumeReplaced, RecoveryCompleted; the
#                   journal replays (exit 0).
#   out_of_service  N tainted node.kubernetes.io/out-of-service (not deleted): the same.
#   not_ready       N only NotReady for 20 s: nothing is done (no operation, every uid the same),
#                   a Warning NodeNotReady; then N comes back Ready and nothing is done either.
#   manual          mode manual, N deleted: the recovery waits in AwaitingNode for approval for
#                   15 s with every uid the same; `stsresize advance --approve`, then as deleted.
#                   (deleted and manual: then `stsresize describe` lists the lost volume and the
#                   command to delete it.)
#   two_nodes       the nodes of web-0 and web-2 deleted at once: two recoveries one after the
#                   other (the second starts after the first ended), both replicas Ready on new
#                   claims, web-1 untouched.
#   fresh_claim     N lost (NotReady) first; then a claim data-web-3 is bound by hand to a volume
#                   pinned to N (a static local volume) and the set scaled to 4 (web-3 Pending on
#                   it), then N deleted: web-1 is recovered as in deleted; data-web-3, created
#                   after N was last seen Ready, is never touched (same uid 15 s after, one
#                   recovery in the journal).
#   podgc_first     as deleted with a grace of 90s, as in real life longer than the 40 s after which
#                   kube-controller-manager's pod garbage collector force-deletes a pod whose node
#                   is gone: web-1 is replaced by a new pod, Pending and placed nowhere, while the
#                   recovery waits; the recovery then deletes the claim (which that pod does not
#                   hold), leaves the pod, and the StatefulSet controller gives it a new claim: as
#                   deleted.
#   crash_journal_kept, crash_journal_lost
#                   as deleted, but every controller process is SIGKILLed right after its first
#                   write (failpoint after-write:1: each state annotation, the Retain, each delete,
#                   each mark is a crash point), and started again until the recovery ended;
#                   journal_lost deletes the journal after every crash. Each run died of SIGKILL
#                   at the write it announced; then the same checks as deleted, the new claim and
#                   pod created once (no second replacement).
#   reseed          as deleted, with a re-seed pod template (stsresize.dev/recovery-pod-template)
#                   whose pod fails if the replica already wrote on the new claim (/data/id) and
#                   else writes /data/seeded: web-1 runs on a new claim holding that file and
#                   nothing else of the old data; the re-seed pod is gone, the StatefulSet resumed
#                   (not being deleted, no finalizer stsresize.dev/rolling), web-0 and web-2 the
#                   same pods (the pause and the resume restarted nothing); Events
#                   StatefulSetPaused and ReseedSucceeded, no ReseedFailed.
#   crash_reseed_journal_lost
#                   reseed with kill -9 after every write, as crash_journal_lost: the pause, the
#                   claims and the re-seed pod created, the resume's Orphan delete, ConfigMap,
#                   finalizer removal and create are each a crash point.
#   lost_volume.sh STSRESIZE_BINARY deleted|out_of_service|not_ready|manual|two_nodes|fresh_claim|podgc_first|crash_journal_kept|crash_journal_lost|reseed|crash_reseed_journal_lost
usage="deleted|out_of_service|not_ready|manual|two_nodes|fresh_claim|podgc_first|crash_journal_kept|crash_journal_lost|reseed|crash_reseed_journal_lost"
case_name=${2:?$usage}
case $case_name in
  deleted | out_of_service | not_ready | manual | two_nodes | fresh_claim | podgc_first | crash_journal_kept | crash_journal_lost | reseed | crash_reseed_journal_lost) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY $usage" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

cluster=$repo/scripts/cluster
private=$(basename "$cluster_dir")-lost-${case_name//_/-}
# The namespace goes with the control plane: `ns=` spares the exit a delete that cannot answer.
on_exit "'$cluster' down --name '$private' >/dev/null 2>&1; ns="
e2e_init "${1:?path to the stsresize binary}"
step "bring up private cluster $private (5 nodes)"
KUBECONFIG=$("$cluster" up --name "$private" --nodes 5 | tail -n 1) ||
  fail "scripts/cluster up --name $private failed"
export KUBECONFIG
cluster_dir=$(dirname "$KUBECONFIG")
nodesim_dir=$cluster_dir/nodesim
use_namespace

step "StatefulSet web: 3 replicas, one per node, with data"
e2e_statefulset web sim-fixed 3 statefulset-spread.yaml
mode=auto
[[ $case_name == manual ]] && mode=manual
k annotate statefulset web stsresize.dev/lost-volume-recovery=$mode stsresize.dev/lost-volume-grace=5s >/dev/null
reseed=0
if [[ $case_name == *reseed* ]]; then
  reseed=1
  # Fails if the replica ran on the new claim first (it writes /data/id as it starts).
  reseed_script='set -e
[ ! -e /data/id ] || { echo "the replica ran on this claim before the re-seed" >&2; exit 7; }
echo seeded >/data/seeded
sleep 2'
  reseed_template=$(jq -cn --arg script "$reseed_script" '{
    metadata: {labels: {app: "web-reseed"}},
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: "reseed",
        image: "docker.io/library/busybox:1.36",
        command: ["sh", "-c", $script],
        volumeMounts: [{name: "data", mountPath: "/data"}]
      }]
    }
  }')
  k annotate statefulset web "stsresize.dev/recovery-pod-template=$reseed_template" >/dev/null
fi
node_of() { jp "pod/$1" '{.spec.nodeName}'; }
uid_of() { jp "$1" '{.metadata.uid}'; }
declare -A node pod_uid claim_uid volume
for i in 0 1 2; do
  node[$i]=$(node_of "web-$i")
  pod_uid[$i]=$(uid_of "pod/web-$i")
  claim_uid[$i]=$(uid_of "pvc/data-web-$i")
  volume[$i]=$(jp "pvc/data-web-$i" '{.spec.volumeName}')
  # The old volume's directory stays on the host: its files are checked there after the loss.
  cp "$work/before-web-$i" "$work/volume-before-$i"
  pv_dir "data-web-$i" >"$work/dir-$i"
done
[[ ${node[0]} != "${node[1]}" && ${node[1]} != "${node[2]}" && ${node[0]} != "${node[2]}" ]] ||
  fail "the replicas share a node: ${node[*]}"
ok "web-0 on ${node[0]}, web-1 on ${node[1]}, web-2 on ${node[2]}"

[[ $case_name == crash_* ]] || e2e_start_controller controller.log --lost-volume-check-interval 1s

# volume_checksums I: sha256 of every file in the old volume of web-I (on the host).
volume_checksums() {
  (cd "$(cat "$work/dir-$1")" && find . -type f ! -name id ! -name marker -print0 | sort -z |
    xargs -0 sha256sum)
}
# untouched I: web-I's pod and claim are the same objects, with the same data.
untouched() {
  [[ $(uid_of "pod/web-$1") == "${pod_uid[$1]}" ]] || fail "pod web-$1 was replaced"
  [[ $(uid_of "pvc/data-web-$1") == "${claim_uid[$1]}" ]] || fail "claim data-web-$1 was replaced"
  e2e_checksums "data-web-$1" | diff -q - "$work/before-web-$1" >/dev/null ||
    fail "data of data-web-$1 changed"
}
# recovered I: web-I Ready on a live node, on a new empty claim marked with its old volume, which
# is kept (Retain) with its files.
recovered() {
  local i=$1 pv now
  k wait --for=condition=Ready "pod/web-$i" --timeout=120s >/dev/null || fail "web-$i is not Ready"
  [[ $(node_of "web-$i") != "${node[$i]}" ]] || fail "web-$i is still on ${node[$i]}"
  [[ $(uid_of "pvc/data-web-$i") != "${claim_uid[$i]}" ]] || fail "data-web-$i was not replaced"
  [[ $(jp "pvc/data-web-$i" '{.metadata.annotations.stsresize\.dev/recovered-from}') == "${volume[$i]}" ]] ||
    fail "data-web-$i is not annotated recovered-from ${volume[$i]}"
  [[ $(jp "pod/web-$i" '{.metadata.annotations.stsresize\.dev/recovered-from}') == "${volume[$i]}" ]] ||
    fail "pod web-$i is not annotated recovered-from ${volume[$i]}"
  pv=$(jp "pvc/data-web-$i" '{.spec.volumeName}')
  [[ $pv != "${volume[$i]}" ]] || fail "data-web-$i is still on ${volume[$i]}"
  now=$(cd "$(pv_dir "data-web-$i")" && find . -type f ! -name id ! -name marker ! -name seeded)
  [[ -z $now ]] || fail "the new data-web-$i holds more than the pod and the re-seed wrote: $now"
  if ((reseed)); then
    [[ $(cat "$(pv_dir "data-web-$i")/seeded" 2>/dev/null) == seeded ]] ||
      fail "the new data-web-$i does not hold what the re-seed wrote"
  fi
  [[ $(kubectl get pv "${volume[$i]}" -o jsonpath='{.spec.persistentVolumeReclaimPolicy}') == Retain ]] ||
    fail "the lost volume ${volume[$i]} is not kept (Retain)"
  volume_checksums "$i" | diff -q - "$work/volume-before-$i" >/dev/null ||
    fail "the files of the lost volume ${volume[$i]} changed"
  ok "web-$i Ready on $(node_of "web-$i") on a new empty claim ($pv), marked; ${volume[$i]} kept with every file"
}
lose() { set_fault lostNodes "$1"; }
wait_recoveries() {
  local want=$1 deadline=$((SECONDS + $2)) n
  while :; do
    n=$("$stsresize" replay --journal "$work/journal.db" --namespace "$ns" --statefulset web -o json 2>/dev/null |
      jq '[.rows[] | select(.event == "OperationFinished")] | length' 2>/dev/null || echo 0)
    [[ $n -ge $want && -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]] && return 0
    ((SECONDS < deadline)) || fail "$want recoveries not ended within $2s ($n)"
    _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
    sleep 0.5
  done
}

# reseeded I: the re-seed of web-I ended well and left nothing behind; the StatefulSet runs again.
reseeded() {
  local i=$1
  [[ -z $(k get pod "web-$i-stsresize-reseed" --ignore-not-found -o name) ]] ||
    fail "the re-seed pod web-$i-stsresize-reseed is still there"
  [[ -z $(jp statefulset/web '{.metadata.deletionTimestamp}') ]] || fail "StatefulSet web is still paused"
  [[ $(jp statefulset/web '{.metadata.finalizers}') != *stsresize.dev/rolling* ]] ||
    fail "StatefulSet web still carries the finalizer stsresize.dev/rolling"
  [[ -z $(k get configmap --ignore-not-found -o name | grep definition) ]] ||
    fail "the definition ConfigMap of the pause is left"
  [[ -z $(kubectl get events -n "$ns" --field-selector reason=ReseedFailed -o name) ]] ||
    fail "the re-seed failed: $(kubectl get events -n "$ns" --field-selector reason=ReseedFailed \
      -o jsonpath='{.items[*].message}')"
  ok "web-$i re-seeded before it started; the re-seed pod gone; StatefulSet web resumed"
}

case $case_name in
  crash_journal_kept | crash_journal_lost | crash_reseed_journal_lost)
    step "lose ${node[1]} and delete its Node; kill -9 after every write"
    lose "${node[1]}"
    kubectl delete node "${node[1]}" >/dev/null
    ended() {
      [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') &&
        $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}') == *Recovery* ]]
    }
    crashes=0
    while ! ended; do
      ((crashes < 40)) || fail "not recovered after 40 crashes"
      log=run-$crashes.log
      STSRESIZE_FAILPOINT=after-write:1 e2e_start_controller "$log" --lost-volume-check-interval 1s
      pid=$controller_pid
      deadline=$((SECONDS + 120))
      while kill -0 "$pid" && ((SECONDS < deadline)) && ! ended; do sleep 0.2; done 2>/dev/null
      if kill -0 "$pid" 2>/dev/null; then
        ended && break
        fail "run $crashes still alive after 120s: $(tail -n 20 "$work/$log")"
      fi
      status=0
      { wait "$pid"; } 2>/dev/null || status=$?
      ((status == 137)) || fail "run $crashes exited $status, not 137 (SIGKILL): $(tail -n 30 "$work/$log")"
      at=$(grep -F '"failpoint fired"' "$work/$log" | jq -r .at) || true
      [[ -n $at ]] || fail "run $crashes died without announcing the failpoint: $(tail -n 30 "$work/$log")"
      note "crash $((crashes + 1)): $at"
      crashes=$((crashes + 1))
      if [[ $case_name == *journal_lost ]] && ! ended; then
        rm -f "$work/journal.db" "$work/journal.db-wal" "$work/journal.db-shm"
      fi
    done
    ((crashes >= 6)) || fail "only $crashes crashes: the recovery's writes were not each a crash point"
    ok "recovered after $crashes crashes"
    e2e_start_controller controller.log --lost-volume-check-interval 1s
    recovered 1
    untouched 0
    untouched 2
    ((reseed == 0)) || reseeded 1
    # The StatefulSet controller created the replica's pod once more, not twice: its creates of
    # web-1, summed over the Events (one per StatefulSet object: a resume creates a new one; each
    # counts its repeats). With a re-seed, one more when the pod garbage collector replaced the
    # lost pod before the pause (that pod is deleted while paused: it would start first).
    creates=$(kubectl get events -n "$ns" --field-selector reason=SuccessfulCreate,involvedObject.name=web -o json |
      jq '[.items[] | select(.message | test("^create Pod web-1 in StatefulSet web"; "i")) | (.count // 1)] | add // 0')
    ((creates <= 2 + reseed)) || fail "pod web-1 was created $creates times"
    ;;
  deleted | manual | reseed)
    step "lose ${node[1]} and delete its Node"
    lose "${node[1]}"
    kubectl delete node "${node[1]}" >/dev/null
    if [[ $case_name == manual ]]; then
      e2e_wait_event web '^AwaitingApproval: .*AwaitingNode -> ReplacingVolume' 30
      sleep 15
      [[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == AwaitingNode ]] ||
        fail "not waiting in AwaitingNode"
      for i in 0 1 2; do untouched "$i"; done
      ok "waits for approval, nothing touched"
      "$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --approve >/dev/null ||
        fail "advance --approve failed"
    fi
    wait_recoveries 1 180
    recovered 1
    untouched 0
    untouched 2
    if ((reseed)); then
      reseeded 1
      e2e_wait_event web '^StatefulSetPaused: .*re-seed of ordinal 1' 30
      e2e_wait_event web '^ReseedSucceeded: ' 30
    fi
    described=$("$stsresize" describe "$ns/web" --kubeconfig "$KUBECONFIG") || fail "describe failed"
    [[ $described == *"Recovered replicas"* && $described == *"kubectl delete pv ${volume[1]}"* ]] ||
      fail "describe does not list the lost volume ${volume[1]} with its delete: $described"
    ok "describe lists data-web-1's lost volume and the command to delete it"
    ;;
  out_of_service)
    step "lose ${node[1]} and taint it out-of-service"
    lose "${node[1]}"
    kubectl taint node "${node[1]}" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute >/dev/null
    wait_recoveries 1 180
    recovered 1
    untouched 0
    untouched 2
    ;;
  not_ready)
    step "lose ${node[1]} for 20 s, not deleted"
    lose "${node[1]}"
    e2e_wait_event web '^NodeNotReady: node '"${node[1]}" 90
    sleep 20
    [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/state}') ]] ||
      fail "an operation started for a node only NotReady"
    clear_fault lostNodes
    kubectl wait --for=condition=Ready "node/${node[1]}" --timeout=60s >/dev/null ||
      fail "${node[1]} did not come back"
    k wait --for=condition=Ready pod/web-1 --timeout=60s >/dev/null || fail "web-1 did not come back"
    sleep 5
    [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}') ]] ||
      fail "an operation ran"
    untouched 1
    untouched 0
    untouched 2
    ok "nothing done while ${node[1]} was NotReady, nor after it came back"
    ;;
  fresh_claim)
    step "lose ${node[1]}; then a claim bound to a volume of ${node[1]}, the set scaled to 4"
    lose "${node[1]}"
    e2e_wait_event web '^NodeNotReady: node '"${node[1]}" 90
    sleep 3
    static=$nodesim_dir/volumes/static-$ns
    mkdir -p "$static"
    kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: static-$ns
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: sim-fixed
  hostPath: {path: $static, type: DirectoryOrCreate}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [${node[1]}]}
EOF
    k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-web-3
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: sim-fixed
  volumeName: static-$ns
  resources: {requests: {storage: 1Gi}}
EOF
    deadline=$((SECONDS + 60))
    until [[ $(jp pvc/data-web-3 '{.status.phase}') == Bound ]]; do
      ((SECONDS < deadline)) || fail "data-web-3 not Bound to static-$ns"
      sleep 0.5
    done
    fresh=$(uid_of pvc/data-web-3)
    k scale statefulset web --replicas 4 >/dev/null
    sleep 3
    kubectl delete node "${node[1]}" >/dev/null
    wait_recoveries 1 180
    recovered 1
    untouched 0
    untouched 2
    sleep 15
    [[ $(uid_of pvc/data-web-3) == "$fresh" ]] || fail "data-web-3, bound after the loss, was replaced"
    n=$("$stsresize" replay --journal "$work/journal.db" --namespace "$ns" --statefulset web -o json |
      jq '[.rows[] | select(.event == "ReplicaLost")] | length')
    [[ $n == 1 ]] || fail "$n recoveries, not 1"
    ok "data-web-3, bound to a volume of ${node[1]} after it was last seen Ready, untouched"
    ;;
  podgc_first)
    step "lose ${node[1]} and delete its Node; a grace long enough for the pod garbage collector"
    k annotate statefulset web --overwrite stsresize.dev/lost-volume-grace=90s >/dev/null
    lose "${node[1]}"
    kubectl delete node "${node[1]}" >/dev/null
    # kube-controller-manager's pod GC force-deletes a pod whose node is gone after 40 s; the
    # StatefulSet controller creates it again, Pending, placed nowhere (its volume's node is gone).
    deadline=$((SECONDS + 120))
    until [[ $(uid_of pod/web-1 2>/dev/null) != "${pod_uid[1]}" && -n $(uid_of pod/web-1 2>/dev/null) ]]; do
      ((SECONDS < deadline)) || fail "the pod garbage collector did not replace web-1 within 120s"
      sleep 1
    done
    [[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == AwaitingNode ]] ||
      fail "the recovery left AwaitingNode before the pod garbage collector acted"
    [[ -z $(node_of web-1) ]] || fail "the new web-1 was placed on $(node_of web-1)"
    ok "web-1 replaced by the pod garbage collector and Pending while the recovery waits"
    wait_recoveries 1 240
    recovered 1
    untouched 0
    untouched 2
    ;;
  two_nodes)
    step "lose ${node[0]} and ${node[2]} and delete them"
    lose "${node[0]},${node[2]}"
    kubectl delete node "${node[0]}" "${node[2]}" >/dev/null
    wait_recoveries 2 300
    recovered 0
    recovered 2
    untouched 1
    ;;
esac

# (A process killed right after a write may not have sent the Event that follows it.)
if [[ $case_name != not_ready && $case_name != crash_* ]]; then
  e2e_wait_event web '^VolumeReplaced: ' 30
  e2e_wait_event web '^RecoveryCompleted: .*kubectl delete pv' 30
  e2e_replay "$work/journal.db"
  ok "Events VolumeReplaced and RecoveryCompleted; the journal replays"
elif [[ $case_name == crash_journal_kept ]]; then
  e2e_replay "$work/journal.db"
  ok "the journal replays"
fi
e2e_stop_controller "$controller_pid"
