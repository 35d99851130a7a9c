#!/usr/bin/env bash
# CTest fixture for the shared test cluster.
#   fixture.sh up NAME PATH_FILE     start cluster NAME, write its kubeconfig path to PATH_FILE
#   fixture.sh down NAME PATH_FILE   stop it (skipped when STSRESIZE_KEEP_CLUSTER=1)
set -euo pipefail

verb=${1:?up|down} name=${2:?cluster name} path_file=${3:?kubeconfig path file}
cluster=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/scripts/cluster

case $verb in
  up)
    rm -f "$path_file"
    kubeconfig=$("$cluster" up --name "$name" | tail -n 1)
    [[ -f $kubeconfig ]] || { echo "fixture: '$cluster up' printed '$kubeconfig', not a kubeconfig" >&2; exit 1; }
    mkdir -p "$(dirname "$path_file")"
    printf '%s\n' "$kubeconfig" >"$path_file"
    echo "fixture: cluster '$name' is up, kubeconfig $kubeconfig (path in $path_file)"
    kubectl --kubeconfig "$kubeconfig" get nodes -o wide
    ;;
  down)
    if [[ ${STSRESIZE_KEEP_CLUSTER:-0} == 1 ]]; then
      echo "fixture: STSRESIZE_KEEP_CLUSTER=1, leaving cluster '$name' up ($cluster down --name $name)"
      exit 0
    fi
    "$cluster" down --name "$name"
    rm -f "$path_file"
    ;;
  *) echo "fixture: unknown verb $verb" >&2; exit 2 ;;
esac
