#!/usr/bin/env bash
# An oversized request is refused once, with a bounded status, and touches nothing. With `stsresize
# run` watching (--log-level debug: every reconcile is a log line), a `stsresize.dev/resize`
# request of ~200 KB whose bogus template name the rejection quotes:
#   ASCII (200,000 'x'): `resize-status: rejected: ...` of at most 1 KiB that still says why
#     (the template "does not exist"), a Warning InvalidResizeRequest on the StatefulSet saying it
#     too; the StatefulSet (uid, replicas, template, no phase), pods, claims (uids, sizes) and data
#     untouched, nothing created; then 10 s of quiet: no reconcile, no write of the StatefulSet, no
#     Event repeated (no retry loop);
#   non-ASCII (100,000 'é'): the same, the Warning included: an Event message cut at 1 KiB in the
#     middle of a character must not be lost (no "event not recorded" in the log);
#   annotations of 256 KiB - 64 bytes in all (the API server's limit is 256 KiB): the status no
#     longer fits; the write refused as Invalid gives the Warning instead, no status, nothing
#     changed, no retry loop.
#   oversized_request.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

readonly annotations_limit=262144 # bytes of every key and value, the API server's TotalAnnotationSizeLimitB

step "StatefulSet web: 2 replicas of 1Gi on sim-expandable with random data, the controller watching"
e2e_statefulset web sim-expandable 2
sts_uid=$(jp statefulset/web '{.metadata.uid}')
pods_before=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}')
claims_before=$(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}:{.spec.resources.requests.storage} {end}')
e2e_start_controller controller.log --log-level debug

