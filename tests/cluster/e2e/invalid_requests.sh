#!/usr/bin/env bash
# Bad input changes nothing: with `stsresize run` watching, each invalid request on a running
# StatefulSet gets a Warning event (InvalidResizeRequest) and the status annotation
# `stsresize.dev/resize-status: rejected: <why>`, and leaves the StatefulSet (same uid, 3/3
# Ready, templates 1Gi), its pods (same uids) and claims (1Gi) untouched, with nothing created.
# Cases: not JSON, an unparsable quantity, a zero size, a missing StorageClass, a template that
# does not exist, an unknown field (a shrink is no longer one: it is measured, shrink.sh). Then
# a malformed state annotation: a Warning (InvalidState),
# nothing touched. Finally a valid request on the same StatefulSet still works.
#   invalid_requests.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

step "StatefulSet web: 3 replicas of 1Gi on sim-expandable, the controller watching"
e2e_statefulset web sim-expandable 3
sts_uid=$(jp statefulset/web '{.metadata.uid}')
pods_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
claims_before=$(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}:{.spec.resources.requests.storage} {end}')
e2e_start_controller controller.log

untouched() {
  [[ $(jp statefulset/web '{.metadata.uid}') == "$sts_uid" ]] || fail "$1: the StatefulSet was re-created"
  [[ $(jp statefulset/web '{.spec.replicas}') == 3 ]] || fail "$1: replicas changed"
  [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 1Gi ]] ||
    fail "$1: the template changed"
  [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]] || fail "$1: an operation started"
  [[ $(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}') == "$pods_before" ]] ||
    fail "$1: pods were restarted"
  [[ $(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}:{.spec.resources.requests.storage} {end}') == "$claims_before" ]] ||
    fail "$1: claims changed"
  [[ -z $(k get jobs,configmaps -o name | grep stsresize || true) ]] || fail "$1: something was created"
  e2e_assert_data_intact web 3
}

# reject NAME REQUEST WANT: annotate, wait for the rejection, check its text, the event, nothing touched.
reject() {
  local name=$1 request=$2 want=$3 status='' deadline=$((SECONDS + 30)) events
  k annotate --overwrite statefulset web "stsresize.dev/resize=$request" >/dev/null
  while :; do
    status=$(jp statefulset/web '{.metadata.annotations.stsresize\.dev/resize-status}')
    [[ $status == rejected:* && $status == *"$want"* ]] && break
    ((SECONDS < deadline)) || fail "$name: status is '$status', want 'rejected: …$want…'"
    sleep 0.3
  done
  events=$(k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web,reason=InvalidResizeRequest,type=Warning \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  grep -qF -- "$want" <<<"$events" || fail "$name: no Warning InvalidResizeRequest event saying '$want': $events"
  untouched "$name"
  ok "$name → $status"
}

step "invalid requests: rejected with a reason, nothing touched"
reject "not JSON" '{data: 2Gi' "not valid JSON"
reject "bad quantity" '{"data":{"storage":"2GB"}}' "storage"
reject "zero size" '{"data":{"storage":"0"}}' "must not be zero"
reject "missing StorageClass" '{"data":{"storage":"2Gi","storageClassName":"no-such-class"}}' "no-such-class"
reject "no such template" '{"logs":{"storage":"2Gi"}}' "logs"
reject "unknown field" '{"data":{"size":"2Gi"}}' "unknown field"
k annotate statefulset web stsresize.dev/resize- stsresize.dev/resize-status- >/dev/null

step "a malformed state annotation: a Warning, nothing touched"
k annotate statefulset web 'stsresize.dev/state={not json' >/dev/null
deadline=$((SECONDS + 30))
until k get events --field-selector involvedObject.name=web,reason=InvalidState,type=Warning -o name | grep -q .; do
  ((SECONDS < deadline)) || fail "no InvalidState Warning for a malformed state annotation"
  sleep 0.3
done
[[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/state}') == '{not json' ]] ||
  fail "the malformed annotation was overwritten (the controller guessed instead of refusing)"
untouched "malformed state"
ok "InvalidState: $(k get events --field-selector involvedObject.name=web,reason=InvalidState -o jsonpath='{.items[0].message}')"
k annotate statefulset web stsresize.dev/state- >/dev/null

step "a valid request afterwards still works"
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_completed web 180
e2e_assert_resized web 3 2Gi
[[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/resize-status}') ]] || fail "the rejection status is still there"
e2e_stop_controller "$controller_pid"
