#!/usr/bin/env bash
# Two `stsresize run --leader-elect` replicas (a and b, each with its own journal); a resize on
# the copy path (its default, rebind variant: one backup Job per claim, no restore Job); the
# leader is killed with SIGKILL while the backup Jobs are in flight; the
# standby takes the Lease and finishes from the StatefulSet's annotations alone: every claim 2Gi
# with every file's sha256 as before, 3/3 Ready, nothing left behind; every copy Job created
# once (the standby adopted the leader's Jobs, same uids) and run once (one pod each, no failed
# attempt); both journals replay consistent (the standby's starts with Resumed: it never saw the
# start of the operation). Prints the handover time.
#
# Why the copy is slowed with podStartDelay: with a few MiB per volume a copy takes well under a
# second, and making it take long enough with data would mean gigabytes per volume on shared
# CI cores. The fault is cluster-wide, but no pod starts between the request and BackingUp (the
# template update orphans and re-adopts the running pods; scale-down only deletes), so it only
# delays the first copy pods: they are scheduled, their claims bound, then they wait Pending for
# 20s before rsync runs — to the controllers an unfinished copy Job, exactly what a takeover
# must adopt rather than duplicate. It is cleared once the standby leads.
#   leader_handover_mid_copy.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
on_exit "clear_fault podStartDelay"
lease=stsresize-e2e-handover lease_duration=6 renew_deadline=4 retry_period=1 copy_delay=20

# start_replica NAME: a controller whose Lease identity and journal are NAME.
declare -A pid_of
start_replica() {
  e2e_start_controller "$1.log" --journal "$work/$1.db" --leader-elect \
    --leader-elect-namespace "$ns" --leader-elect-id "$lease" --leader-elect-identity "$1" \
    --leader-elect-lease-duration "${lease_duration}s" --leader-elect-renew-deadline "${renew_deadline}s" \
    --leader-elect-retry-period "${retry_period}s"
  pid_of[$1]=$controller_pid
}
# wait_holder WANT SECS
wait_holder() {
  local deadline=$((SECONDS + $2))
  until [[ $(e2e_lease_holder "$lease") == "$1" ]]; do
    ((SECONDS < deadline)) || fail "the Lease holder is '$(e2e_lease_holder "$lease")', not '$1', after $2s"
    sleep 0.1
  done
}
# Every copy Job and copy pod seen, with uids: "Job NAME UID FAILED" and "Pod NAME UID JOB".
copy_objects() {
  k get jobs,pods -l app.kubernetes.io/managed-by=stsresize -o jsonpath='{range .items[*]}{.kind} {.metadata.name} {.metadata.uid} {.status.failed}{.metadata.ownerReferences[0].name}{"\n"}{end}'
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
# The whole copy with the replicas stopped: a pre-copy would leave BackingUp only the changes,
# over before a kill could land in it.
k annotate statefulset web stsresize.dev/pre-copy=false >/dev/null
ok "$(wc -l <"$work/before-web-0") files per volume, checksums taken on the host; no pre-copy"

step "replicas a and b with --leader-elect (lease ${lease_duration}s, renew ${renew_deadline}s, retry ${retry_period}s)"
start_replica a
wait_holder a 30
start_replica b
sleep 2
[[ $(e2e_lease_holder "$lease") == a ]] || fail "the Lease moved to '$(e2e_lease_holder "$lease")'"
ok "a leads, b stands by"

step "request 2Gi with copy pods delayed ${copy_delay}s (podStartDelay)"
set_fault podStartDelay "${copy_delay}s"
(while :; do copy_objects 2>/dev/null || true; sleep 0.3; done) >"$work/objects" &
recorder=$!
on_exit "kill $recorder 2>/dev/null || true"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_phase web BackingUp 120
deadline=$((SECONDS + 30))
until [[ -n $(k get jobs -l stsresize.dev/purpose=backup -o jsonpath='{.items[?(@.status.active>0)].metadata.name}') ]]; do
  ((SECONDS < deadline)) || fail "no backup Job became active within 30s"
  sleep 0.2
done
ok "BackingUp, backup Job(s) active: $(k get jobs -l stsresize.dev/purpose=backup -o name | tr '\n' ' ')"

step "kill -9 the leader mid-copy"
leader=$(e2e_lease_holder "$lease")
[[ $leader == a || $leader == b ]] || fail "no replica holds the Lease: '$leader'"
follower=a
[[ $leader == a ]] && follower=b
k get jobs -l stsresize.dev/purpose=backup -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}' >"$work/jobs-at-kill"
kill -KILL "${pid_of[$leader]}"
t_kill=$(date +%s.%N)
wait "${pid_of[$leader]}" 2>/dev/null || true
wait_holder "$follower" $((lease_duration + retry_period + 10))
handover=$(echo "$(date +%s.%N) - $t_kill" | bc -l | xargs printf '%.1f')
unfinished=$(k get jobs -l stsresize.dev/purpose=backup -o jsonpath='{range .items[*]}{.metadata.name} {.status.succeeded}{"\n"}{end}' |
  awk '$2 != 1 {printf "%s ", $1}')
