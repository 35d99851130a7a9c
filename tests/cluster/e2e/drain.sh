#!/usr/bin/env bash
# The scale-down drain on the local control plane, with the StatefulSet Scale-Down Controller's
# interface (statefulsets.kubernetes.io/scaledown-pod-template) and real data moved by a real
# cleanup command. StatefulSet web (Service web): 3 replicas of 1Gi on sim-fixed, Parallel; each
# volume holds 201 random files and a marker file of its own (shard-web-<i>); each replica runs
# a receiver on its pod IP (busybox httpd with a CGI script: a POSTed tar stream is extracted
# under /data/drained/<sender>/ and the sha256 of every file extracted, read back from the
# volume, is the answer). The cleanup template's command shards the files of the volume it
# drains (all but the replica's own id and marker) over the remaining replicas' receivers, whose
# addresses the test writes into the template's env (the simulator has no DNS), adds a
# .drain-info file (its hostname, read from the kernel, and its compatibility markers, read
# through the downward API), checks every answer against its own sha256, and only then deletes
# the files it moved. A watch records every cleanup pod (label scaledown-pod) and the phase
# annotation of the StatefulSet.
#   compat                 the old controller's own example: scale 3 -> 2; a pod web-2 (hostname
#                          web-2, subdomain web, label scaledown-pod=web-2, annotation
#                          statefulsets.kubernetes.io/scaledown-pod-owner=web, restartPolicy
#                          OnFailure, volume data on data-web-2) runs the template and Succeeds;
#                          phase Draining then gone, last-operation Completed; every file of
#                          web-2 is on web-0 or web-1 (each got some) under drained/web-2 with
#                          its sha256, the markers in .drain-info; the cleanup pod, data-web-2
#                          and its volume are gone; data-web-0/1 the same uids with their own
#                          files unchanged, 2/2 Ready; Events on the StatefulSet for the drain;
#                          the journal replays (exit 0) to Completed.
#   scale_up_during_drain  the cleanup command holds (waits for a file nobody writes); scaled
#                          back to 3 while it runs (phase Draining): the cleanup pod is deleted,
#                          every claim the same uid, nothing deleted or moved, web-2 returns
#                          Ready as the StatefulSet's pod with every sha256 as before; the
#                          journal replays (exit 0) and says the drain was cancelled.
#   two_ordinals           scale 3 -> 1: ordinals 2 and 1 drained into web-0; both claims gone,
#                          every file of both on web-0 with its sha256, 1/1 Ready, data-web-0
#                          the same uid with its own files unchanged; the journal replays.
#   failing_cleanup        the cleanup command fails (exit 1) until a file is in the volume it
#                          drains; `stsresize run --drain-restart-limit 1`: scale 3 -> 2 ends
#                          the drain Failed (Warning DrainFailed, label stsresize.dev/failed),
#                          no cleanup pod left, every claim the same uid with every sha256 as
#                          before; then the fault is cleared (the file written), `stsresize
#                          advance --retry` plans a new drain, which moves web-2's files and
#                          deletes data-web-2.
# Every case ends with the controller's /metrics: drains started, ended Completed and Failed, and
# their ordinals drained and cancelled, as the case implies (failing_cleanup: 2 started, the Failed
# one's ordinal counted cancelled, the retry's drained); no resize counted.
#   drain.sh STSRESIZE_BINARY compat|scale_up_during_drain|two_ordinals|failing_cleanup [--stand-in]
# --stand-in: no controller; the script does stsresize's part itself with kubectl (cleanup pod
# built from the template as the interface says, created once the replica is gone; pod then claim
# deleted once it Succeeded; on a scale-up the pod deleted, the claim kept), and the checks of the
# controller's own traces (phase, Events, journal) are left out. It checks this script and the
# cleanup mechanism on a cluster without a controller that drains; STSRESIZE_BINARY is unused.
case_name=${2:?compat, scale_up_during_drain, two_ordinals or failing_cleanup}
case $case_name in
  compat | scale_up_during_drain | two_ordinals | failing_cleanup) ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY compat|scale_up_during_drain|two_ordinals|failing_cleanup [--stand-in]" >&2
    exit 2
    ;;
esac
stand_in=0
case ${3:-} in
  '') ;;
  --stand-in) stand_in=1 ;;
  *)
    echo "usage: $0 STSRESIZE_BINARY compat|scale_up_during_drain|two_ordinals|failing_cleanup [--stand-in]" >&2
    exit 2
    ;;
esac
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

# Last thing before the namespace goes (after every controller is gone): a finalizer a drain
# put on the StatefulSet (the old controller's) would hold the namespace's deletion.
# shellcheck disable=SC2016 # expanded at exit
on_exit 'k patch statefulset web --type merge -p '\''{"metadata":{"finalizers":null}}'\'' >/dev/null 2>&1; true'
e2e_init "${1:?path to the stsresize binary}"
use_namespace

