#!/usr/bin/env bash
# Two `stsresize run --leader-elect` replicas on the fixture cluster (each with its own metrics
# and health ports and journal): one holds the Lease; kill -9 of the leader hands the Lease to
# the standby within lease duration + retry period; SIGTERM of a leader releases the Lease, so a
# standby takes over at once (well before the lease duration).
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

free_port() {
  local port
  while :; do
    port=$((33000 + RANDOM % 20000))
    ss -Hltn "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}

declare -A health_port
# start REPLICA: a replica named REPLICA (its Lease identity), watching only $ns.
start() {
  local replica=$1 metrics
  metrics=$(free_port) health_port[$replica]=$(free_port)
  "$stsresize" run --kubeconfig "$KUBECONFIG" --namespace "$ns" \
    --leader-elect --leader-elect-namespace "$ns" --leader-elect-id "$lease" \
    --leader-elect-identity "$replica" \
    --leader-elect-lease-duration "${lease_duration}s" --leader-elect-renew-deadline "${renew_deadline}s" \
    --leader-elect-retry-period "${retry_period}s" \
    --metrics-bind-address "127.0.0.1:$metrics" --health-probe-bind-address "127.0.0.1:${health_port[$replica]}" \
    --journal "$work/$replica.db" >"$work/$replica.log" 2>&1 &
  pid_of[$replica]=$!
}
holder() { k get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${health_port[$1]}/readyz") == 200 ]]; }
# wait_holder WANT TIMEOUT_S: until the Lease names WANT; prints the seconds it took.
wait_holder() {
  local want=$1 timeout=$2 t0 now
  t0=$(date +%s.%N)
  while :; do
    [[ $(holder) == "$want" ]] && break
    now=$(date +%s.%N)
    if (($(echo "$now - $t0 > $timeout" | bc -l))); then
      for r in "${!pid_of[@]}"; do echo "--- $r (tail)"; tail -n 15 "$work/$r.log"; done
      fail "the Lease holder is '$(holder)', not '$want', after ${timeout}s"
    fi
    sleep 0.1
  done
  echo "$(date +%s.%N) - $t0" | bc -l | xargs printf '%.1f'
}

step "start replicas a and b"
start a
wait_holder a 30 >/dev/null
start b
for r in a b; do
  for _ in $(seq 1 100); do ready "$r" && break; sleep 0.2; done
  ready "$r" || fail "replica $r is not ready: $(tail -n 20 "$work/$r.log")"
done
ok "a holds the Lease; both replicas are ready (the standby too)"

step "kill -9 the leader a: b takes over within lease duration + retry period"
bound=$((lease_duration + retry_period))
kill -KILL "${pid_of[a]}"
unset 'pid_of[a]'
took=$(wait_holder b $((bound + slack)))
note "b took over after ${took}s (bound ${bound}s + ${slack}s slack)"
(($(echo "$took <= $bound + $slack" | bc -l))) || fail "took ${took}s"
ok "handed over in ${took}s"

step "SIGTERM of the leader b releases the Lease: standby c takes over at once"
start c
for _ in $(seq 1 100); do ready c && break; sleep 0.2; done
ready c || fail "replica c is not ready"
[[ $(holder) == b ]] || fail "the Lease moved to '$(holder)' before b was stopped"
kill -TERM "${pid_of[b]}"
took=$(wait_holder c $((retry_period + slack)))
note "c took over ${took}s after SIGTERM of b (lease duration ${lease_duration}s)"
for _ in $(seq 1 100); do kill -0 "${pid_of[b]}" 2>/dev/null || break; sleep 0.1; done
kill -0 "${pid_of[b]}" 2>/dev/null && fail "b still runs 10s after SIGTERM"
wait "${pid_of[b]}" && rc=0 || rc=$?
unset 'pid_of[b]'
((rc == 0)) || fail "b exited $rc after SIGTERM, want 0"
ok "released on SIGTERM (b exited 0); c leads after ${took}s"