[[ -n $unfinished ]] || fail "every backup Job had finished by the handover: not a mid-copy takeover"
clear_fault podStartDelay
ok "$leader killed; $follower holds the Lease after ${handover}s (lease ${lease_duration}s); unfinished backup Jobs then: $unfinished"
note "HANDOVER_SECONDS=$handover"

step "$follower finishes the resize"
t0=$SECONDS
e2e_wait_completed web 180
ok "completed $((SECONDS - t0))s after the handover; phases seen: ${phases[*]}"
kill "$recorder" 2>/dev/null || true
wait "$recorder" 2>/dev/null || true
e2e_assert_resized web 3 2Gi

step "each copy Job created once (the follower adopted the leader's) and run once"
while read -r job uid; do
  grep -q "^Job $job $uid" "$work/objects" || fail "job/$job ($uid) was never seen"
  [[ $(awk -v j="$job" '$1 == "Job" && $2 == j {print $3}' "$work/objects" | sort -u | wc -l) == 1 ]] ||
    fail "job/$job was created again after the handover"
done <"$work/jobs-at-kill"
ok "the $(wc -l <"$work/jobs-at-kill") backup Job(s) running at the kill kept their uids to the end"
jobs_seen=$(awk '$1 == "Job" {print $2}' "$work/objects" | sort -u)
for job in $jobs_seen; do
  uids=$(awk -v j="$job" '$1 == "Job" && $2 == j {print $3}' "$work/objects" | sort -u | wc -l)
  ((uids == 1)) || fail "job/$job had $uids incarnations"
  pods=$(awk -v j="$job" '$1 == "Pod" && $4 == j {print $3}' "$work/objects" | sort -u | wc -l)
  ((pods == 1)) || fail "job/$job ran $pods pods, want 1"
  failed=$(awk -v j="$job" '$1 == "Job" && $2 == j && $4 != "" {print $4}' "$work/objects" | sort -u)
  [[ -z $failed ]] || fail "job/$job had failed attempts: $failed"
done
# The rebind path (the default) copies each claim once: a backup Job per claim, no restore Job.
if [[ $(wc -w <<<"$jobs_seen") != 3 ]] || grep -qv -- '-stsresize-backup$' <<<"$jobs_seen"; then
  fail "expected 3 backup Jobs and no other, saw: $jobs_seen"
fi
ok "3 backup Jobs (the rebind path copies once), each one uid and one pod, no failed attempt"

step "both journals replay consistent"
e2e_stop_controller "${pid_of[$follower]}"
e2e_replay "$work/$follower.db"
grep -q "Completed" <<<"$replay" || fail "$follower's journal does not replay to Completed: $replay"
# Columns: TIME OPERATION SEQ PHASE EVENT DETAILS.
first=$(awk 'NR == 2 {print $4, $5}' <<<"$replay")
[[ $first == "BackingUp Resumed" ]] || fail "$follower's journal does not start with Resumed in BackingUp: $replay"
if grep -q "OperationStarted" <<<"$replay"; then fail "$follower's journal has the start it never saw: $replay"; fi
for job in $unfinished; do
  claim=${job%-stsresize-backup}
  grep -q "BackupVerified.*$claim" <<<"$replay" || fail "$follower did not verify the backup of $claim: $replay"
done
ok "$follower's journal: Resumed in BackingUp, the in-flight backups verified by $follower, Completed (exit 0)"
note "$(tail -n 1 <<<"$replay")"
e2e_replay "$work/$leader.db"
grep -q "OperationStarted" <<<"$replay" || fail "$leader's journal lacks the start: $replay"
grep -q "Planned.*Rebind path" <<<"$replay" || fail "$leader's journal does not plan the rebind path: $replay"
ok "$leader's journal (killed in BackingUp) is consistent too (exit 0)"
note "$(tail -n 1 <<<"$replay")"
