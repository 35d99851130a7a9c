#!/usr/bin/env bash
# Scale benchmark for issue #4: a private local control plane filled with 5,000 StatefulSets
# (replicas 0, one volumeClaimTemplate) and 15,000 Pending claims across 10 namespaces, then
# `stsresize run` against it: time until /readyz is 200 (caches synced), RSS after sync, CPU
# seconds and API requests during an idle minute. Prints a table; exits 1 if a step fails.
#
#   tests/bench/cluster_scale.sh [--build DIR] [--statefulsets N] [--claims-per-statefulset N]
#                                [--namespaces N] [--threads N] [--idle-seconds S] [--keep]
#                                [--name CLUSTER]
#
# Needs build/bin/stsresize and build/bin/stsresize_populate (configure with
# -DSTSRESIZE_CLUSTER_TESTS=ON). Without a `run` subcommand only the population is measured.
# --keep leaves the cluster (bench-scale, or --name) up for a rerun: population then only tops it
# up, so that two builds (--build) can be measured one after the other on the same objects.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build
statefulsets=5000 claims_per=3 namespaces=10 threads=8 idle=60 keep=0 name=bench-scale
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --statefulsets) statefulsets=$2; shift 2 ;;
    --claims-per-statefulset) claims_per=$2; shift 2 ;;
    --namespaces) namespaces=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --idle-seconds) idle=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --name) name=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster_scale: unknown argument $1" >&2; exit 2 ;;
  esac
done
stsresize=$build/bin/stsresize
populate=$build/bin/stsresize_populate
for b in "$stsresize" "$populate"; do
  [[ -x $b ]] || { echo "cluster_scale: $b is missing (build with -DSTSRESIZE_CLUSTER_TESTS=ON)" >&2; exit 1; }
done

cluster=$repo/scripts/cluster
work=$(mktemp -d /tmp/stsresize-bench.XXXXXX)
controller_pid=
cleanup() {
  local rc=$?
  if [[ -n $controller_pid ]]; then
    kill -TERM "$controller_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$controller_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$controller_pid" 2>/dev/null || true
  fi
  if ((keep)); then
    echo "cluster_scale: --keep: cluster '$name' stays up ($cluster down --name $name)" >&2
  else
    "$cluster" down --name "$name" >/dev/null 2>&1 || echo "cluster_scale: '$cluster down --name $name' failed" >&2
  fi
  ((rc == 0)) || echo "cluster_scale: failed; logs in $work" >&2
  ((rc == 0)) && rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A figure
declare -a order
record() { figure[$1]=$2; order+=("$1"); }

echo "==> private cluster '$name' (1 simulated node)" >&2
kubeconfig=$("$cluster" up --name "$name" --nodes 1 | tail -n 1)
export KUBECONFIG=$kubeconfig

echo "==> populate: $statefulsets StatefulSets, $((statefulsets * claims_per)) claims, $namespaces namespaces, $threads threads" >&2
"$populate" --kubeconfig "$kubeconfig" --statefulsets "$statefulsets" \
  --claims-per-statefulset "$claims_per" --namespaces "$namespaces" --threads "$threads" \
  | tee "$work/populate.out" >&2
populate_seconds=$(sed -n 's/.*populate_seconds=\([0-9.]*\).*/\1/p' "$work/populate.out")
rate=$(sed -n 's/.*objects_per_second=\([0-9]*\).*/\1/p' "$work/populate.out")
sts_count=$(kubectl get statefulsets -A --no-headers -l stsresize.dev/bench=1 | wc -l)
pvc_count=$(kubectl get pvc -A --no-headers -l stsresize.dev/bench=1 | wc -l)
pending=$(kubectl get pvc -A --no-headers -l stsresize.dev/bench=1 | awk '$3 == "Pending"' | wc -l)
record "StatefulSets in the cluster" "$sts_count"
record "claims in the cluster (Pending)" "$pvc_count ($pending)"
record "populate time (s)" "$populate_seconds"
record "populate rate (objects/s)" "$rate"

# A port below the kernel's ephemeral range (32768-60999), which no socket uses: one in that
# range may be the local end of a connection even when nothing listens on it.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 12000))
    ss -Htan "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}
# Sum of a Prometheus counter family (optionally only lines matching a filter) from a URL or a
# kubectl --raw path.
counter_sum() { awk -v m="$1" '$1 ~ "^"m"([{]|$)" { s += $NF } END { printf "%.0f\n", s }'; }
proc_cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# (An unknown subcommand with --help prints the top-level help and exits 0: look for a run flag.)
# (A here-string, not a pipe into grep -q: grep leaving early fails the pipe under pipefail.)
run_help=$("$stsresize" run --help 2>/dev/null || true)
if [[ $run_help != *--health-probe-bind-address* ]]; then
  echo "==> '$stsresize run' does not exist yet: only the population was measured" >&2
else
  metrics_port=$(free_port) health_port=$(free_port)
  echo "==> stsresize run (metrics :$metrics_port, health :$health_port)" >&2
  t0=$(date +%s.%N)
  "$stsresize" run --kubeconfig "$kubeconfig" \
    --metrics-bind-address "127.0.0.1:$metrics_port" \
    --health-probe-bind-address "127.0.0.1:$health_port" \
    --journal "$work/journal.db" --log-format json >"$work/controller.log" 2>&1 &
  controller_pid=$!
  until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health_port/readyz") == 200 ]]; do
    kill -0 "$controller_pid" 2>/dev/null || { tail -n 30 "$work/controller.log" >&2; exit 1; }
    (($(date +%s) - ${t0%.*} < 600)) || { echo "cluster_scale: not ready within 600s" >&2; exit 1; }
    sleep 0.05
  done
  t_ready=$(date +%s.%N)
  record "time to /readyz 200 (s)" "$(echo "$t_ready - $t0" | bc -l | xargs printf '%.2f')"
  sleep 2 # let the initial reconciles of the synced objects finish
  rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$controller_pid/status")
  record "RSS after sync (MiB)" "$(echo "$rss_kb / 1024" | bc -l | xargs printf '%.1f')"

  controller_requests() { curl -s "http://127.0.0.1:$metrics_port/metrics" | counter_sum stsresize_api_requests_total; }
  apiserver_requests() { kubectl get --raw /metrics | counter_sum apiserver_request_total; }
  cpu0=$(proc_cpu_seconds "$controller_pid") req0=$(controller_requests) all0=$(apiserver_requests)
  echo "==> idle for ${idle}s" >&2
  sleep "$idle"
  cpu1=$(proc_cpu_seconds "$controller_pid") req1=$(controller_requests) all1=$(apiserver_requests)
  record "CPU while idle (s per ${idle}s)" "$(echo "$cpu1 - $cpu0" | bc -l | xargs printf '%.2f')"
  record "controller API requests while idle (per ${idle}s)" "$((req1 - req0))"
  record "apiserver requests from all clients (per ${idle}s)" "$((all1 - all0))"
  rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$controller_pid/status")
  record "RSS after idle (MiB)" "$(echo "$rss_kb / 1024" | bc -l | xargs printf '%.1f')"
fi

echo
printf '| %-50s | %-16s |\n' "figure" "value"
printf '|%s|%s|\n' "$(printf -- '-%.0s' $(seq 1 52))" "$(printf -- '-%.0s' $(seq 1 18))"
for key in "${order[@]}"; do printf '| %-50s | %-16s |\n' "$key" "${figure[$key]}"; done
