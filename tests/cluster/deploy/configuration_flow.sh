#!/usr/bin/env bash
# README's configuration flow, as written there: an overlay of one's own over each of
# deploy/overlays/{cluster-scoped,namespace-scoped} setting namespace, image, sync image and
# log level (the kustomization.yaml fields `kustomize edit` writes), rendered with
# `kubectl kustomize`; the output carries every setting, and nothing else changed. Needs
# kubectl (built-in kustomize); the cluster only for `kubectl create --dry-run=client -o json`,
# which turns the rendered YAML into JSON for jq.
#   configuration_flow.sh
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
work=$(mktemp -d)
on_exit "rm -rf '$work'"

# The Deployment passes the settings as `--flag=$(VAR)`; an empty value would leave `--flag=`,
# which the command line parser refuses (or, before another flag, takes that flag as the value).
defaults=$(kubectl kustomize "$repo/deploy/overlays/namespace-scoped" | kubectl create --dry-run=client -o json -f - |
  jq -s '[.[] | select(.kind=="ConfigMap")][0].data')
empty=$(jq -r 'to_entries[] | select(.value == "") | .key' <<<"$defaults")
[[ -z $empty ]] || fail "settings without a default value: $empty"
ok "every default setting has a value: $(jq -c . <<<"$defaults")"

for mode in cluster-scoped namespace-scoped; do
  dir=$work/$mode/my-stsresize
  mkdir -p "$dir"
  # As in README.md, "Configuring" (with ../deploy pointing at the repository's deploy/).
  ln -s "$repo/deploy" "$work/$mode/deploy"
  cat >"$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../deploy/overlays/$mode
namespace: storage-ops
images:
  - name: localhost/stsresize
    newName: registry.example.com/stsresize
    newTag: 0.1.0
configMapGenerator:
  - name: stsresize-config
    behavior: merge
    literals:
      - LOG_LEVEL=debug
      - SYNC_IMAGE=registry.example.com/stsresize-sync:0.1.0
YAML
  out=$(kubectl kustomize "$dir") || fail "$mode: kubectl kustomize failed"
  json=$(kubectl create --dry-run=client -o json -f - <<<"$out" | jq -s '{items: .}') ||
    fail "$mode: the rendered YAML does not parse"
  deployment=$(jq '[.items[] | select(.kind=="Deployment")][0]' <<<"$json")
  configmap=$(jq '[.items[] | select(.kind=="ConfigMap")][0]' <<<"$json")
  [[ $(jq -r '.spec.template.spec.containers[0].image' <<<"$deployment") == registry.example.com/stsresize:0.1.0 ]] ||
    fail "$mode: image not set"
  [[ $(jq -r '.data.LOG_LEVEL' <<<"$configmap") == debug ]] || fail "$mode: LOG_LEVEL not merged"
  [[ $(jq -r '.data.SYNC_IMAGE' <<<"$configmap") == registry.example.com/stsresize-sync:0.1.0 ]] ||
    fail "$mode: SYNC_IMAGE not merged"
  [[ $(jq -r '.data.LOG_FORMAT' <<<"$configmap") == json ]] || fail "$mode: the merge lost LOG_FORMAT"
  # The Deployment refers to the generated name (hash suffix): a change rolls the pods.
  [[ $(jq -r '.spec.template.spec.containers[0].envFrom[0].configMapRef.name' <<<"$deployment") == \
    "$(jq -r '.metadata.name' <<<"$configmap")" ]] || fail "$mode: envFrom does not name the generated ConfigMap"
  # shellcheck disable=SC2016 # Kubernetes' $(VAR) syntax, literally
  for arg in '--log-level=$(LOG_LEVEL)' '--sync-image=$(SYNC_IMAGE)' --leader-elect; do
    jq -e --arg a "$arg" '.spec.template.spec.containers[0].args | index($a)' <<<"$deployment" >/dev/null ||
      fail "$mode: argument $arg missing"
  done
  others=$(jq -r '[.items[] | select(.metadata.namespace != null and .metadata.namespace != "storage-ops") | .kind] | join(",")' <<<"$json")
  [[ -z $others ]] || fail "$mode: objects outside storage-ops: $others"
  if [[ $mode == cluster-scoped ]]; then
    [[ $(jq -r '[.items[] | select(.kind=="Namespace")][0].metadata.name' <<<"$json") == storage-ops ]] ||
      fail "$mode: the Namespace object is not storage-ops"
    [[ $(jq -r '[.items[] | select(.kind=="ClusterRoleBinding")][0].subjects[0].namespace' <<<"$json") == storage-ops ]] ||
      fail "$mode: the ClusterRoleBinding's subject is not in storage-ops"
  else
    jq -e '.spec.template.spec.containers[0].args | index("--namespace=$(POD_NAMESPACE)")' <<<"$deployment" >/dev/null ||
      fail "$mode: --namespace missing"
    kinds=$(jq -r '[.items[] | select(.kind | test("^Cluster|^Namespace$"))] | length' <<<"$json")
    [[ $kinds == 0 ]] || fail "$mode: cluster-level objects rendered"
  fi
  ok "$mode: namespace storage-ops, image, LOG_LEVEL, SYNC_IMAGE rendered"
done
