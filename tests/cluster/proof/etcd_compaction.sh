#!/usr/bin/env bash
# `scripts/cluster compact` compacts etcd at its current revision: etcd refuses reads of older
# revisions at once, while kube-apiserver's watch cache keeps serving watches from an older
# resourceVersion until it restarts; after restart-apiserver the same watch and an exact list
# are 410 Expired. (So a test that needs a forced 410 compacts and then restarts.) Private
# control plane: compacting and restarting the fixture's would disturb the other tests.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
cluster=$repo/scripts/cluster
private=$(basename "$cluster_dir")-compact
on_exit "'$cluster' down --name '$private' >/dev/null 2>&1"

step "bring up private control plane $private (no node simulator)"
pkc=$("$cluster" up --name "$private" --no-nodesim | tail -n 1) || fail "scripts/cluster up --name $private failed"
pdir=$(dirname "$pkc")
pk() { kubectl --kubeconfig "$pkc" "$@"; }
etcd_client_port=
# shellcheck disable=SC1091
source "$pdir/ports"
etcd_range_at() {
  curl -sS --max-time 5 -X POST "http://127.0.0.1:$etcd_client_port/v3/kv/range" \
    -d "{\"key\":\"AA==\",\"revision\":$1}"
}
# WATCH_OR_LIST_PATH: the first line of the apiserver's answer (a watch event or a list/Status).
api_first_line() { pk get --raw "$1" 2>&1 | head -c 400 | tr -d '\n' || true; }

pk -n default create configmap old >/dev/null
old_rv=$(pk -n default get configmap old -o jsonpath='{.metadata.resourceVersion}')
for i in 1 2 3; do pk -n default patch configmap old -p "{\"data\":{\"i\":\"$i\"}}" >/dev/null; done
last_rv=$(pk -n default get configmap old -o jsonpath='{.metadata.resourceVersion}')
etcd_range_at "$old_rv" | grep -q '"header"' || fail "etcd cannot read revision $old_rv before compaction"
ok "configmap old created at resourceVersion $old_rv, patched up to $last_rv"

step "compact"
revision=$("$cluster" compact --name "$private") || fail "scripts/cluster compact failed"
[[ $revision =~ ^[0-9]+$ ]] || fail "compact printed '$revision', not a revision"
((revision >= last_rv)) || fail "compacted at $revision, before the last write $last_rv"
ok "compacted at revision $revision"
answer=$(etcd_range_at "$old_rv")
[[ $answer == *"required revision has been compacted"* ]] || fail "etcd still reads revision $old_rv: $answer"
etcd_range_at "$revision" | grep -q '"header"' || fail "etcd cannot read the compaction revision $revision"
ok "etcd: revision $old_rv is compacted, $revision readable"

watch_path="/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$old_rv&timeoutSeconds=2"
step "the watch cache still serves a watch from $old_rv"
answer=$(api_first_line "$watch_path")
[[ $answer == *'"type":"MODIFIED"'* && $answer != *'"code":410'* ]] ||
  fail "expected the watch cache to replay MODIFIED events from $old_rv, got: $answer"
ok "${answer:0:100}..."

step "after restart-apiserver, the watch and an exact list from $old_rv are 410 Expired"
"$cluster" restart-apiserver --name "$private" >/dev/null || fail "restart-apiserver failed"
answer=$(api_first_line "$watch_path")
[[ $answer == *'"reason":"Expired"'*'"code":410'* ]] || fail "watch from $old_rv: want a 410 Expired event, got: $answer"
ok "watch: $answer"
answer=$(api_first_line "/api/v1/namespaces/default/configmaps?resourceVersion=$old_rv&resourceVersionMatch=Exact")
[[ $answer == *'"reason": "Expired"'* || $answer == *'Expired'* ]] || fail "exact list at $old_rv: want 410 Expired, got: $answer"
ok "exact list: 410 Expired"
