#!/usr/bin/env bash
# What a StatefulSet's pods write to /data lands in the host directory of their own volume.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

step "create StatefulSet db (3 replicas, Parallel, sim-fixed); each pod writes \$HOSTNAME to /data/id"
apply_manifest statefulset.yaml NAME=db REPLICAS=3 POD_MANAGEMENT=Parallel STORAGE_CLASS=sim-fixed SIZE=1Gi
k rollout status statefulset/db --timeout=180s || fail "statefulset/db did not become ready"

step "read each volume's directory on the host"
declare -A seen=()
for i in 0 1 2; do
  dir=$(pv_dir "data-db-$i")
  [[ -z ${seen[$dir]:-} ]] || fail "data-db-$i shares directory $dir with ${seen[$dir]}"
  seen[$dir]=data-db-$i
  wait_file "$dir/id" 30
  id=$(<"$dir/id")
  [[ $id == "db-$i" ]] || fail "$dir/id holds '$id', want 'db-$i'"
  grep -qx "written by db-$i from inside its pod" "$dir/marker" || fail "$dir/marker: $(cat "$dir/marker" 2>&1)"
  ok "data-db-$i -> $dir holds id=db-$i and the marker"
done
