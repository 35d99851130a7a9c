#!/usr/bin/env bash
# `stsresize run` with credentials the real API server refuses says so once per cause, at error
# level, with what to fix, and keeps retrying quietly (the stub-server counterpart is
# StsresizeBinary.RunLogs* in tests/unit/stsresize_binary_test.cc). Each case runs ~15 s with
# --log-level debug, then is stopped with SIGTERM (exit 0):
#   401: the admin kubeconfig with its client certificate replaced by `token: bogus`: one error
#        line for all six informers ("rejected the credentials (401 Unauthorized): check
#        --kubeconfig and --context, ..."), every retry at debug, at least two lists per
#        informer refused with 401 (/metrics), /readyz 503;
#   403: a ServiceAccount with no RBAC (a TokenRequest token): one error line per informer, each
#        naming the list refused and the rule to grant (verbs, resource, apiGroup, a ClusterRole
#        and ClusterRoleBinding), the API server's message naming the ServiceAccount, retries at
#        debug, /readyz 503;
#   the same ServiceAccount with --namespace: five lines asking for a Role and RoleBinding in that
#        namespace (no StorageClass informer); once the Role is granted, one info line per
#        informer saying it is allowed again, and /readyz 200.
#   refused_credentials.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace

# run_as LOG KUBECONFIG [ARGS]: `stsresize run` with these credentials (all namespaces unless ARGS
# say otherwise), debug log in JSON, /metrics and probes on free ports; waits until both listen.
run_as() {
  local log=$1 config=$2 deadline=$((SECONDS + 20))
  shift 2
  "$stsresize" run --kubeconfig "$config" --journal "$work/${log%.log}.db" \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    --log-format json --log-level debug "$@" >"$work/$log" 2>&1 &
  controller_pid=$!
  controllers+=("$controller_pid")
  until [[ $(jq -r 'select(.msg == "listening") | .for' "$work/$log" 2>/dev/null | sort | tr '\n' ' ') == \
    "health-probe-bind-address metrics-bind-address " ]]; do
    ((SECONDS < deadline)) || fail "$log: the endpoints do not listen: $(tail -n 5 "$work/$log")"
    kill -0 "$controller_pid" 2>/dev/null || fail "$log: run exited: $(tail -n 5 "$work/$log")"
    sleep 0.2
  done
}
address() { jq -r --arg for "$2" 'select(.msg == "listening" and .for == $for) | .address' "$work/$1"; }
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://$(address "$1" health-probe-bind-address)/readyz"; }
# requests LOG CODE VERB: API requests answered CODE, from the controller's /metrics.
requests() {
  curl -s "http://$(address "$1" metrics-bind-address)/metrics" |
    awk -v want="stsresize_api_requests_total{code=\"$2\",verb=\"$3\"}" '$1 == want {print $2; found = 1}
      END {if (!found) print 0}'
}
# lines LOG LEVEL [MSG_PREFIX]: the messages logged at LEVEL (starting with MSG_PREFIX).
lines() {
  jq -r --arg level "$2" --arg prefix "${3:-}" \
    'select(.level == $level and (.msg | startswith($prefix))) | .msg' "$work/$1"
}

# kubeconfig_with_token OUT TOKEN: the admin kubeconfig with its user's credentials (client
# certificate and key) replaced by a bearer token.
kubeconfig_with_token() {
  kubectl config view --raw --minify -o json | jq --arg token "$2" '.users[0].user = {token: $token}' >"$1"
  [[ $(jq -r '.users[0].user | keys | join(",")' "$1") == token ]] || fail "$1 holds more than a token"
}

readonly explained401="the API server rejected the credentials (401 Unauthorized): check --kubeconfig and --context, or in a pod its ServiceAccount token; retrying with backoff"
# resource apiGroup of each informer of an unrestricted `run`
informers=("statefulsets apps" "persistentvolumeclaims ''" "jobs batch" "pods ''" "configmaps ''"
  "storageclasses storage.k8s.io")

step "401: a kubeconfig with a bogus bearer token, 15 s"
kubeconfig_with_token "$work/bogus.kubeconfig" bogus
kubectl --kubeconfig "$work/bogus.kubeconfig" get namespaces >/dev/null 2>&1 &&
  fail "the API server accepts the bogus token"
run_as bogus.log "$work/bogus.kubeconfig"
sleep 15
[[ $(readyz bogus.log) == 503 ]] || fail "/readyz answers $(readyz bogus.log) with every list refused"
refused=$(requests bogus.log 401 list)
((refused >= 12)) || fail "only $refused lists refused with 401 in 15 s: the informers did not retry"
e2e_stop_controller "$controller_pid"
errors=$(lines bogus.log error)
[[ $errors == "$explained401" ]] || fail "error lines, want exactly one saying '$explained401': $errors"
[[ $(jq -r 'select(.level == "error") | .error' "$work/bogus.log") == Unauthorized ]] ||
  fail "the error line does not carry error=Unauthorized"
