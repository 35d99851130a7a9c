# shellcheck shell=bash
# Shared helpers for the cluster proof tests (and any bash test run against the `cluster`
# CTest fixture). Source it first thing:  source "$(dirname "$0")/lib.sh"
#
# Finds the cluster from $STSRESIZE_KUBECONFIG_PATH_FILE (set by CTest; a file holding the
# kubeconfig path) or from $KUBECONFIG, and sets:
#   KUBECONFIG (exported), cluster_dir, nodesim_dir, repo, manifests, test_name
# use_namespace creates this test's own namespace ($ns) and deletes it when the test exits.
# On failure (fail, or any command failing under set -e) diagnostics are printed before cleanup.
# STSRESIZE_KEEP_NAMESPACE=1 keeps the namespace for inspection.

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
manifests=$repo/tests/cluster/manifests
test_name=$(basename "$0" .sh)

if [[ -n ${STSRESIZE_KUBECONFIG_PATH_FILE:-} ]]; then
  [[ -s $STSRESIZE_KUBECONFIG_PATH_FILE ]] || {
    echo "FAIL: $STSRESIZE_KUBECONFIG_PATH_FILE is missing: did the cluster_up fixture run?" >&2
    exit 1
  }
  KUBECONFIG=$(<"$STSRESIZE_KUBECONFIG_PATH_FILE")
fi
[[ -n ${KUBECONFIG:-} && -f $KUBECONFIG ]] || {
  echo "FAIL: no kubeconfig (set STSRESIZE_KUBECONFIG_PATH_FILE or KUBECONFIG)" >&2
  exit 1
}
export KUBECONFIG
cluster_dir=$(dirname "$KUBECONFIG")
nodesim_dir=$cluster_dir/nodesim
ns=