template_key=statefulsets.kubernetes.io/scaledown-pod-template
owner_key=statefulsets.kubernetes.io/scaledown-pod-owner
# The receivers listen on their pod IPs (127.<node>.x.y, on the host's loopback, shared by every
# cluster of the machine): a port of this test's own makes a clash with another test unlikely.
port=$((20000 + RANDOM % 12000))

# The StatefulSet: every replica writes its identity, then serves the receiver. The CGI script
# answers 400 for a sender name that is not a pod name, 500 (the sender retries) if the tar
# cannot be extracted. Each request gets its own temporary file from mktemp, not from "$$":
# Kubernetes turns "$$" in a command into "$", and two cleanup pods sending at once then
# overwrote each other's tar.
manifest() {
  sed "s/@PORT@/$port/g" <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    app: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
  - name: receive
    port: @PORT@
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
        env:
        - name: POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        - name: RECEIVER_PORT
          value: "@PORT@"
        command:
        - sh
        - -c
        - |
          set -e
          echo "$HOSTNAME" > /data/id
          echo "written by $HOSTNAME from inside its pod" > /data/marker
          mkdir -p /tmp/www/cgi-bin
          cat > /tmp/www/cgi-bin/receive <<'CGI'
          #!/bin/sh
          from=${QUERY_STRING#from=}
          case $from in
            '' | -* | *[!a-z0-9-]*)
              printf 'Status: 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nbad sender "%s"\n' "$from"
              exit 0 ;;
          esac
          tmp=$(mktemp /tmp/incoming.XXXXXX)
          head -c "${CONTENT_LENGTH:-0}" > "$tmp"
          mkdir -p "/data/drained/$from"
          if ! err=$(tar -x -C "/data/drained/$from" -f "$tmp" 2>&1); then
            rm -f "$tmp"
            printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n%s\n' "$err"
            exit 0
          fi
          printf 'Content-Type: text/plain\r\n\r\n'
          tar -tf "$tmp" | grep -v '/$' | (cd "/data/drained/$from" && xargs -r -d '\n' sha256sum)
          echo "received $(tar -tf "$tmp" | grep -vc '/$') files from $from" >&2
          rm -f "$tmp"
          CGI
          chmod 755 /tmp/www/cgi-bin/receive
          echo "$HOSTNAME receives drained files on $POD_IP:$RECEIVER_PORT"
          exec busybox httpd -f -p "$POD_IP:$RECEIVER_PORT" -h /tmp/www
        volumeMounts:
        - name: data
          mountPath: /data
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: sim-fixed
      resources:
        requests:
          storage: 1Gi
EOF
}

# The cleanup command (sh, host tools: GNU tar, curl, sha256sum). DRAIN_TARGETS: "name=ip:port"
# words, the remaining replicas' receivers; DRAIN_HOLD: a file name in the drained volume to wait
# for before doing anything.
# shellcheck disable=SC2016 # expanded in the pod
cleanup_script='set -eu
host=$(cat /proc/sys/kernel/hostname)
echo "cleanup of $host: pod $POD_NAME, label scaledown-pod=$SCALEDOWN_POD, owner $SCALEDOWN_OWNER, targets: $DRAIN_TARGETS"
if [ -n "${DRAIN_FAIL_UNLESS:-}" ] && [ ! -e "/data/$DRAIN_FAIL_UNLESS" ]; then
  echo "failing: /data/$DRAIN_FAIL_UNLESS is not there" >&2
  exit 1
fi
if [ -n "${DRAIN_HOLD:-}" ]; then
  echo "holding until /data/$DRAIN_HOLD exists"
  until [ -e "/data/$DRAIN_HOLD" ]; do sleep 1; done
