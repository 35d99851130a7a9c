#!/usr/bin/env bash
# Scaling a StatefulSet down deletes the surplus pods and keeps their claims, volumes and data.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

step "create StatefulSet app (3 replicas, Parallel, sim-fixed)"
apply_manifest statefulset.yaml NAME=app REPLICAS=3 POD_MANAGEMENT=Parallel STORAGE_CLASS=sim-fixed SIZE=1Gi
k rollout status statefulset/app --timeout=180s || fail "statefulset/app did not become ready"
declare -A dirs=() pvs=()
for i in 0 1 2; do
  dirs[$i]=$(pv_dir "data-app-$i")
  pvs[$i]=$(jp "pvc/data-app-$i" '{.spec.volumeName}')
  wait_file "${dirs[$i]}/id" 30
done

step "scale to 1"
k scale statefulset/app --replicas=1 >/dev/null
k wait --for=delete pod/app-2 pod/app-1 --timeout=90s || fail "pods app-1/app-2 were not deleted"
ok "app-1 and app-2 are gone"
wait_field statefulset/app '{.status.replicas}' 1 30
[[ $(jp pod/app-0 '{.status.phase}') == Running ]] || fail "app-0 is not Running any more"

step "the claims, volumes and data of all 3 ordinals remain"
sleep 2 # let any (wrong) cleanup act before looking
for i in 0 1 2; do
  [[ $(jp "pvc/data-app-$i" '{.status.phase}') == Bound ]] || fail "pvc/data-app-$i is not Bound"
  [[ -z $(jp "pvc/data-app-$i" '{.metadata.deletionTimestamp}') ]] || fail "pvc/data-app-$i is being deleted"
  [[ $(kubectl get pv "${pvs[$i]}" -o jsonpath='{.status.phase}') == Bound ]] || fail "pv/${pvs[$i]} is not Bound"
  [[ $(<"${dirs[$i]}/id") == "app-$i" ]] || fail "${dirs[$i]}/id lost its content"
  ok "data-app-$i Bound to ${pvs[$i]}, data intact"
done
