#!/usr/bin/env bash
# `stsresize run` resizes a StatefulSet on the local control plane, end to end, on real data:
# 3 replicas whose volumes hold a few hundred files of random data, an explicit request
# (stsresize.dev/resize) for 2Gi, then: every claim 2Gi and Bound, every file's sha256 as before,
# 3/3 Ready, the templates updated, no backup claim or copy Job left, the journal replays
# Completed. STORAGE_CLASS sim-fixed takes the copy path; sim-expandable the expansion path
# (the pods keep running: same pod uids).
#   resize_with_controller.sh STSRESIZE_BINARY STORAGE_CLASS
stsresize=${1:?path to the stsresize binary}
class=${2:?sim-fixed or sim-expandable}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"

work=$(mktemp -d)
controller_pid=''
on_exit "rm -rf '$work'"
# shellcheck disable=SC2016 # expanded at exit
on_exit '[[ -n $controller_pid ]] && kill -KILL "$controller_pid" 2>/dev/null; true'
use_namespace

step "StatefulSet web: 3 replicas, claims of 1Gi on $class, random data in every volume"
apply_manifest statefulset.yaml NAME=web REPLICAS=3 POD_MANAGEMENT=Parallel STORAGE_CLASS="$class" SIZE=1Gi
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
for i in 0 1 2; do
  dir=$(pv_dir "data-web-$i")
  mkdir -p "$dir/random/nested"
  for f in $(seq 1 200); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
  head -c 1048576 /dev/urandom >"$dir/random/nested/big.bin"
  (cd "$dir" && find . -type f ! -name id ! -name marker -print0 | sort -z | xargs -0 sha256sum) >"$work/before-$i"
done
pod_uids_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
ok "$(wc -l <"$work/before-0") files per volume, checksums taken on the host"

step "start the controller, watching only $ns"
"$stsresize" run --kubeconfig "$KUBECONFIG" --namespace "$ns" --journal "$work/journal.db" \
  --metrics-bind-address 0 --health-probe-bind-address "127.0.0.1:0" --poll-interval 1s \
  --log-format json >"$work/controller.log" 2>&1 &
controller_pid=$!

step "request 2Gi through the annotation"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
phases=() last_phase=''
deadline=$((SECONDS + 240))
while :; do
  phase=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
  if [[ -n $phase && $phase != "$last_phase" ]]; then
    phases+=("$phase")
    last_phase=$phase
  fi
  last=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}' 2>/dev/null || true)
  [[ -z $phase && $last == *Completed* ]] && break
  if ((SECONDS > deadline)); then
    tail -n 30 "$work/controller.log"
    fail "no completion after 240s (phases seen: ${phases[*]})"
  fi
  kill -0 "$controller_pid" 2>/dev/null || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
  sleep 0.5
done
ok "completed; phases seen: ${phases[*]}"

step "check sizes, data, replicas, leftovers and the journal"
for i in 0 1 2; do
  claim=data-web-$i
  [[ $(jp "pvc/$claim" '{.spec.resources.requests.storage}') == 2Gi ]] || fail "pvc/$claim does not ask for 2Gi"
  [[ $(jp "pvc/$claim" '{.status.phase}') == Bound ]] || fail "pvc/$claim is not Bound"
  dir=$(pv_dir "$claim")
  (cd "$dir" && find . -type f ! -name id ! -name marker -print0 | sort -z | xargs -0 sha256sum) >"$work/after-$i"
  diff -q "$work/before-$i" "$work/after-$i" >/dev/null || fail "data of $claim differs after the resize"
done
ok "every claim 2Gi and Bound; every file's sha256 unchanged"
k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready again"
[[ $(jp statefulset/web '{.status.readyReplicas}') == 3 ]] || fail "readyReplicas is not 3"
[[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 2Gi ]] ||
  fail "the template does not ask for 2Gi"
[[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/resize}') ]] || fail "the request annotation is still there"
leftovers=$(k get pvc,jobs,configmaps -o name | grep -E 'stsresize' || true)
[[ -z $leftovers ]] || fail "left behind: $leftovers"
ok "3/3 Ready, templates 2Gi, request cleared, nothing left behind"
if [[ $class == sim-expandable ]]; then
  pod_uids_after=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
  [[ $pod_uids_after == "$pod_uids_before" ]] || fail "expansion restarted pods: $pod_uids_before -> $pod_uids_after"
  [[ " ${phases[*]} " != *" ScalingDown "* ]] || fail "expansion scaled down"
  ok "expansion: the same pods ran throughout"
else
  [[ " ${phases[*]} " == *" BackingUp "* ]] || note "BackingUp not observed between polls (fast)"
fi
kill -TERM "$controller_pid"
wait "$controller_pid" || fail "the controller did not exit 0 on SIGTERM"
controller_pid=''
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
grep -q "Completed" <<<"$replay" || fail "the journal does not replay to Completed: $replay"
ok "controller stopped cleanly on SIGTERM; journal replays to Completed"