repeats=$(lines bogus.log debug "the API server rejected the credentials" | wc -l)
((repeats >= 6)) || fail "$repeats repeats at debug for $refused refused lists"
[[ -z $(lines bogus.log warning) && -z $(lines bogus.log info "listing and watching") ]] ||
  fail "other lines: $(lines bogus.log warning) $(lines bogus.log info "listing and watching")"
ok "1 error line for $refused lists refused with 401 ($repeats repeats at debug), /readyz 503, exit 0"

step "403: a ServiceAccount with no RBAC at all, 15 s"
k create serviceaccount norights >/dev/null
kubeconfig_with_token "$work/norights.kubeconfig" "$(k create token norights --duration 10m)"
user="system:serviceaccount:$ns:norights"
[[ $(kubectl --kubeconfig "$work/norights.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}') == "$user" ]] ||
  fail "the token does not authenticate as $user"
run_as norights.log "$work/norights.kubeconfig"
sleep 15
[[ $(readyz norights.log) == 503 ]] || fail "/readyz answers $(readyz norights.log) with every list forbidden"
refused=$(requests norights.log 403 list)
((refused >= 12)) || fail "only $refused lists forbidden in 15 s: the informers did not retry"
e2e_stop_controller "$controller_pid"
((${#informers[@]} == $(lines norights.log error | wc -l))) ||
  fail "$(lines norights.log error | wc -l) error lines, want ${#informers[@]}: $(lines norights.log error)"
for informer in "${informers[@]}"; do
  read -r resource group <<<"$informer"
  group=${group//\'/}
  want="listing $resource"
  [[ $resource != storageclasses ]] && want+=" in every namespace"
  want+=" is forbidden (403): grant verbs [\"list\",\"watch\"] on resources [\"$resource\"] in apiGroups [\"$group\"] to these credentials (a ClusterRole and ClusterRoleBinding; README.md, RBAC); retrying with backoff"
  [[ $(lines norights.log error "listing $resource ") == "$want" ]] ||
    fail "no single error line '$want': $(lines norights.log error "listing $resource ")"
  [[ $(jq -r --arg r "$resource" --arg user "$user" \
    'select(.level == "error" and (.msg | startswith("listing " + $r + " "))) |
     .error == "Forbidden" and (.message | contains("User \"" + $user + "\" cannot list resource \"" + $r + "\""))' \
    "$work/norights.log") == true ]] || fail "the $resource line does not carry the API server's message naming $user"
  (($(lines norights.log debug "listing $resource " | wc -l) >= 1)) || fail "no repeat at debug for $resource"
done
ok "${#informers[@]} error lines, one per informer, each naming the rule to grant; $refused lists forbidden; /readyz 503"

step "403 with --namespace: a Role and RoleBinding asked for; granted, each informer says so and /readyz is 200"
run_as scoped.log "$work/norights.kubeconfig" --namespace "$ns"
sleep 6
scoped=("statefulsets apps" "persistentvolumeclaims ''" "jobs batch" "pods ''" "configmaps ''")
(($(lines scoped.log error | wc -l) == ${#scoped[@]})) ||
  fail "$(lines scoped.log error | wc -l) error lines, want ${#scoped[@]}: $(lines scoped.log error)"
for informer in "${scoped[@]}"; do
  read -r resource group <<<"$informer"
  group=${group//\'/}
  want="listing $resource in namespace $ns is forbidden (403): grant verbs [\"list\",\"watch\"] on resources [\"$resource\"] in apiGroups [\"$group\"] to these credentials (a Role and RoleBinding in namespace $ns; README.md, RBAC); retrying with backoff"
  [[ $(lines scoped.log error "listing $resource ") == "$want" ]] ||
    fail "no single error line '$want': $(lines scoped.log error "listing $resource ")"
done
[[ $(readyz scoped.log) == 503 ]] || fail "/readyz answers $(readyz scoped.log) before the Role is granted"
k create role stsresize-informers --verb=list,watch \
  --resource=statefulsets.apps,persistentvolumeclaims,jobs.batch,pods,configmaps >/dev/null
k create rolebinding stsresize-informers --role=stsresize-informers --serviceaccount="$ns:norights" >/dev/null
granted=$SECONDS
until [[ $(readyz scoped.log) == 200 ]]; do
  ((SECONDS - granted < 40)) || fail "/readyz is still $(readyz scoped.log) 40 s after the Role was granted"
  sleep 0.5
done
ready_after=$((SECONDS - granted))
sleep 2
e2e_stop_controller "$controller_pid"
for informer in "${scoped[@]}"; do
  read -r resource _ <<<"$informer"
  (($(lines scoped.log info "listing and watching $resource is allowed again" | wc -l) == 1)) ||
    fail "no single info line saying $resource is allowed again: $(lines scoped.log info "listing and watching")"
done
(($(lines scoped.log error | wc -l) == ${#scoped[@]})) || fail "more error lines after the grant: $(lines scoped.log error)"
ok "${#scoped[@]} error lines naming a Role in $ns; granted: /readyz 200 after ${ready_after}s, one 'allowed again' line each"