fi
printf "hostname=%s\npod=%s\nscaledown-pod=%s\nowner=%s\n" "$host" "$POD_NAME" "$SCALEDOWN_POD" "$SCALEDOWN_OWNER" >/tmp/.drain-info
cd /data
find . -type f ! -path ./id ! -path ./marker | sort >/tmp/files
set -- $DRAIN_TARGETS
[ $# -gt 0 ] || { echo "no target" >&2; exit 1; }
n=$#
i=0
while IFS= read -r f; do
  printf "%s\n" "$f" >>"/tmp/list.$((i % n))"
  i=$((i + 1))
done </tmp/files
k=-1
for target in "$@"; do
  k=$((k + 1))
  name=${target%%=*}
  addr=${target#*=}
  list=/tmp/list.$k
  touch "$list"
  if [ "$k" -eq 0 ]; then
    tar -cf /tmp/send.tar -C /data -T "$list" -C /tmp .drain-info
    { xargs -r -d "\n" sha256sum <"$list"; (cd /tmp && sha256sum .drain-info); } | sort -k2 >/tmp/want
  else
    [ -s "$list" ] || continue
    tar -cf /tmp/send.tar -C /data -T "$list"
    xargs -r -d "\n" sha256sum <"$list" | sort -k2 >/tmp/want
  fi
  curl -sS --noproxy "*" --fail --retry 10 --retry-connrefused --retry-delay 1 --max-time 60 \
    -H "Content-Type: application/x-tar" --data-binary @/tmp/send.tar \
    "http://$addr/cgi-bin/receive?from=$host" | sort -k2 >/tmp/got
  if ! cmp -s /tmp/want /tmp/got; then
    echo "$name ($addr) did not confirm every file:" >&2
    diff /tmp/want /tmp/got >&2 || true
    exit 1
  fi
  echo "moved $(wc -l <"$list") files to $name ($addr), every sha256 confirmed"
done
xargs -r -d "\n" rm -f </tmp/files
find /data -mindepth 1 -type d -empty -delete
echo "cleanup of $host done"'

# cleanup_template TARGETS [HOLD [FAIL_UNLESS]]: the JSON Pod (metadata + spec) of the
# annotation. No volume: stsresize adds "data", bound to the drained ordinal's claim.
cleanup_template() {
  jq -cn --arg script "$cleanup_script" --arg targets "$1" --arg hold "${2:-}" --arg fail_unless "${3:-}" --arg owner "$owner_key" '{
    metadata: {labels: {app: "web-drain"}},
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: "cleanup",
        image: "docker.io/library/busybox:1.36",
        command: ["sh", "-c", $script],
        env: [
          {name: "DRAIN_TARGETS", value: $targets},
          {name: "DRAIN_HOLD", value: $hold},
          {name: "DRAIN_FAIL_UNLESS", value: $fail_unless},
          {name: "POD_NAME", valueFrom: {fieldRef: {fieldPath: "metadata.name"}}},
          {name: "SCALEDOWN_POD", valueFrom: {fieldRef: {fieldPath: "metadata.labels['\''scaledown-pod'\'']"}}},
          {name: "SCALEDOWN_OWNER", valueFrom: {fieldRef: {fieldPath: ("metadata.annotations['\''" + $owner + "'\'']")}}}
        ],
        volumeMounts: [{name: "data", mountPath: "/data"}]
      }]
    }
  }'
}

# receiver ORDINAL: "web-<i>=<pod IP>:<port>", checked to answer HTTP from the host.
receiver() {
  local ip code
  ip=$(jp "pod/web-$1" '{.status.podIP}')
  [[ -n $ip ]] || fail "pod web-$1 has no IP"
  local deadline=$((SECONDS + 30))
  until code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 5 "http://$ip:$port/") && [[ $code != 000 ]]; do
    ((SECONDS > deadline)) && fail "the receiver of web-$1 does not answer on $ip:$port"
    sleep 0.5
  done
  echo "web-$1=$ip:$port"
}

# own_checksums CLAIM: e2e_checksums without what the volume received from drains.
own_checksums() { e2e_checksums "$1" | grep -v '  \./drained/' || true; }

# assert_moved FROM TARGET...: every file web-FROM had is under drained/web-FROM on exactly one
# TARGET with its sha256 as before, nothing else is there but .drain-info, each TARGET got some;
# .drain-info (on the first TARGET) says the cleanup ran as web-FROM with the markers.
assert_moved() {
  local from=$1 t dir info
  shift
  : >"$work/moved-web-$from"
  for t in "$@"; do
    dir=$(pv_dir "data-web-$t")/drained/web-$from
    [[ -d $dir ]] || fail "web-$t received nothing from web-$from"
    (cd "$dir" && find . -type f ! -name .drain-info -print0 | sort -z | xargs -0 -r sha256sum) >"$work/moved-web-$from-to-$t"
    [[ -s $work/moved-web-$from-to-$t ]] || fail "web-$t received no file from web-$from"
    cat "$work/moved-web-$from-to-$t" >>"$work/moved-web-$from"
  done
  sort -k2 -o "$work/moved-web-$from" "$work/moved-web-$from"
  sort -k2 "$work/before-web-$from" | diff - "$work/moved-web-$from" >"$work/moved-web-$from.diff" ||
    fail "the files of web-$from are not on$(printf ' web-%s' "$@") with their sha256 (< before, > found): $(head -n 20 "$work/moved-web-$from.diff")"
  grep -q "  ./shard-web-$from$" "$work/moved-web-$from" || fail "the marker shard-web-$from was not moved"
  info=$(pv_dir "data-web-$1")/drained/web-$from/.drain-info
  [[ -f $info ]] || fail "no .drain-info from web-$from on web-$1"
  [[ $(<"$info") == "hostname=web-$from"$'\n'"pod=web-$from"$'\n'"scaledown-pod=web-$from"$'\n'"owner=web" ]] ||
    fail "the cleanup of web-$from ran as: $(<"$info")"
  local counts=''
  for t in "$@"; do counts+="${counts:+, }web-$t: $(wc -l <"$work/moved-web-$from-to-$t")"; done
  ok "all $(wc -l <"$work/before-web-$from") files of web-$from moved, same sha256 ($counts); it ran with hostname web-$from, label scaledown-pod=web-$from, owner web"
}

