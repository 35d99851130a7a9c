#!/usr/bin/env bash
# Figures of one resize (issues #5 and #17), not a pass/fail timing test: a StatefulSet of N
# replicas with MiB of random data per volume is resized from 1Gi to 2Gi through the
# stsresize.dev/resize annotation by `stsresize run` on a local control plane, once per path:
#
#   copy        StorageClass sim-fixed, the controller as shipped: the rebind path (each claim
#               copied once into a claim of the target size, whose volume then takes the claim's
#               name; no copy back)
#   two-copies  sim-fixed, the controller started with --no-rebind: the two-copy path (backup,
#               recreate the claim empty, copy back)
#   expansion   sim-expandable: the claims expanded in place
#
# Prints a table, one column per path:
#
#   API requests per resized claim   the controller's stsresize_api_requests_total (/metrics),
#                                    scraped just before the request and just after completion,
#                                    by verb, divided by the number of claims (watches included)
#   bytes copied per byte of data    what the copy Jobs' rsync transferred (its --info=progress2
#                                    total, from the Job pods' logs kept by the node simulator),
#                                    divided by the data in the volumes (the backup Jobs' source
#                                    summaries: files and bytes of every regular file)
#   downtime                         time with readyReplicas below the original count, from a
#                                    `kubectl get -w` of the StatefulSet timestamped on arrival;
#                                    and time with fewer Ready pods, from a watch of the pods
#                                    (the re-created StatefulSet object reports 0 ready for a
#                                    moment while its pods keep running)
#   time per phase, total            from the journal (`stsresize replay -o json`: the time of
#                                    each phase change); total = request annotated -> completed
#                                    as seen by this script (polling every 0.5 s)
#   controller CPU, RSS              /proc of the controller: CPU seconds during the resize,
#                                    RSS at the end and its peak (VmHWM)
#
# With both copy and two-copies, a line after the table divides the rebind path's downtime and
# total time by the two-copy path's (same run, same data, same machine).
#
# Every resize is also checked; a failed check exits 1: sizes, sha256 of every file, replicas,
# the path the journal says was taken (Rebind, Copy with "not rebind: ...", Expand), the copy
# Jobs that ran (copy: one backup Job per claim and no restore Job; two-copies: one of each per
# claim; expansion: none), the rsync logs found for each, bytes copied per byte of data (copy
# 0.95 to 1.05, two-copies 1.95 to 2.05, expansion 0), no claim, Job or ConfigMap left, no
# PersistentVolume left of the old claims or of the copies nor a new one without a claimRef
# (the PV controller deletes released volumes asynchronously: waited for, up to 120 s), the
# volumes' reclaim policy back to what it was.
#
#   tests/bench/resize_figures.sh [--build DIR] [--data-mib MIB] [--replicas N]
#                                 [--paths copy,two-copies,expansion] [--poll-interval DURATION]
#                                 [--controller-args 'ARGS']
#                                 [--kubeconfig FILE] [--name CLUSTER] [--keep] [--out DIR]
#
#   --data-mib       random data per volume, in MiB (default 1024); the volumes' disk must
#                    hold 3 copies of it per replica (two-copies: source, backup, recreated
#                    claim; copy: 2)
#   --paths          which paths, in this order (default copy,two-copies,expansion)
#   --poll-interval  passed to `stsresize run` (default: the controller's own)
#   --controller-args  more flags for `stsresize run`, split on spaces (e.g. '--max-parallel-copies 2':
#                    with --build, two settings or two binaries compared on one cluster)
#   --kubeconfig     use this cluster (a namespace of its own per path, deleted at its end);
#                    otherwise a private cluster --name (default resize-figures) is brought up
#                    and down
#   --keep           leave the private cluster up
#   --out DIR        keep the controller logs, /metrics scrapes, journals, replays and watch
#                    samples in DIR
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build data_mib=1024 replicas=3 paths=copy,two-copies,expansion poll_interval='' given_kubeconfig=''
controller_args=''
cluster_name=resize-figures keep=0 out=''
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --data-mib) data_mib=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --poll-interval) poll_interval=$2; shift 2 ;;
    --controller-args) controller_args=$2; shift 2 ;;
    --kubeconfig) given_kubeconfig=$2; shift 2 ;;
    --name) cluster_name=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "resize_figures: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