step() { printf '\n==> %s\n' "$*"; }
ok() { printf '    ok: %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }

_diagnosed=0
_cleanups=()

# fail MESSAGE: print it, the diagnostics, and exit 1 (cleanup still runs).
# In a $(...) subshell it only prints the message; the test's exit prints the diagnostics.
fail() {
  printf '\nFAIL [%s]: %s\n' "$test_name" "$*" >&2
  [[ $BASHPID == "$$" ]] && diagnostics >&2
  exit 1
}

diagnostics() {
  ((_diagnosed)) && return 0
  _diagnosed=1
  local f
  echo "---------------- diagnostics ----------------"
  # A test library may add its own first (the e2e tests: the controllers' logs).
  if declare -F extra_diagnostics >/dev/null; then extra_diagnostics 2>&1 || true; fi
  if [[ -n $ns ]]; then
    echo "--- kubectl -n $ns get all,pvc,events"
    kubectl -n "$ns" get statefulsets,jobs,pods,pvc -o wide 2>&1 || true
    echo "--- describe"
    kubectl -n "$ns" describe statefulsets,jobs,pods,pvc 2>&1 | tail -n 150 || true
    echo "--- events"
    kubectl -n "$ns" get events --sort-by=.lastTimestamp 2>&1 | tail -n 40 || true
    for f in "$nodesim_dir/pods/${ns}"_*/*.log; do
      [[ -f $f ]] || continue
      echo "--- ${f#"$nodesim_dir/"} (tail)"
      tail -n 20 "$f"
    done
  fi
  echo "--- persistent volumes and nodes"
  kubectl get pv -o wide 2>&1 || true
  kubectl get nodes -o wide 2>&1 || true
  echo "--- nodesim faults"
  kubectl -n kube-system get configmap nodesim-faults -o jsonpath='{.data}' 2>&1 || true
  echo
  if [[ -f $cluster_dir/logs/nodesim.log ]]; then
    echo "--- tail of $cluster_dir/logs/nodesim.log"
    tail -n 40 "$cluster_dir/logs/nodesim.log"
  fi
  echo "---------------------------------------------"
}

# on_exit CMD...: run CMD at exit (before the namespace is deleted), last registered first.
on_exit() { _cleanups=("$*" "${_cleanups[@]}"); }

_exit() {
  local rc=$? c
  set +e
  if ((rc != 0)); then
    printf '\nFAIL [%s]: exit status %s\n' "$test_name" "$rc" >&2
    diagnostics >&2
  fi
  for c in "${_cleanups[@]}"; do eval "$c"; done
  if [[ -n $ns ]]; then
    if [[ ${STSRESIZE_KEEP_NAMESPACE:-0} == 1 ]]; then
      echo "STSRESIZE_KEEP_NAMESPACE=1: keeping namespace $ns"
    elif ! kubectl delete namespace "$ns" --wait=true --timeout=90s >/dev/null; then
      echo "warning: namespace $ns was not deleted within 90s" >&2
    fi
  fi
  ((rc == 0)) && printf '\nPASS [%s]\n' "$test_name"
  exit "$rc"
}
trap _exit EXIT

# Creates a fresh namespace for this test (named ${ns_prefix:-proof}-<test>-<random>); every k
# call runs in it.
use_namespace() {
  ns="${ns_prefix:-proof}-$(echo "$test_name" | tr '_A-Z' '-a-z' | cut -c1-40)-$(printf '%04x' $((RANDOM % 65536)))"
  kubectl create namespace "$ns" >/dev/null
  note "namespace $ns"
  # The ServiceAccount admission plugin rejects pods until the namespace's default
  # ServiceAccount exists.
  local i
  for i in $(seq 1 100); do
    kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the default ServiceAccount of $ns did not appear within 10s"
}

k() { kubectl -n "$ns" "$@"; }

# apply_manifest FILE VAR=VALUE...: envsubst the named variables (only those) into
# tests/cluster/manifests/FILE and apply the result to $ns.
apply_manifest() {
  local file=$manifests/$1 vars='' kv
  shift
  for kv in "$@"; do
    export "${kv?}"
    vars+="\${${kv%%=*}} "
  done
  envsubst "$vars" <"$file" | k apply -f - >/dev/null
}

# job_yaml NAME SCRIPT [CLAIM:MOUNTPATH...]: a Job (backoffLimit 0, restartPolicy Never) that
# runs `sh -c SCRIPT` with the given claims mounted.
job_yaml() {
  local name=$1 script=$2 i=0 v mounts='' vols=''
  shift 2
  for v in "$@"; do
    mounts+="
        - name: v$i
          mountPath: ${v#*:}"
    vols+="
      - name: v$i
        persistentVolumeClaim:
          claimName: ${v%%:*}"
    i=$((i + 1))
  done
  cat <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $name
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
        command: [sh, -c, $(printf '%s' "$script" | jq -Rs .)]
        volumeMounts:${mounts:- []}
      volumes:${vols:- []}
EOF
}

# jp OBJECT JSONPATH: one field of an object in $ns (or cluster-scoped with -A style names).
jp() { k get "$1" -o jsonpath="$2"; }

# wait_field OBJECT JSONPATH VALUE TIMEOUT: until the field equals VALUE (bounded).
wait_field() {
  local obj=$1 path=$2 want=$3 timeout=$4 got=''
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    got=$(k get "$obj" -o jsonpath="$path" 2>/dev/null) || got=''
    [[ $got == "$want" ]] && return 0
    sleep 0.5
  done
  fail "$obj: $path is '$got', want '$want' (waited ${timeout}s)"
}

# wait_job NAME Complete|Failed TIMEOUT: until the Job has that condition; fails at once if it
# reaches the other terminal condition instead.
wait_job() {
  local job=$1 want=$2 timeout=$3 other=Complete conds=''
  [[ $want == Complete ]] && other=Failed
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    conds=$(k get "job/$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null) || conds=''
    [[ " $conds " == *" $want "* ]] && return 0
    [[ " $conds " == *" $other "* ]] && fail "job/$job is $other, want $want"
    sleep 0.5
  done
  fail "job/$job is not $want after ${timeout}s (conditions: ${conds:-none})"
}

# pv_dir CLAIM: the host directory of the volume bound to CLAIM in $ns, checked to be one of the
# simulator's volume directories.
pv_dir() {
  local pv path
  pv=$(jp "pvc/$1" '{.spec.volumeName}')
  [[ -n $pv ]] || fail "pvc/$1 is not bound to a volume"
  path=$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')
  [[ -n $path ]] || fail "pv/$pv has no hostPath"
  [[ $path == "$nodesim_dir/volumes/"* ]] || fail "pv/$pv path $path is not under $nodesim_dir/volumes/"
  [[ -d $path ]] || fail "pv/$pv directory $path does not exist on the host"
  echo "$path"
}

# wait_file PATH TIMEOUT: until a file exists on the host (data written by a pod).
wait_file() {
  local deadline=$((SECONDS + $2))
  until [[ -s $1 ]]; do
    ((SECONDS < deadline)) || fail "$1 did not appear within $2s"
    sleep 0.5
  done
}

# set_fault KEY VALUE / clear_fault KEY: the node simulator's fault injection ConfigMap.
# Faults are cluster-wide: tests that set them, or run Job pods that a fault could hit, share
# the CTest RESOURCE_LOCK "nodesim-faults".
set_fault() {
  kubectl -n kube-system get configmap nodesim-faults >/dev/null 2>&1 ||
    kubectl -n kube-system create configmap nodesim-faults >/dev/null 2>&1 || true
  kubectl -n kube-system patch configmap nodesim-faults --type merge \
    -p "{\"data\":{\"$1\":$(printf '%s' "$2" | jq -Rs .)}}" >/dev/null
}
clear_fault() {
  kubectl -n kube-system patch configmap nodesim-faults --type json \
    -p "[{\"op\":\"remove\",\"path\":\"/data/$1\"}]" >/dev/null 2>&1 || true
}