# cleanup_pods: every watch event of a cleanup pod, as compact JSON objects (an object the watch
# is still writing left out).
cleanup_pods() { jq -c '.object' "$work/watch-cleanup-pods" 2>/dev/null || true; }

# wait_cleanup_pod_seen ORDINAL SECS: until the watch saw a cleanup pod web-ORDINAL (it may come
# and go between two polls).
wait_cleanup_pod_seen() {
  local deadline=$((SECONDS + $2))
  until cleanup_pods | jq -e -s --arg n "web-$1" 'any(.[]; .metadata.name == $n)' >/dev/null; do
    if ((SECONDS > deadline)); then
      fail "no cleanup pod web-$1 was created within $2s of the scale-down (phase: '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', claims: $(k get pvc -o name | paste -sd' '))"
    fi
    sleep 0.5
  done
}

# assert_cleanup_pod ORDINAL: the first cleanup pod seen for ORDINAL carries the identity.
assert_cleanup_pod() {
  local o=$1 pod
  pod=$(cleanup_pods | jq -cs --arg n "web-$o" '[.[] | select(.metadata.name == $n)] | first // empty')
  [[ -n $pod ]] || fail "no cleanup pod web-$o was seen"
  jq -e --arg n "web-$o" --arg owner "$owner_key" '
      .metadata.labels["scaledown-pod"] == $n and .metadata.annotations[$owner] == "web"
      and .metadata.labels.app == "web-drain"
      and .spec.hostname == $n and .spec.subdomain == "web" and .spec.restartPolicy == "OnFailure"
      and ([.spec.volumes[] | select(.name == "data")] | length) == 1
      and ([.spec.volumes[] | select(.name == "data")][0].persistentVolumeClaim.claimName == ("data-" + $n))
      and ((.metadata.ownerReferences // []) | map(select(.kind == "StatefulSet")) | length) == 0' <<<"$pod" >/dev/null ||
    fail "cleanup pod web-$o: $(jq -c '{labels: .metadata.labels, annotations: .metadata.annotations, hostname: .spec.hostname, subdomain: .spec.subdomain, restartPolicy: .spec.restartPolicy, volumes: .spec.volumes, ownerReferences: .metadata.ownerReferences}' <<<"$pod")"
  ok "cleanup pod web-$o: hostname web-$o, subdomain web, scaledown-pod=web-$o, owner web, OnFailure, volume data on data-web-$o"
}

# wait_gone OBJECT SECS: until OBJECT is NotFound.
wait_gone() {
  local deadline=$((SECONDS + $2))
  while k get "$1" >/dev/null 2>&1; do
    ((SECONDS > deadline)) && fail "$1 is still there after $2s: $(k get "$1" -o jsonpath='{.metadata.deletionTimestamp} {.metadata.finalizers}')"
    sleep 0.5
  done
}

# is_cleanup_pod ORDINAL: pod web-ORDINAL exists and is a cleanup pod (the owner annotation).
is_cleanup_pod() {
  [[ -n $(k get pod "web-$1" -o jsonpath="{.metadata.annotations.${owner_key//./\\.}}" 2>/dev/null) ]]
}

# The stand-in for stsresize (--stand-in only): what the interface says stsresize does.
# stand_in_pod ORDINAL: the cleanup pod, built from the template.
stand_in_pod() {
  local o=$1 service
  service=$(jp statefulset/web '{.spec.serviceName}')
  jp statefulset/web "{.metadata.annotations.${template_key//./\\.}}" |
    jq --arg n "web-$o" --arg ns "$ns" --arg owner "$owner_key" --arg svc "$service" --arg claim "data-web-$o" '
      .apiVersion = "v1" | .kind = "Pod"
      | .metadata.name = $n | .metadata.namespace = $ns
      | .metadata.labels["scaledown-pod"] = $n
      | .metadata.annotations[$owner] = "web"
      | .spec.hostname = $n | .spec.subdomain = $svc
      | .spec.restartPolicy = (.spec.restartPolicy // "OnFailure")
      | .spec.volumes = ([(.spec.volumes // [])[] | select(.name != "data")]
                         + [{name: "data", persistentVolumeClaim: {claimName: $claim}}])'
}
# stand_in_start ORDINAL: once the scale-down is observed and the replica's pod is gone, the
# cleanup pod is created.
stand_in_start() {
  local o=$1 deadline=$((SECONDS + 120)) st generation observed replicas
  while :; do
    st=$(jp statefulset/web '{.metadata.generation} {.status.observedGeneration} {.status.replicas}')
    read -r generation observed replicas <<<"$st"
    ((${observed:-0} >= generation && ${replicas:-0} <= o)) && ! k get pod "web-$o" >/dev/null 2>&1 && break
    ((SECONDS > deadline)) && fail "stand-in: web-$o did not go"
    sleep 0.5
  done
  stand_in_pod "$o" | k create -f - >/dev/null || fail "stand-in: the cleanup pod web-$o was refused"
  echo "    stand-in: created the cleanup pod web-$o"
}
# stand_in_finish ORDINAL: once the cleanup pod Succeeded, it is deleted, then the claim.
stand_in_finish() {
  local o=$1 deadline=$((SECONDS + 180)) uid
  until [[ $(jp "pod/web-$o" '{.status.phase}' 2>/dev/null) == Succeeded ]]; do
    ((SECONDS > deadline)) && fail "stand-in: the cleanup pod web-$o did not succeed"
    sleep 0.5
  done
  uid=$(jp "pvc/data-web-$o" '{.metadata.uid}')
  k delete pod "web-$o" --wait=true >/dev/null
  k delete pvc "data-web-$o" --wait=false >/dev/null
  echo "    stand-in: deleted the cleanup pod web-$o, then data-web-$o ($uid)"
}
# stand_in_drain ORDINAL...: the whole drain of each ORDINAL, in parallel; returns when all ended.
stand_in_drain() {
  local o pids=() p
  for o in "$@"; do
    (
      stand_in_start "$o"
      stand_in_finish "$o"
    ) &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p" || fail "stand-in: a drain failed"; done
}

# wait_drained NAME SECS: until the drain is over (controller: phase gone, last-operation
# Completed; phases seen in $phases).
wait_drained() {
  if ((stand_in)); then
    wait "$stand_in_pid" || fail "stand-in: the drain failed"
  else
    e2e_wait_completed "$1" "$2"
  fi
}

# assert_phase_seen PHASE: the watch of the StatefulSet saw the phase annotation say PHASE.
assert_phase_seen() {
  grep -qx "$1" "$work/watch-phase" || fail "phase $1 never seen; seen: $(uniq "$work/watch-phase" | paste -sd' ')"
}

# assert_drain_events: Events on the StatefulSet for the drain; for every phase change the
# journal holds (replay -o json, as for a resize), one naming it.
assert_drain_events() {
  local messages transitions t missing=()
  messages=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=web" \
    -o jsonpath='{range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}')
  grep -qiE 'drain|cleanup' <<<"$messages" || fail "no Event on statefulset/web about the drain: $messages"
  transitions=$("$stsresize" replay --journal "$work/journal.db" --namespace "$ns" --statefulset web -o json |
    e2e_journal_transitions | grep -v null) || true
  while read -r t; do
    [[ -z $t ]] && continue
    grep -qF -- "$t" <<<"$messages" || missing+=("$t")
  done <<<"$transitions"
  ((${#missing[@]} == 0)) || fail "no Event for: ${missing[*]}; events: $messages"
  ok "$(wc -l <<<"$messages") Events on statefulset/web, one for each of the $(grep -c . <<<"$transitions") journaled phase changes"
  grep -m 8 -iE 'drain|cleanup' <<<"$messages" | sed 's/^/    /'
}

# --- the StatefulSet, its data, its receivers -------------------------------------------------

step "StatefulSet web: 3 replicas of 1Gi on sim-fixed, each serving a receiver on its pod IP; random data and a marker per volume"
manifest | k apply -f - >/dev/null
k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web did not become ready"
for i in 0 1 2; do
  dir=$(pv_dir "data-web-$i")
  mkdir -p "$dir/random/nested"
  for f in $(seq 1 200); do head -c $((RANDOM % 4096 + 1)) /dev/urandom >"$dir/random/f$f"; done
  head -c 1048576 /dev/urandom >"$dir/random/nested/big.bin"
  echo "shard of web-$i, written before any scale-down" >"$dir/shard-web-$i"
  e2e_checksums "data-web-$i" >"$work/before-web-$i"
done
e2e_claim_uids web 3 >"$work/uids-before"
pv_web_2=$(jp pvc/data-web-2 '{.spec.volumeName}')
pv_web_1=$(jp pvc/data-web-1 '{.spec.volumeName}')
r0=$(receiver 0)
r1=$(receiver 1)
ok "$(wc -l <"$work/before-web-0") files per volume; receivers $r0 $r1 $(receiver 2) answer"

case $case_name in
  compat) template=$(cleanup_template "$r0 $r1") ;;
  scale_up_during_drain) template=$(cleanup_template "$r0 $r1" release-the-drain) ;;
  two_ordinals) template=$(cleanup_template "$r0") ;;
  failing_cleanup) template=$(cleanup_template "$r0 $r1" "" fault-cleared) ;;
esac
k annotate statefulset web "$template_key=$template" >/dev/null
ok "annotated $template_key (targets: $(jq -r '.spec.containers[0].env[] | select(.name == "DRAIN_TARGETS") | .value' <<<"$template"))"

# Every cleanup pod, and every value of the phase annotation, from here on.
watchers=()
k get pods -l scaledown-pod --watch --output-watch-events -o json >>"$work/watch-cleanup-pods" 2>>"$work/watch-errors" &
watchers+=("$!")
k get statefulset web --watch -o jsonpath='{.metadata.annotations.stsresize\.dev/phase}{"\n"}' \
  >>"$work/watch-phase" 2>>"$work/watch-errors" &
watchers+=("$!")
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; done; true'
# The StatefulSet's watch has listed it (a line, the phase empty): the watches are established.
wait_file "$work/watch-phase" 20

if ((stand_in)); then
  step "no controller: this script plays stsresize's part (--stand-in)"
else
  step "start the controller"
  # /metrics on a free port: the drain's figures are checked at the end.
  if [[ $case_name == failing_cleanup ]]; then
    e2e_start_controller controller.log --metrics-bind-address 127.0.0.1:0 --drain-restart-limit 1
  else
    e2e_start_controller controller.log --metrics-bind-address 127.0.0.1:0
  fi
fi

# --- the cases ---------------------------------------------------------------------------------

case $case_name in
  compat)
    step "scale 3 -> 2: web-2's files move to web-0 and web-1"
    k scale statefulset web --replicas=2 >/dev/null
    if ((stand_in)); then
      stand_in_drain 2 &
      stand_in_pid=$!
    fi
    wait_cleanup_pod_seen 2 120
    wait_drained web 300
    ((stand_in)) || ok "completed; phases seen: ${phases[*]}"

    step "the cleanup pod carried web-2's identity and the markers, and moved every file"
    assert_cleanup_pod 2
    cleanup_pods | jq -e -s '[.[] | select(.metadata.name == "web-2") | .status.phase] | index("Succeeded")' >/dev/null ||
      fail "the cleanup pod web-2 was never seen Succeeded"
    ok "the cleanup pod web-2 Succeeded"
    assert_moved 2 0 1

    step "the cleanup pod, data-web-2 and its volume gone; web-0 and web-1 untouched, 2/2 Ready"
    wait_gone pod/web-2 60
    wait_gone pvc/data-web-2 60
    deadline=$((SECONDS + 60))
    while kubectl get pv "$pv_web_2" >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "pv/$pv_web_2 of data-web-2 is still there"
      sleep 0.5
    done
    [[ ! -e $nodesim_dir/volumes/$pv_web_2 ]] || fail "the directory of $pv_web_2 is still there"
    ok "no pod web-2, no claim data-web-2, its volume $pv_web_2 reclaimed"
    e2e_claim_uids web 2 >"$work/uids-after"
    diff -q <(head -n 2 "$work/uids-before") "$work/uids-after" >/dev/null || fail "data-web-0/1 changed: $(diff "$work/uids-before" "$work/uids-after")"
    for i in 0 1; do
      own_checksums "data-web-$i" | diff -q "$work/before-web-$i" - >/dev/null || fail "the own files of web-$i changed"
    done
    k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready"
    [[ $(jp statefulset/web '{.status.readyReplicas}') == 2 ]] || fail "readyReplicas is not 2"
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left: $(k get pods -l scaledown-pod -o name)"
    ok "data-web-0/1 the same uids, their own files' sha256 unchanged; 2/2 Ready; no cleanup pod left"
    ;;

  scale_up_during_drain)
    step "scale 3 -> 2 with a cleanup command that holds"
    k scale statefulset web --replicas=2 >/dev/null
    ((stand_in)) && stand_in_start 2
    deadline=$((SECONDS + 120))
    until is_cleanup_pod 2 && [[ -n $(jp pod/web-2 '{.status.containerStatuses[0].state.running}' 2>/dev/null) ]]; do
      ((SECONDS > deadline)) && fail "no running cleanup pod web-2 within 120s of the scale-down (phase: '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', pods: $(k get pods -o name | paste -sd' '))"
      sleep 0.5
    done
    cleanup_uid=$(jp pod/web-2 '{.metadata.uid}')
    wait_file "$nodesim_dir/pods/${ns}_web-2/cleanup.log" 30
    deadline=$((SECONDS + 30))
    until grep -q "holding until" "$nodesim_dir/pods/${ns}_web-2/cleanup.log"; do
      ((SECONDS > deadline)) && fail "the cleanup command does not hold: $(tail -n 5 "$nodesim_dir/pods/${ns}_web-2/cleanup.log")"
      sleep 0.5
    done
    if ((!stand_in)); then
      e2e_wait_phase web Draining 60
    fi
    ok "cleanup pod web-2 ($cleanup_uid) running and holding$( ((stand_in)) || echo ", phase Draining")"
    assert_cleanup_pod 2

    step "scale back to 3 while it holds: the cleanup pod goes, web-2 returns on its claim"
    k scale statefulset web --replicas=3 >/dev/null
    if ((stand_in)); then
      k delete pod web-2 --wait=true >/dev/null
      echo "    stand-in: deleted the cleanup pod web-2, kept data-web-2"
    fi
    deadline=$((SECONDS + 180))
    until [[ $(jp pod/web-2 '{.metadata.ownerReferences[0].kind}' 2>/dev/null) == StatefulSet &&
      $(jp statefulset/web '{.status.readyReplicas}') == 3 ]]; do
      ((SECONDS > deadline)) && fail "web-2 did not come back as the StatefulSet's pod: $(k get pods -o wide)"
      sleep 0.5
    done
    [[ $(jp pod/web-2 '{.metadata.uid}') != "$cleanup_uid" ]] || fail "web-2 is still the cleanup pod"
    cleanup_pods | jq -e -s --arg uid "$cleanup_uid" '[.[] | select(.metadata.uid == $uid) | .status.phase] | index("Succeeded") | not' >/dev/null ||
      fail "the cleanup pod was seen Succeeded: it was let go"
    if ((!stand_in)); then
      # The drain is over: no phase, or one that says it was cancelled.
      deadline=$((SECONDS + 60))
      while phase=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') && [[ -n $phase && $phase != *ancel* ]]; do
        ((SECONDS > deadline)) && fail "the phase is still $phase"
        sleep 0.5
      done
    fi
    ok "the cleanup pod deleted before it let go; web-2 is the StatefulSet's pod again, 3/3 Ready; phase '${phase:-}'"

    step "nothing deleted, nothing moved, every file as before"
    e2e_claim_uids web 3 >"$work/uids-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "a claim changed: $(diff "$work/uids-before" "$work/uids-after")"
    [[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted"
    e2e_assert_data_intact web 3
    for i in 0 1; do
      [[ ! -e $(pv_dir "data-web-$i")/drained ]] || fail "web-$i received files"
    done
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left"
    ok "every claim the same uid, none being deleted; every file's sha256 as before on all 3; nothing received"
    ;;

  failing_cleanup)
    ((stand_in)) && fail "failing_cleanup has no --stand-in"
    step "scale 3 -> 2 with a cleanup command that fails: the drain ends Failed, everything kept"
    k scale statefulset web --replicas=2 >/dev/null
    e2e_wait_failed web 240
    ok "Failed; phases seen: ${phases[*]}"
    [[ $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') == true ]] || fail "no label stsresize.dev/failed"
    wait_gone pod/web-2 60
    [[ -z $(k get pods -l scaledown-pod -o name) ]] || fail "a cleanup pod is left"
    e2e_claim_uids web 3 >"$work/uids-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "a claim changed: $(diff "$work/uids-before" "$work/uids-after")"
    [[ -z $(k get pvc -o jsonpath='{.items[*].metadata.deletionTimestamp}') ]] || fail "a claim is being deleted"
    e2e_checksums data-web-2 | diff -q "$work/before-web-2" - >/dev/null || fail "the files of web-2 changed"
    warnings=$(e2e_warnings web)
    grep -q '^DrainFailed: ' <<<"$warnings" || fail "no Warning DrainFailed: $warnings"
    ok "label stsresize.dev/failed, no cleanup pod left, every claim the same uid, web-2's files as before; $(grep -m1 '^DrainFailed' <<<"$warnings")"

    step "the fault cleared, a person retries: a new drain moves web-2's files, then data-web-2 goes"
    touch "$(pv_dir data-web-2)/fault-cleared"
    out=$("$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --as e2e-operator --retry 2>&1) ||
      fail "advance --retry exited $?: $out"
    ok "$(head -n 1 <<<"$out")"
    deadline=$((SECONDS + 240))
    while k get pvc data-web-2 >/dev/null 2>&1 || [[ -n $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]]; do
      ((SECONDS > deadline)) && fail "the retried drain did not end: phase '$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')', $(k get pvc,pods -o name | paste -sd' ')"
      sleep 0.5
    done
    [[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}') == *Completed* ]] ||
      fail "last-operation: $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}')"
    [[ -z $(jp statefulset/web '{.metadata.labels.stsresize\.dev/failed}') ]] || fail "the label stsresize.dev/failed is still there"
    # fault-cleared, written by the test, is in the volume: it moves with the rest.
    echo "$(sha256sum </dev/null | cut -d' ' -f1)  ./fault-cleared" >>"$work/before-web-2"
    assert_moved 2 0 1
    ok "data-web-2 gone, last-operation Completed, the label removed"
    ;;

  two_ordinals)
    step "scale 3 -> 1: web-2's and web-1's files move to web-0"
    k scale statefulset web --replicas=1 >/dev/null
    if ((stand_in)); then
      stand_in_drain 2 1 &
      stand_in_pid=$!
    fi
    wait_cleanup_pod_seen 2 120
    wait_cleanup_pod_seen 1 120
    wait_drained web 300
    ((stand_in)) || ok "completed; phases seen: ${phases[*]}"
    # Ordinals drained one after the other may each be an operation of their own.
    deadline=$((SECONDS + 120))
    while k get pvc data-web-1 >/dev/null 2>&1 || k get pvc data-web-2 >/dev/null 2>&1 ||
      [[ -n $(k get pods -l scaledown-pod -o name) ]] ||
      { ((!stand_in)) && [[ -n $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]]; }; do
      ((SECONDS > deadline)) && fail "ordinals 1 and 2 not both drained: $(k get pvc,pods -o name | paste -sd' ')"
      sleep 0.5
    done

    step "both cleanup pods carried their identity; every file on web-0"
    assert_cleanup_pod 2
    assert_cleanup_pod 1
    assert_moved 2 0
    assert_moved 1 0
    overlap=$(cleanup_pods | jq -rs '[.[] | select(.status.phase == "Running") | .metadata.name] | unique | length')
    note "cleanup pods seen Running: $overlap"

    step "claims data-web-1/2 and their volumes gone; web-0 untouched, 1/1 Ready"
    deadline=$((SECONDS + 60))
    while kubectl get pv "$pv_web_1" >/dev/null 2>&1 || kubectl get pv "$pv_web_2" >/dev/null 2>&1; do
      ((SECONDS > deadline)) && fail "the volumes of data-web-1/2 are still there"
      sleep 0.5
    done
    [[ $(e2e_claim_uids web 1) == "$(head -n 1 "$work/uids-before")" ]] || fail "data-web-0 changed"
    own_checksums data-web-0 | diff -q "$work/before-web-0" - >/dev/null || fail "the own files of web-0 changed"
    k rollout status statefulset/web --timeout=120s >/dev/null || fail "statefulset/web is not ready"
    [[ $(jp statefulset/web '{.status.readyReplicas}') == 1 ]] || fail "readyReplicas is not 1"
    ok "no claim data-web-1/2, volumes reclaimed; data-web-0 the same uid, its own files unchanged; 1/1 Ready"
    ;;
esac

# --- the controller's traces --------------------------------------------------------------------

if ((stand_in)); then
  step "--stand-in: the phase, Events and journal checks are left out"
  exit 0
fi

step "the phase annotation, the Events and the journal"
case $case_name in
  failing_cleanup)
    assert_phase_seen StoppingDrain
    ok "phases seen: $(grep . "$work/watch-phase" | uniq | paste -sd' ')"
    ;;
  compat | two_ordinals)
    assert_phase_seen Draining
    [[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}') == *Completed* ]] ||
      fail "last-operation: $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/last-operation}')"
    ok "phases seen: $(grep . "$work/watch-phase" | uniq | paste -sd' '); last-operation Completed"
    ;;
  scale_up_during_drain)
    assert_phase_seen Draining
    ok "phases seen: $(grep . "$work/watch-phase" | uniq | paste -sd' ')"
    ;;
esac
# What /metrics counted: drains started and ended by outcome, and what became of their ordinals.
metric() { e2e_metric controller.log "$1"; }
case $case_name in
  compat) want=(1 1 0 1 0) ;;
  two_ordinals) want=(1 1 0 2 0) ;;
  scale_up_during_drain) want=(1 1 0 0 1) ;;
  failing_cleanup) want=(2 1 1 1 1) ;; # a Failed drain (its ordinal counted cancelled), its retry