stsresize=$build/bin/stsresize
[[ -x $stsresize ]] || { echo "resize_figures: $stsresize is missing (cmake --build build --target stsresize)" >&2; exit 1; }
[[ $data_mib =~ ^[0-9]+$ && $replicas =~ ^[1-9][0-9]*$ ]] || { echo "resize_figures: --data-mib and --replicas take numbers" >&2; exit 2; }
IFS=, read -r -a path_list <<<"$paths"
((${#path_list[@]})) || { echo "resize_figures: --paths names no path" >&2; exit 2; }
for p in "${path_list[@]}"; do
  [[ $p == copy || $p == two-copies || $p == expansion ]] ||
    { echo "resize_figures: unknown path '$p' in --paths (copy, two-copies, expansion)" >&2; exit 2; }
done

if [[ -n $given_kubeconfig ]]; then
  export KUBECONFIG=$given_kubeconfig
else
  echo "==> private cluster '$cluster_name'" >&2
  KUBECONFIG=$("$repo/scripts/cluster" up --name "$cluster_name" | tail -n 1)
  export KUBECONFIG
fi
unset STSRESIZE_KUBECONFIG_PATH_FILE

# The volumes live in the cluster directory: on the two-copy path, source, backup and
# recreated claim at once (each path's volumes are gone before the next path starts).
need_mib=$((data_mib * replicas * 3 + 512))
avail_mib=$(df -Pm "$(dirname "$KUBECONFIG")" | awk 'NR == 2 { print $4 }')
if ((avail_mib < need_mib)); then
  echo "resize_figures: $avail_mib MiB free under $(dirname "$KUBECONFIG"), $need_mib MiB needed; use --data-mib" >&2
  [[ -z $given_kubeconfig && $keep == 0 ]] && "$repo/scripts/cluster" down --name "$cluster_name" >/dev/null 2>&1
  exit 1
fi

# shellcheck disable=SC2034 # read by proof/lib.sh
ns_prefix=figures
# shellcheck source-path=SCRIPTDIR source=../cluster/proof/lib.sh
source "$repo/tests/cluster/proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../cluster/e2e/lib.sh
source "$repo/tests/cluster/e2e/lib.sh"
# shellcheck disable=SC2034 # read by proof/lib.sh
test_name=resize_figures

# add_data NAME N MIB: MIB more MiB of random data (1 MiB files under bulk/) in each of the N
# volumes of NAME, written on the host; the checksums in $work/before-NAME-<i> taken again.
add_data() {
  local name=$1 replicas=$2 mib=$3 i dir
  for ((i = 0; i < replicas; i++)); do
    dir=$(pv_dir "data-$name-$i")
    mkdir -p "$dir/bulk"
    head -c $((mib * 1048576)) /dev/urandom | (cd "$dir/bulk" && split -b 1048576 -d -a 6 - m)
    e2e_checksums "data-$name-$i" >"$work/before-$name-$i"
  done
}
# A port below the kernel's ephemeral range (32768-60999), which no socket uses: one in that
# range may be the local end of a connection even when nothing listens on it.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 12000))
    ss -Htan "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}
# start_controller LOG PORT [ARGS]: as e2e_start_controller, with /metrics on 127.0.0.1:PORT
# and the controller's own poll interval unless ARGS give one.
start_controller() {
  local log=$1 port=$2
  shift 2
  "$stsresize" run --kubeconfig "$KUBECONFIG" --namespace "$ns" \
    --metrics-bind-address "127.0.0.1:$port" --health-probe-bind-address "127.0.0.1:0" \
    --log-format json "$@" >>"$work/$log" 2>&1 &
  controller_pid=$!
  controllers+=("$controller_pid")
}
e2e_init "$stsresize"
[[ -n $out ]] && on_exit "mkdir -p '$out' && cp -r '$work'/. '$out'/"
if [[ -z $given_kubeconfig ]]; then
  if ((keep)); then
    on_exit "echo 'resize_figures: --keep: cluster $cluster_name stays up (scripts/cluster down --name $cluster_name)' >&2"
  else
    # Last registered, so it runs first... after the namespace deletion would be better, but
    # the whole cluster goes: no namespace to delete.
    on_exit "ns=''; '$repo/scripts/cluster' down --name '$cluster_name' >/dev/null 2>&1"
  fi
fi

declare -A figure seen
rows=()
# record ROW PATH VALUE: one cell of the table (rows keep their first-seen order).
record() {
  [[ -n ${seen[$1]:-} ]] || { rows+=("$1"); seen[$1]=1; }
  figure[$1|$2]=$3
}
metrics() { curl -sf "http://127.0.0.1:$1/metrics"; }
# api_requests FILE: "verb count" per verb of stsresize_api_requests_total (codes summed).
api_requests() {
  awk '/^stsresize_api_requests_total\{/ {
         match($0, /verb="[^"]*"/); verb = substr($0, RSTART + 6, RLENGTH - 7); n[verb] += $NF }
       END { for (v in n) printf "%s %.0f\n", v, n[v] }' "$1" | sort
}
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# seconds FROM TO (epoch seconds with fractions), 1 decimal.
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ns_volumes: "name phase reclaimPolicy claim" of every PersistentVolume whose claimRef is in $ns
# (bound, pre-bound or released), sorted.
ns_volumes() {
  kubectl get pv -o json | jq -r --arg ns "$ns" '.items[] | select(.spec.claimRef.namespace == $ns)
    | "\(.metadata.name) \(.status.phase) \(.spec.persistentVolumeReclaimPolicy) \(.spec.claimRef.name)"' | sort
}
# unclaimed_volumes: the names of the PersistentVolumes with no claimRef at all, sorted.
unclaimed_volumes() {
  kubectl get pv -o json | jq -r '.items[] | select(.spec.claimRef == null) | .metadata.name' | sort
}
# assert_volumes PATH VOLUMES_BEFORE POLICIES_BEFORE UNCLAIMED_BEFORE: the only volumes left in
# $ns are those of the N claims, Bound, with the reclaim policy the volumes had before, and no
# volume without a claimRef appeared; the claims are on new volumes (copy, two-copies) or on the
# same ones (expansion). Released volumes are deleted by the PV controller asynchronously:
# waited for.
assert_volumes() {
  local path=$1 before=$2 policies=$3 unclaimed=$4 deadline=$((SECONDS + 120)) want i v left volumes phase policy claim
  want=$(for ((i = 0; i < replicas; i++)); do jp "pvc/data-web-$i" '{.spec.volumeName}'; echo; done | sort)
  while :; do
    volumes=$(ns_volumes)
    left=$(
      awk '{ print $1 }' <<<"$volumes" | comm -23 - <(echo "$want")
      unclaimed_volumes | comm -23 - <(echo "$unclaimed") | sed 's/$/ (no claimRef)/'
    )
    [[ -z $left ]] && break
    ((SECONDS < deadline)) || fail "$path: volumes left behind after 120 s: $left; in $ns: $volumes"
    sleep 1
  done
  for v in $want; do
    read -r _ phase policy claim < <(grep "^$v " <<<"$volumes") || fail "$path: pv/$v is not in $ns"
    [[ $phase == Bound && $claim == data-web-* ]] || fail "$path: pv/$v is $phase for $claim"
    [[ $policy == "$policies" ]] || fail "$path: pv/$v has reclaim policy $policy, was $policies"
  done
  if [[ $path == expansion ]]; then
    [[ $want == "$before" ]] || fail "$path: the claims changed volumes: $before -> $want"
  else
    [[ -z $(comm -12 <(echo "$want") <(echo "$before")) ]] || fail "$path: a claim is still on its old volume: $want"
  fi
  ok "volumes: only the $replicas claims' ($( [[ $path == expansion ]] && echo same || echo new)), Bound, reclaim policy $policies; none of the old claims or copies left"
}

measure_path() {
  local path=$1 class journal port sts_watch watch_pid pod_watch pod_watch_pid t0 t1 cpu0 cpu1 i bytes_data=0 bytes_copied=0 t
  # want_path: what the journal must say was taken; jobs: the copy Jobs per claim (backup restore).
  local want_path want_jobs extra=()
  case $path in
    copy) class=sim-fixed want_path=Rebind want_jobs="1 0" ;;
    two-copies) class=sim-fixed want_path=Copy want_jobs="1 1" extra=(--no-rebind) ;;
    expansion) class=sim-expandable want_path=Expand want_jobs="0 0" ;;
    *) fail "unknown path $path (copy, two-copies or expansion)" ;;
  esac
  use_namespace
  step "$path path ($class): StatefulSet web, $replicas replicas of 1Gi, $data_mib MiB of random data each"
  e2e_statefulset web "$class" "$replicas"
  add_data web "$replicas" "$data_mib"
  ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken"
  # The volumes before, and their reclaim policy: what it must be again at the end.
  local volumes_before policies_before unclaimed_before
  volumes_before=$(ns_volumes | awk '{ print $1 }')
  policies_before=$(ns_volumes | awk '{ print $3 }' | sort -u)
  unclaimed_before=$(unclaimed_volumes)

  journal=$work/journal-$path.db
  local args=(--journal "$journal" "${extra[@]}") attempt deadline
  [[ -n $poll_interval ]] && args+=(--poll-interval "$poll_interval")
  local more=()
  read -r -a more <<<"$controller_args"
  args+=("${more[@]}")
  # A free port may be taken by another process before the controller binds it: try another.
  for attempt in 1 2 3; do
    port=$(free_port)
    start_controller "controller-$path.log" "$port" "${args[@]}"
    deadline=$((SECONDS + 60))
    until metrics "$port" 2>/dev/null | awk '/^stsresize_informer_synced/ { n++; s += $NF } END { exit !(n > 0 && s == n) }'; do
      kill -0 "$controller_pid" 2>/dev/null || break
      ((SECONDS < deadline)) || fail "the controller's caches did not sync in 60s: $(tail -n 5 "$work/controller-$path.log")"
      sleep 0.2
    done
    kill -0 "$controller_pid" 2>/dev/null && break
    ((attempt < 3)) || fail "the controller exited: $(tail -n 5 "$work/controller-$path.log")"
  done
  sleep 2 # the first look at every StatefulSet

  # readyReplicas as the watch delivers it, timestamped on arrival.
  sts_watch=$work/ready-$path.txt
  kubectl -n "$ns" get statefulset web -w -o jsonpath='{.status.readyReplicas}{"\n"}' 2>/dev/null \
    > >(while IFS= read -r ready; do printf '%s %s\n' "$EPOCHREALTIME" "${ready:-0}"; done >"$sts_watch") &
  watch_pid=$!
  on_exit "kill $watch_pid 2>/dev/null; true"
  # The pods themselves: the re-created StatefulSet (UpdatingTemplate) reports readyReplicas 0
  # until its controller writes its status, while the pods keep running.
  pod_watch=$work/pods-$path.txt
  kubectl -n "$ns" get pods -l app=web -w --output-watch-events \
    -o jsonpath='{.type} {.object.metadata.name} {.object.status.conditions[?(@.type=="Ready")].status}{"\n"}' \
    2>/dev/null > >(while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$pod_watch") &
  pod_watch_pid=$!
  on_exit "kill $pod_watch_pid 2>/dev/null; true"

  metrics "$port" >"$work/metrics0-$path"
  cpu0=$(cpu_seconds "$controller_pid")
  step "resize to 2Gi"
  t0=$EPOCHREALTIME
  k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
  e2e_wait_completed web 3600
  t1=$EPOCHREALTIME
  metrics "$port" >"$work/metrics1-$path"
  cpu1=$(cpu_seconds "$controller_pid")
  record "controller RSS at the end / peak (MiB)" "$path" \
    "$(awk -v a="$(status_kib "$controller_pid" VmRSS)" -v b="$(status_kib "$controller_pid" VmHWM)" 'BEGIN { printf "%.1f / %.1f", a / 1024, b / 1024 }')"
  ok "completed in $(seconds "$t0" "$t1") s; phases seen: ${phases[*]}"
  sleep 1
  kill "$watch_pid" "$pod_watch_pid" 2>/dev/null || true

  step "check, and gather the figures"
  e2e_assert_resized web "$replicas" 2Gi
  e2e_stop_controller "$controller_pid"
  assert_volumes "$path" "$volumes_before" "$policies_before" "$unclaimed_before"

  # API requests, by verb, per resized claim.
  local total=0 verb n0 n1 per
  while read -r verb n1; do
    n0=$(api_requests "$work/metrics0-$path" | awk -v v="$verb" '$1 == v { print $2 }')
    per=$(awk -v d="$((n1 - ${n0:-0}))" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')
    record "API requests per resized claim: $verb" "$path" "$per"
    total=$((total + n1 - ${n0:-0}))
  done < <(api_requests "$work/metrics1-$path")
  record "API requests per resized claim: all" "$path" \
    "$(awk -v d="$total" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')"
  local result
  for result in requeue idle retry terminal; do
    record "reconciles: $result" "$path" "$(awk -v r="result=\"$result\"" '
        FNR == 1 { f++ } /^stsresize_reconciles_total\{/ && index($0, r) { n[f] += $NF }
        END { printf "%.0f", n[2] - n[1] }' "$work/metrics0-$path" "$work/metrics1-$path")"
  done

  # Bytes: every copy Job pod's log and termination message, kept by the node simulator.
  local pod_dir copied summary job
  local -A backup_jobs=() restore_jobs=()
  for pod_dir in "$nodesim_dir/pods/${ns}_"*-stsresize-*; do
    [[ -f $pod_dir/copy.log ]] || continue
    job=${pod_dir##*/}
    job=${job#"${ns}_"}
    job=${job%-*}
    case $job in
      *-stsresize-backup) backup_jobs[$job]=1 ;;
      *-stsresize-restore) restore_jobs[$job]=1 ;;
      *) fail "a copy log of an unexpected pod: $pod_dir" ;;
    esac
    copied=$(tr '\r' '\n' <"$pod_dir/copy.log" | awk '$2 ~ /%$/ { b = $1 } END { gsub(",", "", b); print b + 0 }')
    bytes_copied=$((bytes_copied + copied))
    summary=$(cat "$pod_dir/copy.termination-log" 2>/dev/null || true)
    if [[ $pod_dir == *-stsresize-backup-* && $summary == '{'* ]]; then
      bytes_data=$((bytes_data + $(jq -r .source.bytes <<<"$summary")))
    fi
  done
  local want_backup=${want_jobs% *} want_restore=${want_jobs#* }
  ((${#backup_jobs[@]} == want_backup * replicas && ${#restore_jobs[@]} == want_restore * replicas)) ||
    fail "$path: copy Jobs with an rsync log: ${#backup_jobs[@]} backup (${!backup_jobs[*]}), ${#restore_jobs[@]} restore (${!restore_jobs[*]}); want $((want_backup * replicas)) and $((want_restore * replicas))"
  ((want_backup == 0 || bytes_data > 0)) || fail "$path: no backup Job's source summary (copy.termination-log)"
  ((want_backup == 0 || bytes_copied > 0)) || fail "$path: no bytes transferred in the copy Jobs' rsync logs"
  ok "copy Jobs' rsync logs found: ${#backup_jobs[@]} backup, ${#restore_jobs[@]} restore"
  if ((bytes_data == 0)); then # no copy: the data as the volumes hold it
    for ((i = 0; i < replicas; i++)); do
      t=$(find "$(pv_dir "data-web-$i")" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
      bytes_data=$((bytes_data + t))
    done
  fi
  record "data in the volumes (MiB, all claims)" "$path" "$((bytes_data / 1048576))"
  record "bytes copied (MiB, rsync, all Jobs)" "$path" "$((bytes_copied / 1048576))"
  record "bytes copied per byte of data" "$path" \
    "$(awk -v c="$bytes_copied" -v d="$bytes_data" 'BEGIN { printf "%.2f", d ? c / d : 0 }')"
  # Byte counts, not timings: the rebind path copies each byte once, the two-copy path twice.
  local bounds
  case $path in
    copy) bounds="0.95 1.05" ;;
    two-copies) bounds="1.95 2.05" ;;
    expansion) bounds="0 0" ;;
  esac
  awk -v c="$bytes_copied" -v d="$bytes_data" -v lo="${bounds% *}" -v hi="${bounds#* }" \
    'BEGIN { r = d ? c / d : 0; exit !(r >= lo && r <= hi) }' ||
    fail "$path: $bytes_copied bytes copied for $bytes_data of data, not ${bounds% *} to ${bounds#* } per byte"

  # Downtime: readyReplicas below the original count, from the request to the end of the watch.
  record "downtime: readyReplicas < $replicas (s)" "$path" \
    "$(awk -v start="$t0" -v want="$replicas" '
         { t = $1; if (t < start) t = start
           if (have && prev_ready < want) down += t - prev_t
           prev_t = t; prev_ready = $2; have = 1 }
         END { printf "%.1f", down }' "$sts_watch")"
  record "readyReplicas samples (watch events)" "$path" "$(wc -l <"$sts_watch")"
  record "downtime: Ready pods < $replicas (s)" "$path" \
    "$(awk -v start="$t0" -v want="$replicas" '
         { t = $1; if (t < start) t = start
           if (have && ready < want) down += t - prev
           if ($2 == "DELETED") delete r[$3]; else r[$3] = ($4 == "True")
           ready = 0; for (p in r) ready += r[p]
           prev = t; have = 1 }
         END { printf "%.1f", down }' "$pod_watch")"

  # Time per phase, from the journal.
  "$stsresize" replay --journal "$journal" -o json >"$work/replay-$path.json" ||
    fail "replay of $journal: $(head -c 300 "$work/replay-$path.json")"
  local taken planned
  taken=$(jq -r '.operations[0].path + " " + .operations[0].finalPhase' "$work/replay-$path.json")
  [[ $taken == "$want_path Completed" ]] || fail "$path: the journal says '$taken', want '$want_path Completed'"
  planned=$(jq -r '[.rows[] | select(.event == "Planned") | .details] | first // ""' "$work/replay-$path.json")
  if [[ $path == two-copies ]]; then
    [[ $planned == *"not rebind: "* ]] || fail "$path: the Planned record does not say why not rebind: $planned"
  fi
  ok "journal: $taken; planned: $planned"
  local phase secs
  while read -r phase secs; do
    [[ $phase == Pending ]] || record "phase $phase (s)" "$path" "$secs"
  done < <(jq -r '
      def epoch: (.[0:19] + "Z" | fromdate) + ((.[19:] | capture("^\\.(?<f>[0-9]+)") | ("0." + .f | tonumber)) // 0);
      [.rows[] | select(.phaseBefore != .phaseAfter) | {phase: .phaseAfter, t: (.time | epoch)}] as $c
      | range(0; ($c | length) - 1) | "\($c[.].phase) \(($c[. + 1].t - $c[.].t) * 10 | round / 10)"' \
      "$work/replay-$path.json")
  record "total: journal, first to last record (s)" "$path" \
    "$(jq -r '.operations[0].durationMs / 1000 | . * 10 | round / 10' "$work/replay-$path.json")"
  record "total: request annotated -> completed (s)" "$path" "$(seconds "$t0" "$t1")"
  record "controller CPU during the resize (s)" "$path" "$(seconds "$cpu0" "$cpu1")"

  # Gone before the next path starts: its volumes would hold the disk and their deletion would
  # load the machine during the next measurement.
  kubectl delete namespace "$ns" --wait=true --timeout=300s >/dev/null ||
    fail "namespace $ns not deleted in 300 s"
  deadline=$((SECONDS + 120))
  while [[ -n $(ns_volumes) ]]; do
    ((SECONDS < deadline)) || fail "volumes of namespace $ns not deleted in 120 s: $(ns_volumes)"
    sleep 1
  done
  ns=''
}

# Rows in this order (a row never filled is not printed; one not listed comes last).
for v in create get list update patch delete watch all; do rows+=("API requests per resized claim: $v"); done
for r in requeue idle retry terminal; do rows+=("reconciles: $r"); done
rows+=("data in the volumes (MiB, all claims)" "bytes copied (MiB, rsync, all Jobs)"
  "bytes copied per byte of data" "downtime: readyReplicas < $replicas (s)"
  "readyReplicas samples (watch events)" "downtime: Ready pods < $replicas (s)")
for p in UpdatingTemplate Planning ScalingDown BackingUp Recreating Restoring ScalingUp CleaningUp \
  Expanding ScalingBack; do rows+=("phase $p (s)"); done
rows+=("total: journal, first to last record (s)" "total: request annotated -> completed (s)"
  "controller CPU during the resize (s)" "controller RSS at the end / peak (MiB)")
for r in "${rows[@]}"; do seen[$r]=1; done

for p in "${path_list[@]}"; do measure_path "$p"; done

echo
printf '%s replicas, %s MiB of random data per volume, 1Gi -> 2Gi, poll interval %s, %s%s\n\n' \
  "$replicas" "$data_mib" "${poll_interval:-default}" "$stsresize" "${controller_args:+ $controller_args}"
header="| figure |" rule="| --- |"
for p in "${path_list[@]}"; do header+=" $p |"; rule+=" ---: |"; done
echo "$header"
echo "$rule"
for row in "${rows[@]}"; do
  line="| $row |" filled=0
  for p in "${path_list[@]}"; do
    [[ -n ${figure[$row|$p]:-} ]] && filled=1
    line+=" ${figure[$row|$p]:--} |"
  done
  ((filled)) || continue
  echo "$line"
done
# ratio ROW: copy's figure over two-copies' (2 decimals), "-" if either is missing or zero.
ratio() {
  awk -v a="${figure[$1|copy]:-}" -v b="${figure[$1|two-copies]:-}" \
    'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
if [[ -n ${figure[bytes copied per byte of data|copy]:-} && -n ${figure[bytes copied per byte of data|two-copies]:-} ]]; then
  echo
  printf 'downtime, rebind / two copies: %s (readyReplicas < %s), %s (Ready pods < %s); total time: %s\n' \
    "$(ratio "downtime: readyReplicas < $replicas (s)")" "$replicas" \
    "$(ratio "downtime: Ready pods < $replicas (s)")" "$replicas" \
    "$(ratio "total: request annotated -> completed (s)")"
fi
