#!/usr/bin/env bash
# The template trigger (the vshn workflow): the user orphan-deletes the StatefulSet and applies
# it again with a bigger volumeClaimTemplates request; `stsresize run` resizes every claim
# smaller than its template, including the claim of an ordinal above the replica count (left by
# an earlier scale-down), on the copy path. Checks sizes, every file's sha256, replicas back to
# the count the user applied, no leftovers, journal consistent.
#   template_trigger.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

step "StatefulSet web: 3 replicas of 1Gi on sim-fixed with data, then scaled down to 2"
e2e_statefulset web sim-fixed 3
k scale statefulset web --replicas=2 >/dev/null
deadline=$((SECONDS + 60))
while k get pod web-2 >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "pod web-2 still there after the scale-down"
  sleep 0.5
done
[[ $(jp pvc/data-web-2 '{.status.phase}') == Bound ]] || fail "the claim of ordinal 2 did not survive the scale-down"
ok "2 replicas; data-web-2 kept, above the replica count"

step "start the controller, then orphan-delete and re-apply the StatefulSet with 2Gi templates"
e2e_start_controller controller.log
uid_before=$(jp statefulset/web '{.metadata.uid}')
k delete statefulset web --cascade=orphan --wait=true >/dev/null
apply_manifest statefulset.yaml NAME=web REPLICAS=2 POD_MANAGEMENT=Parallel STORAGE_CLASS=sim-fixed SIZE=2Gi
[[ $(jp statefulset/web '{.metadata.uid}') != "$uid_before" ]] || fail "the StatefulSet was not re-created"
e2e_wait_completed web 240
ok "completed; phases seen: ${phases[*]}"

step "check: all three claims 2Gi (ordinal 2 included), data intact, 2/2 Ready, nothing left"
[[ $(jp pvc/data-web-2 '{.spec.resources.requests.storage}') == 2Gi ]] || fail "the claim above the replica count was not resized"
[[ $(jp pvc/data-web-2 '{.status.phase}') == Bound ]] || fail "pvc/data-web-2 is not Bound"
e2e_assert_data_intact web 3
ok "data-web-2 resized too; every file's sha256 unchanged on all three claims"
e2e_assert_resized web 2 2Gi
[[ $(jp statefulset/web '{.spec.replicas}') == 2 ]] || fail "replicas is not the 2 the user applied"
e2e_stop_controller "$controller_pid"
replay=$("$stsresize" replay --journal "$work/journal.db" 2>&1) || fail "replay: $replay"
grep -q "Completed" <<<"$replay" || fail "the journal does not replay to Completed: $replay"
ok "journal replays to Completed"