untouched() {
  [[ $(jp statefulset/web '{.metadata.uid}') == "$sts_uid" ]] || fail "$1: the StatefulSet was re-created"
  [[ $(jp statefulset/web '{.spec.replicas}') == 2 ]] || fail "$1: replicas changed"
  [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 1Gi ]] ||
    fail "$1: the template changed"
  [[ -z $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') ]] || fail "$1: an operation started"
  [[ $(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid} {end}') == "$pods_before" ]] ||
    fail "$1: pods were restarted"
  [[ $(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}:{.spec.resources.requests.storage} {end}') == "$claims_before" ]] ||
    fail "$1: claims changed"
  [[ -z $(k get jobs,configmaps -o name | grep stsresize || true) ]] || fail "$1: something was created"
  e2e_assert_data_intact web 2
}

status() { jp statefulset/web '{.metadata.annotations.stsresize\.dev/resize-status}'; }
annotation_bytes() {
  k get statefulset web -o json |
    jq '[.metadata.annotations // {} | to_entries[] | (.key | utf8bytelength) + (.value | utf8bytelength)] | add // 0'
}
reconciles() {
  jq -r --arg sts "$ns/web" 'select(.msg == "reconciled" and .statefulset == $sts) | .ts' "$work/controller.log" | wc -l
}
# warnings_quoting TEXT: "reason<TAB>count<TAB>message" of each Warning on web whose message holds TEXT.
warnings_quoting() {
  k get events --field-selector involvedObject.kind=StatefulSet,involvedObject.name=web,type=Warning -o json |
    jq -r --arg text "$1" '.items[] | select(.message | contains($text)) | "\(.reason)\t\(.count)\t\(.message)"'
}

# request_patch OUT CHAR COUNT: a merge patch setting stsresize.dev/resize to a request for data
# 2Gi plus a template named "a" followed by COUNT times CHAR, which does not exist.
request_patch() {
  head -c "$3" /dev/zero | tr '\0' '.' | sed "s/\\./$2/g" >"$work/name"
  jq -n --rawfile name "$work/name" \
    '{metadata: {annotations: {"stsresize.dev/resize":
       ({data: {storage: "2Gi"}, ("a" + ($name | rtrimstr("\n"))): {storage: "2Gi"}} | tojson)}}}' >"$1"
}

# quiet WHAT: for 10 s the controller neither reconciles web nor writes it nor repeats an Event.
quiet() {
  local rv n events
  rv=$(jp statefulset/web '{.metadata.resourceVersion}')
  n=$(reconciles)
  events=$(k get events --field-selector involvedObject.name=web -o jsonpath='{range .items[*]}{.metadata.name}={.count} {end}')
  sleep 10
  [[ $(jp statefulset/web '{.metadata.resourceVersion}') == "$rv" ]] || fail "$1: the StatefulSet was written again within 10 s"
  (($(reconciles) == n)) || fail "$1: $(($(reconciles) - n)) more reconciles of $ns/web within 10 s (a retry loop)"
  [[ $(k get events --field-selector involvedObject.name=web -o jsonpath='{range .items[*]}{.metadata.name}={.count} {end}') == "$events" ]] ||
    fail "$1: Events were given or repeated within 10 s"
  _e2e_any_controller_alive || fail "$1: the controller exited: $(tail -c 2000 "$work/controller.log")"
}

# rejected WHAT MARK: the request quoting MARK was rejected with a bounded status and a Warning,
# both saying why; nothing touched; quiet afterwards.
rejected() {
  local what=$1 mark=$2 deadline=$((SECONDS + 30)) got warning
  until [[ $(status) == rejected:* ]]; do
    ((SECONDS < deadline)) || fail "$what: no rejection in resize-status after 30 s: '$(status | head -c 300)'"
    sleep 0.3
  done
  got=$(status)
  [[ $got == *"$mark"* ]] || fail "$what: the status does not quote the request: ${got:0:300}"
  (($(printf '%s' "$got" | wc -c) <= 1024)) ||
    fail "$what: resize-status is $(printf '%s' "$got" | wc -c) bytes, more than 1 KiB: ...${got: -120}"
  [[ $got == *"does not exist"* ]] || fail "$what: the status does not say why (does not exist): ${got:0:100} ... ${got: -120}"
  deadline=$((SECONDS + 15))
  until [[ -n $(warnings_quoting "$mark") ]]; do
    ((SECONDS < deadline)) || fail "$what: no Warning event quoting the request; log: $(grep -F 'event not recorded' "$work/controller.log" | cut -c1-400)"
    sleep 0.3
  done
  warning=$(warnings_quoting "$mark")
  [[ $(wc -l <<<"$warning") == 1 && $(cut -f1,2 <<<"$warning") == $'InvalidResizeRequest\t1' ]] ||
    fail "$what: want one Warning InvalidResizeRequest given once: $(cut -c1-200 <<<"$warning")"
  [[ $warning == *"does not exist"* ]] || fail "$what: the Warning does not say why (does not exist): ${warning:0:100} ... ${warning: -120}"
  untouched "$what"
  quiet "$what"
  ok "$what → resize-status of $(printf '%s' "$got" | wc -c) bytes: ${got:0:60}... ${got: -60}"
}

step "a request of 200 KB (a bogus template name of 200,000 ASCII characters)"
request_patch "$work/ascii.json" x 200000
k patch statefulset web --type merge --patch-file "$work/ascii.json" >/dev/null
rejected "200 KB ASCII" xxxxxxxxxxxxxxxx

step "a request of 200 KB of two-byte characters (100,000 'é')"
k annotate statefulset web stsresize.dev/resize- stsresize.dev/resize-status- >/dev/null
request_patch "$work/utf8.json" é 100000
k patch statefulset web --type merge --patch-file "$work/utf8.json" >/dev/null
rejected "200 KB UTF-8" éééééééééééééééé
! grep -q '"event not recorded"' "$work/controller.log" ||
  fail "an Event was lost: $(grep -F '"event not recorded"' "$work/controller.log" | cut -c1-400)"

step "annotations of 256 KiB - 64 bytes in all: no room for the status"
k annotate statefulset web stsresize.dev/resize- stsresize.dev/resize-status- >/dev/null
target=$((annotations_limit - 64))
base=$(annotation_bytes)
request_patch "$work/near.json" z 1000
size=$(jq -r '.metadata.annotations["stsresize.dev/resize"] | utf8bytelength' "$work/near.json")
# base + 20 bytes of key + the request = target; the request grows by one byte per character
request_patch "$work/near.json" z $((1000 + target - base - 20 - size))
k patch statefulset web --type merge --patch-file "$work/near.json" >/dev/null
[[ $(annotation_bytes) == "$target" ]] || fail "the annotations hold $(annotation_bytes) bytes, want $target"
note "the API server took the request: annotations of $target bytes"
deadline=$((SECONDS + 30))
until [[ -n $(warnings_quoting zzzzzzzzzzzzzzzz) ]]; do
  ((SECONDS < deadline)) || fail "no Warning event quoting the request in 30 s"
  sleep 0.3
done
warning=$(warnings_quoting zzzzzzzzzzzzzzzz)
[[ $(wc -l <<<"$warning") == 1 && $(cut -f1,2 <<<"$warning") == $'InvalidResizeRequest\t1' ]] ||
  fail "want one Warning InvalidResizeRequest given once: $(cut -c1-200 <<<"$warning")"
[[ $warning == *"does not exist"* ]] || fail "the Warning does not say why (does not exist): ${warning:0:100} ... ${warning: -120}"
[[ -z $(status) ]] || fail "a status was written past the limit: $(status | head -c 200)"
untouched "no room for the status"
quiet "no room for the status"
ok "no status, one Warning InvalidResizeRequest: ${warning:0:110}... ${warning: -110}"
e2e_stop_controller "$controller_pid"
