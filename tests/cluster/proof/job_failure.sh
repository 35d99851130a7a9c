#!/usr/bin/env bash
# A Job pod failed by fault injection (failNextJobPod) fails its Job with the exit code in the pod
# status; a container's /dev/termination-log shows up as its termination message.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace
on_exit clear_fault failNextJobPod

# terminated FIELD: a field of the Job's pod's terminated container state.
terminated() {
  k get pods -l "batch.kubernetes.io/job-name=$1" -o jsonpath="{.items[0].status.containerStatuses[0].state.terminated.$2}"
}

step "inject failNextJobPod=42, run a Job whose command would succeed"
set_fault failNextJobPod 42
job_yaml injected "true" | k apply -f - >/dev/null
wait_job injected Failed 120
code=$(terminated injected exitCode)
[[ $code == 42 ]] || fail "the pod's exit code is '$code', want 42"
[[ $(k get pods -l batch.kubernetes.io/job-name=injected -o jsonpath='{.items[0].status.phase}') == Failed ]] || fail "pod is not Failed"
ok "job/injected Failed, pod Failed with exitCode 42"

step "a failing command's termination message and exit code"
job_yaml full "printf 'disk full on /data' > /dev/termination-log; exit 7" | k apply -f - >/dev/null
wait_job full Failed 120
code=$(terminated full exitCode)
msg=$(terminated full message)
[[ $code == 7 ]] || fail "exit code '$code', want 7"
[[ $msg == "disk full on /data" ]] || fail "termination message '$msg', want 'disk full on /data'"
ok "job/full Failed, exitCode 7, message '$msg'"

step "the fault was consumed once: the next Job succeeds, with its own message"
job_yaml fine "printf 'copied 3 files' > /dev/termination-log" | k apply -f - >/dev/null
wait_job fine Complete 120 # fails if the fault was not consumed
[[ $(terminated fine exitCode) == 0 ]] || fail "job/fine exit code is not 0"
[[ $(terminated fine message) == "copied 3 files" ]] || fail "job/fine message '$(terminated fine message)'"
ok "job/fine Complete, exitCode 0, message 'copied 3 files'"
