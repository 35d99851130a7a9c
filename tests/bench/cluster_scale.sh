#!/usr/bin/env bash
# Scale benchmark for issues #4 and #16: a private local control plane filled with 5,000
# StatefulSets (replicas 0, one volumeClaimTemplate) and 15,000 Pending claims across 10
# namespaces, then `stsresize run` against it: time until /readyz is 200 (caches synced), RSS
# after sync, CPU seconds and API requests during an idle minute. Prints a table; exits 1 if a
# step fails.
#
#   tests/bench/cluster_scale.sh [--build DIR] [--statefulsets N] [--claims-per-statefulset N]
#                                [--namespaces N] [--threads N] [--idle-seconds S] [--keep]
#                                [--name CLUSTER] [--peer DIR]
#
# Needs build/bin/stsresize and build/bin/stsresize_populate (configure with
# -DSTSRESIZE_CLUSTER_TESTS=ON). Without a `run` subcommand only the population is measured.
# --keep leaves the cluster (--name, default bench-scale) up for a rerun: population then only
# tops it up, so that two builds (--build) can be measured one after the other on the same objects.
# --peer DIR: then, on the same cluster in the same run, once stsresize has stopped,
# vshn/statefulset-resize-controller built from the checkout DIR (tests/bench/peer_lib.sh: cached
# by commit under ~/.cache/stsresize, never vendored), run with the cluster's admin kubeconfig,
# in a column of its own. It has no readiness of its caches to ask (its /readyz is a ping):
# "synced" is when its controller-runtime /metrics count a reconcile per StatefulSet
# (controller_runtime_reconcile_total) and its work queue is empty (workqueue_depth); its first
# List of claims starts its claim informer, so all claims are cached by then. RSS from /proc
# as stsresize's; its API requests while idle from client-go's rest_client_requests_total.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build
statefulsets=5000 claims_per=3 namespaces=10 threads=8 idle=60 keep=0 peer_dir='' name=bench-scale
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
    --peer) peer_dir=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "cluster_scale: unknown argument $1" >&2; exit 2 ;;
  esac
done
stsresize=$build/bin/stsresize
populate=$build/bin/stsresize_populate
for b in "$stsresize" "$populate"; do
  [[ -x $b ]] || { echo "cluster_scale: $b is missing (build with -DSTSRESIZE_CLUSTER_TESTS=ON)" >&2; exit 1; }
done
peer=''
# shellcheck source-path=SCRIPTDIR source=peer_lib.sh
source "$repo/tests/bench/peer_lib.sh"
if [[ -n $peer_dir ]]; then peer_build cluster_scale "$peer_dir"; fi

cluster=$repo/scripts/cluster
work=$(mktemp -d /tmp/stsresize-bench.XXXXXX)
controller_pid=
# stop_controller: SIGTERM to $controller_pid, SIGKILL after 10 s.
stop_controller() {
  [[ -n $controller_pid ]] || return 0
  kill -TERM "$controller_pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$controller_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$controller_pid" 2>/dev/null || true
  controller_pid=
}
cleanup() {
  local rc=$?
  stop_controller
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

# One column per controller; the cluster's own figures (population) in the first.
declare -A figure seen
declare -a order columns=(stsresize)
if [[ -n $peer ]]; then columns+=(vshn); fi
# record KEY VALUE [COLUMN]: one cell (rows keep their first-seen order).
record() {
  [[ -n ${seen[$1]:-} ]] || { order+=("$1"); seen[$1]=1; }
  local column=${3:-stsresize}
  figure["$1|$column"]=$2
}

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
apiserver_requests() { kubectl get --raw /metrics | counter_sum apiserver_request_total; }
proc_cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# (An unknown subcommand with --help prints the top-level help and exits 0: look for a run flag.)
# A here-string, not a pipe into grep -q: grep quitting at its first match fails the writer with
# SIGPIPE, which pipefail turns into "no such flag".
run_help=$("$stsresize" run --help 2>/dev/null || true)
if ! grep -q -- '--health-probe-bind-address' <<<"$run_help"; then
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
# Not side by side: each controller's CPU and requests are its own, and the apiserver's count of
# all clients' requests is one controller's at a time.
stop_controller

if [[ -n $peer ]]; then
  metrics_port=$(free_port)
  echo "==> vshn's controller (metrics :$metrics_port)" >&2
  peer_metrics() { curl -sf "http://127.0.0.1:$metrics_port/metrics"; }
  t0=$(date +%s.%N)
  peer_start "$work/vshn.log" "$metrics_port"
  controller_pid=$peer_pid
  # Synced: a reconcile per StatefulSet counted, and nothing left in the queue.
  until m=$(peer_metrics 2>/dev/null) &&
    awk -v want="$sts_count" '/^controller_runtime_reconcile_total\{/ { n += $NF }
      /^workqueue_depth\{/ { d += $NF; seen = 1 } END { exit !(seen && d == 0 && n >= want) }' <<<"$m"; do
    kill -0 "$controller_pid" 2>/dev/null || { tail -n 30 "$work/vshn.log" >&2; exit 1; }
    (($(date +%s) - ${t0%.*} < 600)) || { echo "cluster_scale: vshn not synced within 600s" >&2; exit 1; }
    sleep 0.05
  done
  t_ready=$(date +%s.%N)
  record "time to /readyz 200 (s)" "$(echo "$t_ready - $t0" | bc -l | xargs printf '%.2f') (reconciled all)" vshn
  sleep 2 # as for stsresize
  rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$controller_pid/status")
  record "RSS after sync (MiB)" "$(echo "$rss_kb / 1024" | bc -l | xargs printf '%.1f')" vshn

  vshn_requests() { peer_metrics >"$work/vshn-metrics" && peer_requests "$work/vshn-metrics" | awk '{ s += $2 } END { print s + 0 }'; }
  cpu0=$(proc_cpu_seconds "$controller_pid") req0=$(vshn_requests) all0=$(apiserver_requests)
  echo "==> idle for ${idle}s" >&2
  sleep "$idle"
  cpu1=$(proc_cpu_seconds "$controller_pid") req1=$(vshn_requests) all1=$(apiserver_requests)
  record "CPU while idle (s per ${idle}s)" "$(echo "$cpu1 - $cpu0" | bc -l | xargs printf '%.2f')" vshn
  record "controller API requests while idle (per ${idle}s)" "$((req1 - req0))" vshn
  record "apiserver requests from all clients (per ${idle}s)" "$((all1 - all0))" vshn
  rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$controller_pid/status")
  record "RSS after idle (MiB)" "$(echo "$rss_kb / 1024" | bc -l | xargs printf '%.1f')" vshn
  stop_controller
fi

echo
line=$(printf '| %-50s |' figure)
rule="|$(printf -- '-%.0s' $(seq 1 52))|"
for c in "${columns[@]}"; do line+=$(printf ' %-16s |' "$c"); rule+="$(printf -- '-%.0s' $(seq 1 17)):|"; done
echo "$line"
echo "$rule"
for key in "${order[@]}"; do
  line=$(printf '| %-50s |' "$key")
  for c in "${columns[@]}"; do line+=$(printf ' %-16s |' "${figure[$key|$c]:--}"); done
  echo "$line"
done
[[ -z $peer ]] || printf '\nvshn: vshn/statefulset-resize-controller %s (%s), built with %s; the population is one for both\n' \
  "$peer_commit" "$peer_dir" "$(go version | awk '{ print $3 }')"
