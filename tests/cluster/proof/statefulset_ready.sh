#!/usr/bin/env bash
# A StatefulSet of 3 replicas with a sim-fixed volumeClaimTemplate becomes 3/3 Ready, one Bound
# claim per pod, every pod on a simulated node.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

step "create StatefulSet web (3 replicas, OrderedReady, claims on sim-fixed)"
apply_manifest statefulset.yaml NAME=web REPLICAS=3 POD_MANAGEMENT=OrderedReady STORAGE_CLASS=sim-fixed SIZE=1Gi

step "wait for the rollout (pods are created one after the other)"
k rollout status statefulset/web --timeout=180s || fail "statefulset/web did not become ready"
ready=$(jp statefulset/web '{.status.readyReplicas}')
[[ $ready == 3 ]] || fail "readyReplicas is '$ready', want 3"
ok "readyReplicas=3"

step "check each pod and its claim"
for i in 0 1 2; do
  pod=web-$i claim=data-web-$i
  phase=$(jp "pod/$pod" '{.status.phase}')
  readyc=$(jp "pod/$pod" '{.status.conditions[?(@.type=="Ready")].status}')
  node=$(jp "pod/$pod" '{.spec.nodeName}')
  [[ $phase == Running && $readyc == True ]] || fail "pod/$pod phase=$phase Ready=$readyc"
  [[ $node == sim-node-* ]] || fail "pod/$pod runs on '$node', not on a simulated node"
  [[ $(jp "pvc/$claim" '{.status.phase}') == Bound ]] || fail "pvc/$claim is not Bound"
  [[ $(jp "pvc/$claim" '{.spec.storageClassName}') == sim-fixed ]] || fail "pvc/$claim has the wrong class"
  pv=$(jp "pvc/$claim" '{.spec.volumeName}')
  [[ $(kubectl get pv "$pv" -o jsonpath='{.status.phase}') == Bound ]] || fail "pv/$pv is not Bound"
  claimref=$(kubectl get pv "$pv" -o jsonpath='{.spec.claimRef.namespace}/{.spec.claimRef.name}')
  [[ $claimref == "$ns/$claim" ]] || fail "pv/$pv is bound to '$claimref', want $ns/$claim"
  ok "$pod Running+Ready on $node; $claim Bound to $pv"
done
n=$(k get pvc -o name | wc -l)
[[ $n == 3 ]] || fail "$n claims in the namespace, want 3"
ok "exactly 3 claims"
