#!/usr/bin/env bash
# Two `stsresize run --leader-elect` replicas on the fixture cluster (each with its own probe
# port and journal): one holds the Lease; kill -9 of the leader hands the Lease to the standby
# within lease duration + 3 retry periods; SIGTERM of a leader releases the Lease, so a standby
# takes over within half the lease duration (unreleased, it would need a whole one).
#   leader_election.sh STSRESIZE_BINARY
stsresize=${1:?path to the stsresize binary}
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"

lease_duration=12 renew_deadline=8 retry_period=1 slack=3
lease="stsresize-leader-test"
work=$(mktemp -d)
declare -A pid_of
on_exit "rm -rf '$work'"
# shellcheck disable=SC2016 # expanded at exit, when the replicas are known
on_exit 'for r in "${!pid_of[@]}"; do kill -KILL "${pid_of[$r]}" 2>/dev/null || true; done'
use_namespace

# Each replica binds its probes to port 0 and logs the port it got: a port picked in advance
# could be taken meanwhile, or be the local end of one of the cluster's own connections.
declare -A health_port
# start REPLICA: a replica named REPLICA (its Lease identity), watching only $ns.
start() {
  local replica=$1
  "$stsresize" run --kubeconfig "$KUBECONFIG" --namespace "$ns" \
    --leader-elect --leader-elect-namespace "$ns" --leader-elect-id "$lease" \
    --leader-elect-identity "$replica" \
    --leader-elect-lease-duration "${lease_duration}s" --leader-elect-renew-deadline "${renew_deadline}s" \
    --leader-elect-retry-period "${retry_period}s" \
    --metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 --log-format json \
    --journal "$work/$replica.db" >"$work/$replica.log" 2>&1 &
  pid_of[$replica]=$!
  local port=''
  for _ in $(seq 1 100); do
    port=$(jq -r 'select(.msg == "listening" and .for == "health-probe-bind-address")
                  | .address | sub(".*:"; "")' "$work/$replica.log" 2>/dev/null | head -n 1 || true)
    [[ -n $port ]] && break
    kill -0 "${pid_of[$replica]}" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $port ]] || fail "replica $replica logged no probe port"
  health_port[$replica]=$port
}
holder() { k get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${health_port[$1]}/readyz") == 200 ]]; }
# Every replica's log, the dead ones' too, leads a failure's diagnostics.
extra_diagnostics() {
  local log
  for log in "$work"/*.log; do
    [[ -e $log ]] || continue
    echo "--- replica $(basename "$log" .log), last lines of its log"
    tail -n 25 "$log"
  done
  echo "--- lease: $(k get lease "$lease" -o jsonpath='{.spec}' 2>&1 || true)"
}
now_ms() { date +%s%3N; }
# wait_holder WANT TIMEOUT_S: until the Lease names WANT; prints the milliseconds it took.
wait_holder() {
  local want=$1 timeout_ms=$(($2 * 1000)) t0
  t0=$(now_ms)
  until [[ $(holder) == "$want" ]]; do
    (($(now_ms) - t0 > timeout_ms)) && fail "the Lease holder is '$(holder)', not '$want', after $2s"
    sleep 0.1
  done
  echo $(($(now_ms) - t0))
}
seconds() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

step "start replicas a and b"
start a
wait_holder a 30 >/dev/null
start b
for r in a b; do
  for _ in $(seq 1 100); do ready "$r" && break; sleep 0.2; done
  ready "$r" || fail "replica $r is not ready"
done
ok "a holds the Lease; both replicas are ready (the standby too)"

# A standby looks at the Lease once per retry period (+ up to 20% jitter), so it sees the last
# renewal up to one attempt late and takes over at the first attempt after the lease duration.
step "kill -9 the leader a: b takes over within lease duration + 3 retry periods"
bound=$((lease_duration + 3 * retry_period))
kill -KILL "${pid_of[a]}"
unset 'pid_of[a]'
took=$(wait_holder b $((bound + slack)))
note "b took over after $(seconds "$took")s (bound ${bound}s + ${slack}s slack)"
((took <= (bound + slack) * 1000)) || fail "took $(seconds "$took")s"
ok "handed over in $(seconds "$took")s"

# Unreleased, the Lease could not move before a whole lease duration after b's last renewal;
# released, the standby takes it at its next attempt.
step "SIGTERM of the leader b releases the Lease: standby c takes over well within the lease duration"
start c
for _ in $(seq 1 100); do ready c && break; sleep 0.2; done
ready c || fail "replica c is not ready"
[[ $(holder) == b ]] || fail "the Lease moved to '$(holder)' before b was stopped"
kill -TERM "${pid_of[b]}"
took=$(wait_holder c $((lease_duration / 2)))
note "c took over $(seconds "$took")s after SIGTERM of b (lease duration ${lease_duration}s)"
for _ in $(seq 1 100); do kill -0 "${pid_of[b]}" 2>/dev/null || break; sleep 0.1; done
kill -0 "${pid_of[b]}" 2>/dev/null && fail "b still runs 10s after SIGTERM"
wait "${pid_of[b]}" && rc=0 || rc=$?
unset 'pid_of[b]'
((rc == 0)) || fail "b exited $rc after SIGTERM, want 0"
ok "released on SIGTERM (b exited 0); c leads after $(seconds "$took")s"
