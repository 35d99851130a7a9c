#!/usr/bin/env bash
# Figures of one resize (issues #5, #16 and #17), not a pass/fail timing test: a StatefulSet of N
# replicas with MiB of random data per volume is resized from 1Gi to 2Gi by `stsresize run` on a
# local control plane, once per path:
#
#   copy           StorageClass sim-fixed, the controller as shipped, asked through the
#                  stsresize.dev/resize annotation: the rebind path (each claim copied once into a
#                  claim of the target size, whose volume then takes the claim's name; no copy
#                  back)
#   copy-template  the same, asked the way vshn's controller is asked (the template trigger):
#                  the StatefulSet orphan-deleted and applied again with 2Gi templates. With the
#                  annotation, the controller's first step is that gesture (UpdatingTemplate: the
#                  StatefulSet re-created with the new templates); with the template trigger the
#                  user made it: that step's API requests and seconds differ, hence a column of
#                  its own for the comparison with vshn
#   copy-cold      copy with the StatefulSet annotated stsresize.dev/pre-copy=false: no warm
#                  pre-copy (PreCopying), the whole copy with the replicas stopped, as before
#                  the pre-copy existed: the baseline of the pre-copy's figures (issue #18)
#   rolling        copy with the StatefulSet annotated stsresize.dev/strategy=rolling: after the
#                  warm pre-copy, one replica at a time is stopped (evicted), its delta copied and
#                  its claim rebound, and started again, while the others keep serving (issue #18)
#   two-copies     sim-fixed, the controller started with --no-rebind: the two-copy path (backup,
#                  recreate the claim empty, copy back)
#   expansion      sim-expandable: the claims expanded in place
#   vshn           (--peer only) the same StatefulSet, data and StorageClass resized by
#                  vshn/statefulset-resize-controller instead, asked the same way as
#                  copy-template (that controller's only trigger: a StatefulSet whose template
#                  asks for more than its claims). It backs every claim up into a new claim,
#                  deletes and re-creates the claim at 2Gi and copies back (rsync Jobs), all
#                  claims at once, polling every 10 s
#
# The replicas are applications that keep writing (tests/cluster/manifests/statefulset-writer.yaml):
# every 0.1 s a file of their volume, app/last, rewritten, and a line with the time once written.
# The data checks leave app/ out (what the writers wrote last is in it, by design different from
# before); every other file's sha256 must be as before.
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
#   bytes read to prove the copies   the copy Jobs' summaries' "hashed": what they read on both
#                                    sides with the replicas stopped (both trees whole, or, after
#                                    a pre-copy's manifests, only the files changed since)
#   downtime                         time with readyReplicas below the original count, from a
#                                    `kubectl get -w` of the StatefulSet timestamped on arrival;
#                                    and time with fewer Ready pods, from a watch of the pods
#                                    (the re-created StatefulSet object reports 0 ready for a
#                                    moment while its pods keep running)
#   Ready pods, minimum              the fewest pods Ready at any instant from the request on
#                                    (the pod watch)
#   per-replica unavailability       per pod, the time it was not Ready (or absent) from the
#                                    request on; the longest of the replicas'
#   writers' largest gap             the largest gap between two writes of one replica, from its
#                                    own output (every incarnation of the pod): of any replica at
#                                    any time, and of a replica while it was not itself stopped
#                                    (gaps overlapping that replica's own unavailability left
#                                    out): what the replicas still serving saw
#   time per phase, total            from the journal (`stsresize replay -o json`: the time of
#                                    each phase change); total = request (annotation written, or
#                                    the orphan delete started) -> completed as seen by this
#                                    script (polling every 0.5 s)
#   controller CPU, RSS              /proc of the controller: CPU seconds during the resize,
#                                    RSS at the end and its peak (VmHWM)
#
# With both copy and two-copies, a line after the table divides the rebind path's downtime and
# total time by the two-copy path's (same run, same data, same machine); with copy and
# copy-cold, the pre-copy's downtime by the downtime without it; with copy-template and vshn, a
# line divides stsresize's figures by vshn's. The copy paths' bytes include the pre-copy Jobs'
# (their termination message's bytes), also shown apart.
#
# --peer DIR: DIR is a checkout of the public vshn/statefulset-resize-controller (never vendored
# here). Its commit (`git -C DIR rev-parse HEAD`; a checkout with local changes gets "-dirty" and
# a hash of the diff) keys a cache directory, ~/.cache/stsresize/vshn-<commit>/ (or under
# $XDG_CACHE_HOME), where `go build` with the Go on PATH puts its binary once; its modules come
# from the configured Go proxy. The copy-template and vshn columns are added to --paths when
# missing. vshn's controller runs as a process with the cluster's admin kubeconfig (it watches
# every namespace: it runs only during its own column, as stsresize does during its own), with
# --sync-image unused (the node simulator runs a container's command with the host's binaries:
# its Jobs' `rsync -avhWHAX` is the host's rsync). Its figures are taken as stsresize's, except:
#
#   API requests per resized claim   rest_client_requests_total of its controller-runtime
#                                    /metrics (client-go's counter, by HTTP method), scraped
#                                    just before the trigger and just after completion; its GETs
#                                    are gets, lists and watches together (the row "GET (get,
#                                    list, watch)" adds stsresize's three verbs up for the same)
#   completion                       its own state, polled every 0.5 s: no claim left in its
#                                    sts-resize.vshn.net/pvcs annotation, no failed label,
#                                    replicas and readyReplicas back to N, every claim 2Gi and
#                                    Bound; it leaves its replicas/scalup annotations behind
#                                    (reported, as is anything else it leaves)
#   bytes copied                     the "sent N bytes" summary of each of its rsync Jobs (pod
#                                    logs kept by the node simulator; rsync -h prints it in units
#                                    of 1000, 3 significant digits) over the bytes of every file
#                                    in the volumes before the trigger
#   phases                           none (it journals nothing)
#
# vshn's resize is checked (sizes, Bound, every file's sha256, replicas, readyReplicas, what it
# leaves) but its failures do not fail this script: they are printed as the run goes and in a row
# of the table. A vshn resize that does not complete within 3600 s (or is labelled failed) is
# reported the same way.
#
# Every resize is also checked; a failed check exits 1: sizes, sha256 of every file, replicas,
# the path the journal says was taken (Rebind, Copy with "not rebind: ...", Expand), the copy
# Jobs that ran (copy: one backup Job per claim and no restore Job; two-copies: one of each per
# claim; expansion: none; a pre-copy Job per claim on the copy paths but copy-cold), the rsync
# logs found for each, bytes copied per byte of data, pre-copies included (copy and rolling 0.95
# to 1.05, two-copies 1.95 to 2.05, expansion 0; plus what --churn rewrote, once per copy), no claim, Job or ConfigMap left, no
# PersistentVolume left of the old claims or of the copies nor a new one without a claimRef
# (the PV controller deletes released volumes asynchronously: waited for, up to 120 s), the
# volumes' reclaim policy back to what it was.
#
#   tests/bench/resize_figures.sh [--build DIR] [--data-mib MIB] [--replicas N]
#                                 [--paths copy,copy-cold,copy-template,rolling,two-copies,expansion,vshn]
#                                 [--poll-interval DURATION] [--peer DIR] [--churn SECONDS]
#                                 [--controller-args 'ARGS'] [--cluster-scoped]
#                                 [--kubeconfig FILE] [--name CLUSTER] [--keep] [--out DIR]
#
#   --data-mib       random data per volume, in MiB (default 1024); the volumes' disk must
#                    hold 3 copies of it per replica (two-copies: source, backup, recreated
#                    claim; copy: 2)
#   --paths          which paths, in this order (default copy,two-copies,expansion; vshn
#                    needs --peer)
#   --poll-interval  passed to `stsresize run` (default: the controller's own)
#   --churn SECONDS  an application that keeps writing: from the request until the replicas
#                    are being stopped (the phase past PreCopying), a writer on the host rewrites
#                    one random 1 MiB file of each volume every SECONDS (written beside it, then
#                    renamed over it), and the data checks expect the new contents. The copy
#                    with the replicas stopped then has what changed after the pre-copy to move
#                    and read. Rewritten files per volume are reported (default: no writer)
#   --controller-args  more flags for stsresize's `run`, split on spaces (e.g.
#                    '--max-parallel-copies 2': with --build, two settings or two binaries
#                    compared on one cluster)
#   --cluster-scoped run stsresize without --namespace, as the cluster-scoped installation does
#                    (and as vshn's controller runs): it then watches every namespace, the
#                    StorageClasses and the PersistentVolumes (read live at each step
#                    otherwise). Default: --namespace of the path's own namespace
#   --peer DIR       also measure vshn/statefulset-resize-controller built from the checkout DIR
#                    (see above); adds copy-template and vshn to --paths when missing
#   --kubeconfig     use this cluster (a namespace of its own per path, deleted at its end);
#                    otherwise a private cluster --name (default resize-figures) is brought up
#                    and down
#   --keep           leave the private cluster up
#   --out DIR        keep the controller logs, /metrics scrapes, journals, replays and watch
#                    samples in DIR
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$repo/build data_mib=1024 replicas=3 paths=copy,two-copies,expansion poll_interval='' given_kubeconfig=''
cluster_name=resize-figures keep=0 out='' peer_dir=''
controller_args='' churn='' cluster_scoped=0
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --data-mib) data_mib=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --poll-interval) poll_interval=$2; shift 2 ;;
    --peer) peer_dir=$2; shift 2 ;;
    --controller-args) controller_args=$2; shift 2 ;;
    --churn) churn=$2; shift 2 ;;
    --cluster-scoped) cluster_scoped=1; shift ;;
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
[[ -z $churn || $churn =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "resize_figures: --churn takes seconds" >&2; exit 2; }
IFS=, read -r -a path_list <<<"$paths"
((${#path_list[@]})) || { echo "resize_figures: --paths names no path" >&2; exit 2; }
have_path() {
  local p
  for p in "${path_list[@]}"; do [[ $p == "$1" ]] && return 0; done
  return 1
}
if [[ -n $peer_dir ]]; then
  have_path copy-template || path_list+=(copy-template)
  have_path vshn || path_list+=(vshn)
fi
for p in "${path_list[@]}"; do
  [[ $p == copy || $p == copy-cold || $p == copy-template || $p == rolling || $p == two-copies || $p == expansion || $p == vshn ]] ||
    { echo "resize_figures: unknown path '$p' in --paths (copy, copy-cold, copy-template, rolling, two-copies, expansion, vshn)" >&2; exit 2; }
  [[ $p != vshn || -n $peer_dir ]] || { echo "resize_figures: the vshn path needs --peer DIR" >&2; exit 2; }
done

# vshn's controller, built from --peer DIR once per commit (peer_lib.sh).
peer=''
# shellcheck source-path=SCRIPTDIR source=peer_lib.sh
source "$repo/tests/bench/peer_lib.sh"
if [[ -n $peer_dir ]]; then peer_build resize_figures "$peer_dir"; fi

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
# The writers' file app/ is left out of every data check (see above); the rest as e2e's.
e2e_checksums() {
  local dir
  dir=$(pv_dir "$1")
  (cd "$dir" && find . -type f ! -name id ! -name marker ! -path './app/*' -print0 | sort -z | xargs -0 sha256sum)
}

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
# churn NAME N SECONDS DIRS...: the --churn writer (see above) on the volumes DIRS of NAME's N
# replicas; writes the count of rewrites per volume to $work/churned. Each rename happens only
# after the phase was read as still PreCopying (or before it), so none lands once the copy with
# the replicas stopped may be reading (ScalingDown, which waits for the replicas to stop, lies
# between).
churn() {
  local name=$1 replicas=$2 every=$3 rewrites=0 i f sum phase
  shift 3
  local dirs=("$@")
  still_running() {
    phase=$(jp "statefulset/$name" '{.metadata.annotations.stsresize\.dev/phase}' 2>/dev/null || true)
    [[ $phase == '' || $phase == Pending || $phase == UpdatingTemplate || $phase == Planning || $phase == PreCopying ]]
  }
  while still_running; do
    for ((i = 0; i < replicas; i++)); do
      f=bulk/m$(printf %06d $((RANDOM % data_mib)))
      head -c 1048576 /dev/urandom >"${dirs[$i]}/$f.churn"
      sum=$(sha256sum <"${dirs[$i]}/$f.churn")
      if ! still_running; then
        rm -f "${dirs[$i]}/$f.churn"
        break 2
      fi
      mv "${dirs[$i]}/$f.churn" "${dirs[$i]}/$f"
      sed -i "s|^[0-9a-f]*  \./$f\$|${sum%% *}  ./$f|" "$work/before-$name-$i"
    done
    rewrites=$((rewrites + 1))
    sleep "$every"
  done
  echo "$rewrites" >"$work/churned"
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
  local scope=(--namespace "$ns")
  ((cluster_scoped)) && scope=()
  "$stsresize" run --kubeconfig "$KUBECONFIG" "${scope[@]}" \
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

# start_peer LOG PORT: peer_start with the log in $work, its pid in $controller_pid and killed at
# exit like the controllers.
start_peer() {
  peer_start "$work/$1" "$2"
  controller_pid=$peer_pid
  controllers+=("$controller_pid")
}
# peer_wait_completed NAME SECS: until vshn's controller is done with NAME (see the header);
# its outcome in $peer_outcome. Returns 1 when it failed, stopped or ran out of time.
peer_wait_completed() {
  local name=$1 deadline=$((SECONDS + $2)) sts i claims
  peer_outcome=''
  while :; do
    sts=$(k get statefulset "$name" -o json 2>/dev/null || true)
    if [[ -n $sts ]]; then
      if [[ $(jq -r '.metadata.labels["sts-resize.vshn.net/failed"] // ""' <<<"$sts") == true ]]; then
        peer_outcome="labelled sts-resize.vshn.net/failed"
        return 1
      fi
      if jq -e --argjson n "$replicas" '(.metadata.annotations["sts-resize.vshn.net/pvcs"] // "") as $p
          | ($p == "" or $p == "[]" or $p == "null") and .spec.replicas == $n
            and (.status.readyReplicas // 0) == $n' <<<"$sts" >/dev/null; then
        claims=$(for ((i = 0; i < replicas; i++)); do
          k get pvc "data-$name-$i" -o jsonpath='{.spec.resources.requests.storage}/{.status.phase} ' 2>/dev/null || true
        done)
        [[ $claims == "$(for ((i = 0; i < replicas; i++)); do printf '2Gi/Bound '; done)" ]] &&
          { peer_outcome=completed; return 0; }
      fi
    fi
    ((SECONDS < deadline)) || { peer_outcome="not completed in $2 s"; return 1; }
    kill -0 "$controller_pid" 2>/dev/null || { peer_outcome="its controller exited"; return 1; }
    sleep 0.5
  done
}
# peer_check NAME: vshn's resize checked as stsresize's is, without failing: each problem is
# appended to $peer_problems; what it leaves behind (by design or not) is in $peer_left.
peer_check() {
  local name=$1 i claim got
  for ((i = 0; i < replicas; i++)); do
    claim=data-$name-$i
    got=$(jp "pvc/$claim" '{.spec.resources.requests.storage}/{.status.phase}' 2>/dev/null || true)
    if [[ $got != 2Gi/Bound ]]; then
      peer_problems+=("pvc/$claim is ${got:-missing}")
      continue
    fi
    e2e_checksums "$claim" >"$work/after-vshn-$name-$i" 2>&1 || true
    if ! diff -q "$work/before-$name-$i" "$work/after-vshn-$name-$i" >/dev/null; then
      got=$(diff "$work/before-$name-$i" "$work/after-vshn-$name-$i" | grep -c '^[<>]' || true)
      peer_problems+=("data of $claim differs ($got lines of sha256sum output differ)")
    fi
  done
  got=$(jp "statefulset/$name" '{.spec.replicas}/{.status.readyReplicas}' 2>/dev/null || true)
  [[ $got == "$replicas/$replicas" ]] || peer_problems+=("replicas/readyReplicas $got, not $replicas/$replicas")
  # Claims other than the N, Jobs, and the controller's annotations and labels on the StatefulSet.
  peer_left=$(
    k get pvc,jobs -o name | grep -vxE "persistentvolumeclaim/data-$name-[0-9]+" |
      sed 's|^persistentvolumeclaim/|pvc/|; s|^job.batch/|job/|' || true
    k get statefulset "$name" -o json |
      jq -r '(.metadata.annotations // {}), (.metadata.labels // {}) | keys[] | select(startswith("sts-resize.vshn.net/"))' || true
  )
}

# start_watch FILE ERR CMD...: CMD (a `kubectl get -w`) in the background, each line it prints
# written to FILE with the time of its arrival before it, its stderr to ERR; its pid in
# $watch_started, killed at exit. Returns once the first line (the object as it is) has arrived:
# a watch that failed to start (a loaded apiserver) is started again, up to 3 times.
start_watch() {
  local file=$1 err=$2 attempt deadline
  shift 2
  for attempt in 1 2 3; do
    "$@" 2>>"$err" > >(while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$file") &
    watch_started=$!
    on_exit "kill $watch_started 2>/dev/null; true"
    deadline=$((SECONDS + 20))
    until [[ -s $file ]]; do
      if ! kill -0 "$watch_started" 2>/dev/null || ((SECONDS >= deadline)); then break; fi
      sleep 0.1
    done
    [[ -s $file ]] && return 0
    kill "$watch_started" 2>/dev/null || true
    ((attempt < 3)) || fail "no first line from '$*' in 3 attempts: $(tail -n 3 "$err")"
  done
}

measure_path() {
  local path=$1 class journal port sts_watch watch_pid pod_watch pod_watch_pid t0 t1 cpu0 cpu1 i bytes_data=0 bytes_copied=0 t
  # want_path: what the journal must say was taken; jobs: the copy Jobs per claim (backup restore);
  # trigger: annotation (stsresize.dev/resize) or template (orphan delete, apply with 2Gi).
  local want_path want_jobs extra=() controller=stsresize trigger=annotation
  case $path in
    copy) class=sim-fixed want_path=Rebind want_jobs="1 0" ;;
    copy-cold) class=sim-fixed want_path=Rebind want_jobs="1 0" ;;
    rolling) class=sim-fixed want_path=Rebind want_jobs="1 0" ;;
    copy-template) class=sim-fixed want_path=Rebind want_jobs="1 0" trigger=template ;;
    two-copies) class=sim-fixed want_path=Copy want_jobs="1 1" extra=(--no-rebind) ;;
    expansion) class=sim-expandable want_path=Expand want_jobs="0 0" ;;
    vshn) class=sim-fixed want_jobs="1 1" controller=vshn trigger=template ;;
    *) fail "unknown path $path (copy, copy-cold, copy-template, two-copies, expansion or vshn)" ;;
  esac
  use_namespace
  step "$path path ($class, $controller, $trigger trigger): StatefulSet web, $replicas replicas of 1Gi, $data_mib MiB of random data each"
  e2e_statefulset web "$class" "$replicas" statefulset-writer.yaml
  [[ $path == copy-cold ]] && k annotate statefulset web stsresize.dev/pre-copy=false >/dev/null
  [[ $path == rolling ]] && k annotate statefulset web stsresize.dev/strategy=rolling >/dev/null
  add_data web "$replicas" "$data_mib"
  ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken"
  # The volumes before, and their reclaim policy: what it must be again at the end.
  local volumes_before policies_before unclaimed_before
  volumes_before=$(ns_volumes | awk '{ print $1 }')
  policies_before=$(ns_volumes | awk '{ print $3 }' | sort -u)
  unclaimed_before=$(unclaimed_volumes)

  local attempt deadline log=controller-$path.log
  if [[ $controller == vshn ]]; then
    # The data as the volumes hold it (vshn's Jobs print no byte count of the source).
    for ((i = 0; i < replicas; i++)); do
      t=$(find "$(pv_dir "data-web-$i")" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
      bytes_data=$((bytes_data + t))
    done
    for attempt in 1 2 3; do
      port=$(free_port)
      start_peer "$log" "$port"
      deadline=$((SECONDS + 60))
      # controller-runtime starts its workers once the StatefulSet informer has synced.
      until grep -qs 'Starting workers' "$work/$log" && metrics "$port" >/dev/null 2>&1; do
        kill -0 "$controller_pid" 2>/dev/null || break
        ((SECONDS < deadline)) || fail "vshn's controller did not start its workers in 60s: $(tail -n 5 "$work/$log")"
        sleep 0.2
      done
      kill -0 "$controller_pid" 2>/dev/null && break
      ((attempt < 3)) || fail "vshn's controller exited: $(tail -n 5 "$work/$log")"
    done
  else
    journal=$work/journal-$path.db
    local args=(--journal "$journal" "${extra[@]}") more=()
    read -r -a more <<<"$controller_args"
    args+=("${more[@]}")
    [[ -n $poll_interval ]] && args+=(--poll-interval "$poll_interval")
    # A free port may be taken by another process before the controller binds it: try another.
    for attempt in 1 2 3; do
      port=$(free_port)
      start_controller "$log" "$port" "${args[@]}"
      deadline=$((SECONDS + 60))
      until metrics "$port" 2>/dev/null | awk '/^stsresize_informer_synced/ { n++; s += $NF } END { exit !(n > 0 && s == n) }'; do
        kill -0 "$controller_pid" 2>/dev/null || break
        ((SECONDS < deadline)) || fail "the controller's caches did not sync in 60s: $(tail -n 5 "$work/$log")"
        sleep 0.2
      done
      kill -0 "$controller_pid" 2>/dev/null && break
      ((attempt < 3)) || fail "the controller exited: $(tail -n 5 "$work/$log")"
    done
  fi
  sleep 2 # the first look at every StatefulSet

  # readyReplicas as the watch delivers it, timestamped on arrival.
  sts_watch=$work/ready-$path.txt
  start_watch "$sts_watch" "$work/ready-$path.err" \
    kubectl -n "$ns" get statefulset web -w -o jsonpath='{.status.readyReplicas}{"\n"}'
  watch_pid=$watch_started
  # The pods themselves: the re-created StatefulSet (UpdatingTemplate) reports readyReplicas 0
  # until its controller writes its status, while the pods keep running.
  pod_watch=$work/pods-$path.txt
  start_watch "$pod_watch" "$work/pods-$path.err" \
    kubectl -n "$ns" get pods -l app=web -w --output-watch-events \
    -o jsonpath='{.type} {.object.metadata.name} {.object.status.conditions[?(@.type=="Ready")].status}{"\n"}'
  pod_watch_pid=$watch_started

  metrics "$port" >"$work/metrics0-$path"
  cpu0=$(cpu_seconds "$controller_pid")
  step "resize to 2Gi ($trigger trigger)"
  local churn_pid='' churn_dirs=()
  if [[ -n $churn && $controller != vshn && $path != expansion ]]; then
    for ((i = 0; i < replicas; i++)); do churn_dirs+=("$(pv_dir "data-web-$i")"); done
    rm -f "$work/churned"
    churn web "$replicas" "$churn" "${churn_dirs[@]}" &
    churn_pid=$!
  fi
  t0=$EPOCHREALTIME
  if [[ $trigger == annotation ]]; then
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
  else
    k delete statefulset web --cascade=orphan --wait=true >/dev/null
    apply_manifest statefulset-writer.yaml NAME=web REPLICAS="$replicas" POD_MANAGEMENT=Parallel \
      STORAGE_CLASS="$class" SIZE=2Gi
  fi
  local completed=1
  if [[ $controller == vshn ]]; then
    peer_wait_completed web 3600 || completed=0
  else
    e2e_wait_completed web 3600
  fi
  t1=$EPOCHREALTIME
  metrics "$port" >"$work/metrics1-$path" || true
  cpu1=$(cpu_seconds "$controller_pid" 2>/dev/null || echo "$cpu0")
  record "controller RSS at the end / peak (MiB)" "$path" \
    "$(awk -v a="$(status_kib "$controller_pid" VmRSS 2>/dev/null)" -v b="$(status_kib "$controller_pid" VmHWM 2>/dev/null)" 'BEGIN { printf "%.1f / %.1f", a / 1024, b / 1024 }')"
  if [[ $controller == vshn ]]; then
    ok "vshn: $peer_outcome after $(seconds "$t0" "$t1") s"
  else
    ok "completed in $(seconds "$t0" "$t1") s; phases seen: ${phases[*]}"
  fi
  sleep 1
  kill "$watch_pid" "$pod_watch_pid" 2>/dev/null || true
  if [[ -n $churn_pid ]]; then
    wait "$churn_pid" || fail "the --churn writer failed"
    record "files rewritten per volume while the replicas ran (--churn $churn s)" "$path" "$(cat "$work/churned")"
  fi

  step "check, and gather the figures"
  if [[ $controller == vshn ]]; then
    peer_problems=() peer_left=''
    ((completed)) || peer_problems+=("$peer_outcome")
    peer_check web
    kill -TERM "$controller_pid" 2>/dev/null || true
    deadline=$((SECONDS + 30))
    while kill -0 "$controller_pid" 2>/dev/null; do
      ((SECONDS < deadline)) || { peer_problems+=("its controller did not exit within 30 s of SIGTERM"); break; }
      sleep 0.2
    done
    record "left behind after completion" "$path" \
      "$(if [[ -z $peer_left ]]; then echo none; else tr '\n' ' ' <<<"$peer_left" | sed 's/ $//'; fi)"
    record "resize checked (sizes, sha256 of every file, replicas)" "$path" \
      "$( ((${#peer_problems[@]})) && printf '%s; ' "${peer_problems[@]}" | sed 's/; $//' || echo ok)"
    if ((${#peer_problems[@]})); then
      note "vshn: $(IFS=';' && echo "${peer_problems[*]}")"
    else
      ok "vshn: every claim 2Gi and Bound, every file's sha256 unchanged, $replicas/$replicas Ready"
    fi
    [[ -n $peer_left ]] && note "vshn left behind: $(tr '\n' ' ' <<<"$peer_left")"
  else
    e2e_assert_resized web "$replicas" 2Gi
    e2e_stop_controller "$controller_pid"
    assert_volumes "$path" "$volumes_before" "$policies_before" "$unclaimed_before"
    record "left behind after completion" "$path" none
    record "resize checked (sizes, sha256 of every file, replicas)" "$path" ok
  fi

  # API requests per resized claim: stsresize's by verb, vshn's by HTTP method (client-go's
  # counter), mapped to the verb a method means (a GET is a get, a list or a watch).
  local total=0 gets=0 verb n0 n1 per
  if [[ $controller == vshn ]]; then
    local method
    while read -r method n1; do
      n0=$(peer_requests "$work/metrics0-$path" | awk -v v="$method" '$1 == v { print $2 }')
      case $method in
        POST) verb='create' ;;
        PUT) verb='update' ;;
        PATCH) verb='patch' ;;
        DELETE) verb='delete' ;;
        GET) verb='' gets=$((n1 - ${n0:-0})) ;;
        *) verb=$method ;;
      esac
      [[ -n $verb ]] && record "API requests per resized claim: $verb" "$path" \
        "$(awk -v d="$((n1 - ${n0:-0}))" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')"
      total=$((total + n1 - ${n0:-0}))
    done < <(peer_requests "$work/metrics1-$path")
  else
    while read -r verb n1; do
      n0=$(api_requests "$work/metrics0-$path" | awk -v v="$verb" '$1 == v { print $2 }')
      per=$(awk -v d="$((n1 - ${n0:-0}))" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')
      record "API requests per resized claim: $verb" "$path" "$per"
      total=$((total + n1 - ${n0:-0}))
      [[ $verb == get || $verb == list || $verb == watch ]] && gets=$((gets + n1 - ${n0:-0}))
    done < <(api_requests "$work/metrics1-$path")
    local result
    for result in requeue idle retry terminal; do
      record "reconciles: $result" "$path" "$(awk -v r="result=\"$result\"" '
          FNR == 1 { f++ } /^stsresize_reconciles_total\{/ && index($0, r) { n[f] += $NF }
          END { printf "%.0f", n[2] - n[1] }' "$work/metrics0-$path" "$work/metrics1-$path")"
    done
  fi
  record "API requests per resized claim: GET (get, list, watch)" "$path" \
    "$(awk -v d="$gets" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')"
  record "API requests per resized claim: all" "$path" \
    "$(awk -v d="$total" -v r="$replicas" 'BEGIN { printf "%.1f", d / r }')"

  local pod_dir copied summary job
  local -A backup_jobs=() restore_jobs=() pre_copy_jobs=()
  local bytes_pre_copied=0 bytes_hashed=0
  if [[ $controller == vshn ]]; then
    # Bytes: the "sent N bytes" line of every run of its rsync Jobs (sync-<src>-to-<dst>), in
    # units of 1000 (rsync -h).
    for pod_dir in "$nodesim_dir/pods/${ns}_sync-"*; do
      [[ -f $pod_dir/sync.log ]] || continue
      job=${pod_dir##*/}
      job=${job#"${ns}_"}
      job=${job%-*}
      if [[ $job == *-to-*-backup-* ]]; then backup_jobs[$job]=1; else restore_jobs[$job]=1; fi
      copied=$(awk '$1 == "sent" && $3 == "bytes" {
          v = $2; u = substr(v, length(v)); m = 1
          if (u == "K") m = 1e3; else if (u == "M") m = 1e6; else if (u == "G") m = 1e9; else if (u == "T") m = 1e12
          if (m > 1) v = substr(v, 1, length(v) - 1)
          gsub(",", "", v); s += v * m }
        END { printf "%.0f", s }' "$pod_dir/sync.log")
      bytes_copied=$((bytes_copied + copied))
    done
    ok "rsync Jobs' logs found: ${#backup_jobs[@]} backup, ${#restore_jobs[@]} restore"
    record "copy Jobs (backup / restore)" "$path" "${#backup_jobs[@]} / ${#restore_jobs[@]}"
  else
    # Bytes: every copy Job pod's log and termination message, kept by the node simulator.
    for pod_dir in "$nodesim_dir/pods/${ns}_"*-stsresize-*; do
      [[ -f $pod_dir/copy.log ]] || continue
      job=${pod_dir##*/}
      job=${job#"${ns}_"}
      job=${job%-*}
      case $job in
        *-stsresize-precopy)
          # Its rsync passes: their bytes in all, from its result.
          summary=$(cat "$pod_dir/copy.termination-log" 2>/dev/null || true)
          [[ $summary == '{'* ]] || fail "$path: pre-copy $job gave no result: $summary"
          pre_copy_jobs[$job]=1
          bytes_pre_copied=$((bytes_pre_copied + $(jq -r .bytes <<<"$summary")))
          continue
          ;;
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
      if [[ $summary == '{'* ]]; then
        bytes_hashed=$((bytes_hashed + $(jq -r '.hashed // (.source.bytes + .destination.bytes)' <<<"$summary")))
      fi
    done
    local want_backup=${want_jobs% *} want_restore=${want_jobs#* }
    ((${#backup_jobs[@]} == want_backup * replicas && ${#restore_jobs[@]} == want_restore * replicas)) ||
      fail "$path: copy Jobs with an rsync log: ${#backup_jobs[@]} backup (${!backup_jobs[*]}), ${#restore_jobs[@]} restore (${!restore_jobs[*]}); want $((want_backup * replicas)) and $((want_restore * replicas))"
    ((want_backup == 0 || bytes_data > 0)) || fail "$path: no backup Job's source summary (copy.termination-log)"
    ((want_backup == 0 || bytes_copied + bytes_pre_copied > 0)) ||
      fail "$path: no bytes transferred in the copy and pre-copy Jobs' rsync logs"
    ok "copy Jobs' rsync logs found: ${#backup_jobs[@]} backup, ${#restore_jobs[@]} restore, ${#pre_copy_jobs[@]} pre-copies"
    record "copy Jobs (backup / restore)" "$path" "${#backup_jobs[@]} / ${#restore_jobs[@]}"
    record "pre-copy Jobs" "$path" "${#pre_copy_jobs[@]}"
    local want_pre_copies=$replicas
    [[ $path == copy-cold || $path == expansion ]] && want_pre_copies=0
    ((${#pre_copy_jobs[@]} == want_pre_copies)) ||
      fail "$path: ${#pre_copy_jobs[@]} pre-copy Jobs with a result, want $want_pre_copies"
    record "bytes copied while the replicas ran (MiB, pre-copies)" "$path" "$((bytes_pre_copied / 1048576))"
    record "bytes read to prove the copies, replicas stopped (MiB)" "$path" "$((bytes_hashed / 1048576))"
    bytes_copied=$((bytes_copied + bytes_pre_copied))
  fi
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
    copy | copy-cold | copy-template | rolling) bounds="0.95 1.05" ;;
    two-copies | vshn) bounds="1.95 2.05" ;;
    expansion) bounds="0 0" ;;
  esac
  # The --churn writer's rewrites are new bytes to copy again (once per copy): allowed on top.
  if [[ -n $churn_pid && -s $work/churned ]]; then
    bounds=$(awk -v b="$bounds" -v n="$(cat "$work/churned")" -v r="$replicas" -v d="$bytes_data" \
      'BEGIN { split(b, x, " "); extra = d ? n * r * 1048576 / d : 0
               copies = (x[2] > 1.5) ? 2 : 1; printf "%s %.2f", x[1], x[2] + copies * extra }')
  fi
  if ! awk -v c="$bytes_copied" -v d="$bytes_data" -v lo="${bounds% *}" -v hi="${bounds#* }" \
    'BEGIN { r = d ? c / d : 0; exit !(r >= lo && r <= hi) }'; then
    local why="$bytes_copied bytes copied for $bytes_data of data, not ${bounds% *} to ${bounds#* } per byte"
    [[ $controller == vshn ]] || fail "$path: $why"
    note "vshn: $why"
  fi

  # Downtime: readyReplicas below the original count, from the request to the end of the watch.
  record "downtime: readyReplicas < $replicas (s)" "$path" \
    "$(awk -v start="$t0" -v want="$replicas" '
         { t = $1; if (t < start) t = start
           if (have && prev_ready < want) down += t - prev_t
           prev_t = t; prev_ready = $2 + 0; have = 1 }
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
  availability_figures

  # Time per phase, from the journal (stsresize's only: vshn's controller journals nothing).
  [[ $controller == vshn ]] || journal_figures
  record "total: request -> completed (s)" "$path" "$(seconds "$t0" "$t1")"
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

# availability_figures (in measure_path's scope): Ready pods, per-replica unavailability and the
# writers' gaps (see the header), from the pod watch and the writers' output.
availability_figures() {
  local outages=$work/outages-$path.txt writes=$work/writes-$path.txt i f
  # "pod start end" of each interval from t0 to t1 a pod was not Ready or absent; and the
  # fewest Ready at any instant (last line, "min N").
  awk -v t0="$t0" -v t1="$t1" '
    function count(  p, n) { n = 0; for (p in up) n += up[p]; return n }
    { t = $1; name = $3; ready = ($2 != "DELETED" && $4 == "True")
      if (t < t0) { up[name] = ready; next }
      if (!started) { started = 1; min = count() }
      if ((name in up) && up[name] && !ready) down_since[name] = t
      else if (!(name in up) && !ready) down_since[name] = t
      else if (ready && (name in down_since)) { print name, down_since[name], t; delete down_since[name] }
      up[name] = ready
      if (count() < min) min = count() }
    END { for (p in down_since) print p, down_since[p], t1
          if (!started) min = count()
          print "min", min }' "$pod_watch" >"$outages"
  record "Ready pods, minimum during the resize" "$path" "$(awk '$1 == "min" { print $2 }' "$outages")"
  record "per-replica unavailability, longest (s)" "$path" "$(awk '$1 != "min" { d[$1] += $3 - $2 }
      END { m = 0; for (p in d) if (d[p] > m) m = d[p]; printf "%.1f", m }' "$outages")"
  # Every write of every incarnation of each replica, "pod time", by time.
  : >"$writes"
  for ((i = 0; i < replicas; i++)); do
    for f in "$nodesim_dir/pods/${ns}_web-$i/main.log" "$nodesim_dir/pods/.old/${ns}_web-$i."*/main.log; do
      [[ -f $f ]] && awk -v p="web-$i" '$1 == "write" { print p, $2 }' "$f" >>"$writes"
    done
  done
  [[ -s $writes ]] || fail "$path: no write found in the replicas' output ($nodesim_dir/pods/${ns}_web-*/main.log)"
  sort -k1,1 -k2,2n -o "$writes" "$writes"
  # Gaps between consecutive writes of one replica within [t0, t1]; "serving": not overlapping
  # an interval the replica was itself unavailable.
  local gaps
  gaps=$(awk -v t0="$t0" -v t1="$t1" '
      FNR == NR { if ($1 != "min") { n = ++out[$1]; os[$1, n] = $2; oe[$1, n] = $3 } next }
      $2 < t0 || $2 > t1 { last[$1] = $2; next }
      { p = $1; if (p in last) { a = last[p]; b = $2; g = b - a; if (g > any) any = g
          mine = 0; for (k = 1; k <= out[p]; k++) if (a < oe[p, k] && b > os[p, k]) mine = 1
          if (!mine && g > serving) serving = g }
        last[p] = $2 }
      END { printf "%.2f %.2f", any, serving }' "$outages" "$writes")
  record "writers: largest gap, any replica (s)" "$path" "${gaps% *}"
  record "writers: largest gap of a replica not itself stopped (s)" "$path" "${gaps#* }"
}

# journal_figures (in measure_path's scope): the path the journal says was taken, checked, and
# the time of each phase.
journal_figures() {
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
      | [range(0; ($c | length) - 1) | {phase: $c[.].phase, s: ($c[. + 1].t - $c[.].t)}]
      | group_by(.phase)[] | "\(.[0].phase) \(map(.s) | add * 10 | round / 10)"' \
      "$work/replay-$path.json")
  record "total: journal, first to last record (s)" "$path" \
    "$(jq -r '.operations[0].durationMs / 1000 | . * 10 | round / 10' "$work/replay-$path.json")"
}

# Rows in this order (a row never filled is not printed; one not listed comes last).
for v in create get list update patch delete watch "GET (get, list, watch)" all; do
  rows+=("API requests per resized claim: $v")
done
for r in requeue idle retry terminal; do rows+=("reconciles: $r"); done
rows+=("copy Jobs (backup / restore)" "pre-copy Jobs" "data in the volumes (MiB, all claims)"
  "bytes copied while the replicas ran (MiB, pre-copies)" "bytes copied (MiB, rsync, all Jobs)"
  "bytes copied per byte of data" "downtime: readyReplicas < $replicas (s)"
  "readyReplicas samples (watch events)" "downtime: Ready pods < $replicas (s)"
  "Ready pods, minimum during the resize" "per-replica unavailability, longest (s)"
  "writers: largest gap, any replica (s)" "writers: largest gap of a replica not itself stopped (s)")
for p in UpdatingTemplate Planning PreCopying ScalingDown StoppingReplica BackingUp Recreating Restoring \
  StartingReplica ScalingUp CleaningUp Expanding ScalingBack; do rows+=("phase $p (s)"); done
rows+=("total: journal, first to last record (s)" "total: request -> completed (s)"
  "controller CPU during the resize (s)" "controller RSS at the end / peak (MiB)"
  "resize checked (sizes, sha256 of every file, replicas)" "left behind after completion")
for r in "${rows[@]}"; do seen[$r]=1; done

for p in "${path_list[@]}"; do measure_path "$p"; done

echo
printf '%s replicas, %s MiB of random data per volume, 1Gi -> 2Gi, poll interval %s\n\n' \
  "$replicas" "$data_mib" "${poll_interval:-default}"
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
# ratio ROW A B: A's figure over B's (2 decimals; the first number of a cell), "-" if either is
# missing or zero.
ratio() {
  awk -v a="${figure[$1|$2]:-}" -v b="${figure[$1|$3]:-}" \
    'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
if [[ -n ${figure[bytes copied per byte of data|copy]:-} && -n ${figure[bytes copied per byte of data|two-copies]:-} ]]; then
  echo
  printf 'downtime, rebind / two copies: %s (readyReplicas < %s), %s (Ready pods < %s); total time: %s\n' \
    "$(ratio "downtime: readyReplicas < $replicas (s)" copy two-copies)" "$replicas" \
    "$(ratio "downtime: Ready pods < $replicas (s)" copy two-copies)" "$replicas" \
    "$(ratio "total: request -> completed (s)" copy two-copies)"
fi
if [[ -n ${figure[bytes copied per byte of data|copy]:-} && -n ${figure[bytes copied per byte of data|copy-cold]:-} ]]; then
  echo
  printf 'downtime, with the pre-copy / without (copy / copy-cold): %s (readyReplicas < %s), %s (Ready pods < %s); BackingUp: %s; total time: %s\n' \
    "$(ratio "downtime: readyReplicas < $replicas (s)" copy copy-cold)" "$replicas" \
    "$(ratio "downtime: Ready pods < $replicas (s)" copy copy-cold)" "$replicas" \
    "$(ratio "phase BackingUp (s)" copy copy-cold)" \
    "$(ratio "total: request -> completed (s)" copy copy-cold)"
fi
for base in two-copies copy; do
  if [[ -n ${figure[bytes copied per byte of data|rolling]:-} && -n ${figure[bytes copied per byte of data|$base]:-} ]]; then
    echo
    printf 'rolling / %s (all at once): per-replica unavailability %s, time with Ready pods < %s %s, total time %s; Ready pods at least %s (all at once: %s); writers of the replicas not stopped: largest gap %s s (all at once, any replica: %s s)\n' \
      "$base" "$(ratio "per-replica unavailability, longest (s)" rolling "$base")" "$replicas" \
      "$(ratio "downtime: Ready pods < $replicas (s)" rolling "$base")" \
      "$(ratio "total: request -> completed (s)" rolling "$base")" \
      "${figure[Ready pods, minimum during the resize|rolling]:-}" "${figure[Ready pods, minimum during the resize|$base]:-}" \
      "${figure[writers: largest gap of a replica not itself stopped (s)|rolling]:-}" \
      "${figure[writers: largest gap, any replica (s)|$base]:-}"
  fi
done
if [[ -n ${figure[bytes copied per byte of data|copy-template]:-} && -n ${figure[bytes copied per byte of data|vshn]:-} ]]; then
  echo
  printf 'stsresize (copy-template) / vshn, same trigger: API requests per claim %s (GET %s), downtime %s (readyReplicas < %s), %s (Ready pods < %s), total time %s, RSS at the end %s\n' \
    "$(ratio "API requests per resized claim: all" copy-template vshn)" \
    "$(ratio "API requests per resized claim: GET (get, list, watch)" copy-template vshn)" \
    "$(ratio "downtime: readyReplicas < $replicas (s)" copy-template vshn)" "$replicas" \
    "$(ratio "downtime: Ready pods < $replicas (s)" copy-template vshn)" "$replicas" \
    "$(ratio "total: request -> completed (s)" copy-template vshn)" \
    "$(ratio "controller RSS at the end / peak (MiB)" copy-template vshn)"
fi
if [[ -n $peer ]]; then
  printf '\nvshn: vshn/statefulset-resize-controller %s (%s), built with %s\n' "$peer_commit" "$peer_dir" "$(go version | awk '{ print $3 }')"
fi
