#!/usr/bin/env bash
# sim-expandable grows a bound claim from 1Gi to 2Gi (PV and claim status follow); sim-fixed
# refuses the same request with an API error.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

step "storage classes"
[[ $(kubectl get storageclass sim-expandable -o jsonpath='{.allowVolumeExpansion}') == true ]] || fail "sim-expandable does not allow expansion"
[[ $(kubectl get storageclass sim-fixed -o jsonpath='{.allowVolumeExpansion}') != true ]] || fail "sim-fixed allows expansion"
ok "sim-expandable allowVolumeExpansion=true, sim-fixed not"

step "claims grow (sim-expandable) and fixed (sim-fixed), 1Gi each, bound by pods"
apply_manifest pvc.yaml NAME=grow STORAGE_CLASS=sim-expandable SIZE=1Gi
apply_manifest pvc.yaml NAME=fixed STORAGE_CLASS=sim-fixed SIZE=1Gi
apply_manifest pod-using-pvc.yaml NAME=grow-user CLAIM=grow
apply_manifest pod-using-pvc.yaml NAME=fixed-user CLAIM=fixed
k wait --for=condition=Ready pod/grow-user pod/fixed-user --timeout=120s || fail "pods did not become Ready"
wait_field pvc/grow '{.status.capacity.storage}' 1Gi 30
wait_field pvc/fixed '{.status.capacity.storage}' 1Gi 30
ok "both Bound with capacity 1Gi"

step "request 2Gi on grow"
k patch pvc grow --type merge -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' >/dev/null ||
  fail "the API refused to expand pvc/grow"
wait_field pvc/grow '{.status.capacity.storage}' 2Gi 60
pv=$(jp pvc/grow '{.spec.volumeName}')
[[ $(kubectl get pv "$pv" -o jsonpath='{.spec.capacity.storage}') == 2Gi ]] || fail "pv/$pv capacity is not 2Gi"
ok "pvc/grow status.capacity=2Gi, pv/$pv capacity=2Gi"

step "request 2Gi on fixed: the API must refuse"
if out=$(k patch pvc fixed --type merge -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' 2>&1); then
  fail "the API accepted expanding pvc/fixed on sim-fixed: $out"
fi
[[ $out == *"support resize"* || $out == *"must support"* ]] || fail "unexpected error text: $out"
note "$out"
[[ $(jp pvc/fixed '{.spec.resources.requests.storage}') == 1Gi ]] || fail "pvc/fixed request changed"
ok "refused; pvc/fixed still requests 1Gi"
