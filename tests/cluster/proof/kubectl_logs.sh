#!/usr/bin/env bash
# `kubectl logs` reads a container's output through kube-apiserver from the node simulator's
# kubelet log API: the whole run, --tail, --limit-bytes, --timestamps, the current and the
# --previous run of a restarted container, and -f of a pod that prints then exits (the stream
# ends with the container).
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

tmp=$(mktemp -d)
on_exit rm -rf "$tmp"

# pod_yaml NAME RESTART_POLICY SCRIPT: a pod that runs `sh -c SCRIPT` (on the host's shell:
# the image is not loaded into the simulator), with an emptyDir at /state.
pod_yaml() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  restartPolicy: $2
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: docker.io/library/busybox:1.36
    command: [sh, -c, $(printf '%s' "$3" | jq -Rs .)]
    volumeMounts:
    - name: state
      mountPath: /state
  volumes:
  - name: state
    emptyDir: {}
EOF
}

# same WHAT FILE EXPECTED: FILE holds exactly EXPECTED (a printf format), byte for byte.
same() {
  # shellcheck disable=SC2059 # the format is the point
  printf "$3" >"$tmp/want"
  cmp -s "$tmp/want" "$2" || fail "$1: got $(od -c "$2" | head -n 8), want $(od -c "$tmp/want" | head -n 8)"
}

step "the nodes publish the log server's port"
port=$(kubectl get node sim-node-0 -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')
[[ $port =~ ^[0-9]+$ && $port -gt 0 ]] || fail "sim-node-0 kubeletEndpoint port is '$port'"
ok "sim-node-0 kubelet endpoint 127.0.0.1:$port"

step "a pod prints numbered lines and a progress line without a final newline"
pod_yaml numbers Never 'for i in 1 2 3 4 5; do echo "line $i"; done; printf "copy 50%%\rcopy 100%%"' |
  k apply -f - >/dev/null
wait_field pod/numbers '{.status.phase}' Succeeded 120
ok "pod/numbers Succeeded"

step "kubectl logs: the whole output"
k logs numbers >"$tmp/all" || fail "kubectl logs numbers failed"
same "kubectl logs" "$tmp/all" 'line 1\nline 2\nline 3\nline 4\nline 5\ncopy 50%%\rcopy 100%%'
ok "6 lines, the last one without a newline and with its '\\r' kept"

step "kubectl logs --tail=2: only '\\n' ends a line, a last line without one counts"
k logs numbers --tail=2 >"$tmp/tail" || fail "kubectl logs --tail=2 failed"
same "kubectl logs --tail=2" "$tmp/tail" 'line 5\ncopy 50%%\rcopy 100%%'
ok "line 5 and the progress line"

step "kubectl logs --limit-bytes=10"
k logs numbers --limit-bytes=10 >"$tmp/limit" || fail "kubectl logs --limit-bytes=10 failed"
same "kubectl logs --limit-bytes=10" "$tmp/limit" 'line 1\nlin'
ok "the first 10 bytes"

step "kubectl logs --timestamps --tail=3"
k logs numbers --timestamps --tail=3 >"$tmp/ts" || fail "kubectl logs --timestamps failed"
ts='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z'
grep -Eq "^$ts line 4\$" "$tmp/ts" && grep -Eq "^$ts line 5\$" "$tmp/ts" ||
  fail "no timestamped lines 4 and 5 in: $(cat "$tmp/ts")"
[[ $(wc -l <"$tmp/ts") == 2 ]] || fail "want 3 lines (the last without newline): $(od -c "$tmp/ts" | head)"
ok "each line prefixed with an RFC3339Nano time"

step "kubectl logs --previous of a container that never restarted is refused"
if k logs numbers --previous >"$tmp/prev" 2>"$tmp/prev.err"; then
  fail "kubectl logs --previous succeeded: $(cat "$tmp/prev")"
fi
grep -q 'previous terminated container "main" in pod "numbers" not found' "$tmp/prev.err" ||
  fail "unexpected error: $(cat "$tmp/prev.err")"
ok "$(cat "$tmp/prev.err")"

step "a restarted container: kubectl logs shows the current run, --previous the one before"
pod_yaml restarts OnFailure \
  'echo run >> /state/runs; n=$(wc -l < /state/runs); echo "run $n: hello"; [ "$n" -ge 2 ] || exit 1' |
  k apply -f - >/dev/null
wait_field pod/restarts '{.status.phase}' Succeeded 120
[[ $(jp pod/restarts '{.status.containerStatuses[0].restartCount}') == 1 ]] ||
  fail "pod/restarts restartCount is not 1"
k logs restarts >"$tmp/cur" || fail "kubectl logs restarts failed"
same "kubectl logs restarts" "$tmp/cur" 'run 2: hello\n'
k logs restarts --previous >"$tmp/prev" || fail "kubectl logs --previous restarts failed"
same "kubectl logs --previous restarts" "$tmp/prev" 'run 1: hello\n'
ok "current run 'run 2: hello', previous run 'run 1: hello'"

step "kubectl logs -f of a pod that prints then exits ends with the container"
pod_yaml ticker Never 'for i in 1 2 3 4 5 6; do echo "tick $i"; sleep 1; done; echo bye' |
  k apply -f - >/dev/null
wait_field pod/ticker '{.status.phase}' Running 120
t0=$SECONDS
rc=0
timeout 60 kubectl -n "$ns" logs -f ticker >"$tmp/follow" || rc=$?
((rc == 0)) || fail "kubectl logs -f exited $rc (124: it did not end with the container)"
same "kubectl logs -f" "$tmp/follow" 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\nbye\n'
((SECONDS - t0 >= 3)) || fail "kubectl logs -f returned after $((SECONDS - t0))s, before the ticks were due"
wait_field pod/ticker '{.status.phase}' Succeeded 30
ok "7 lines streamed in $((SECONDS - t0))s; the stream ended when the container exited"