esac
got=("$(metric 'stsresize_operations_started_total{kind="drain"}')"
  "$(metric 'stsresize_operations_ended_total{kind="drain",outcome="completed",path="none"}')"
  "$(metric 'stsresize_operations_ended_total{kind="drain",outcome="failed",path="none"}')"
  "$(metric 'stsresize_drain_ordinals_total{result="drained"}')"
  "$(metric 'stsresize_drain_ordinals_total{result="cancelled"}')")
[[ ${got[*]} == "${want[*]}" ]] ||
  fail "/metrics: drains started, completed, failed, ordinals drained, cancelled: ${got[*]}, not ${want[*]}"
[[ $(metric 'stsresize_operations_started_total{kind="resize"}') == 0 ]] ||
  fail "/metrics counts a resize: $(metric 'stsresize_operations_started_total{kind="resize"}')"
ok "/metrics: drains started, completed, failed, ordinals drained, cancelled: ${got[*]}"
e2e_stop_controller "$controller_pid"
assert_drain_events
e2e_replay "$work/journal.db"
case $case_name in
  compat | two_ordinals | failing_cleanup)
    grep -q Completed <<<"$replay" || fail "the journal does not replay to Completed: $replay"
    ok "the journal replays, exit 0, to Completed"
    ;;
  scale_up_during_drain)
    grep -qi cancel <<<"$replay" || fail "the journal does not say the drain was cancelled: $replay"
    ok "the journal replays, exit 0: $(grep -i -m1 cancel <<<"$replay")"
    ;;
esac
