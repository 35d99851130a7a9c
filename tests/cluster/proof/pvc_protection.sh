#!/usr/bin/env bash
# Deleting a claim that a running pod uses waits on the pvc-protection finalizer; the claim goes
# once the pod is gone, then its Delete-policy volume and the volume's host directory go too.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace

step "claim c (sim-fixed) used by pod user"
apply_manifest pvc.yaml NAME=c STORAGE_CLASS=sim-fixed SIZE=1Gi
apply_manifest pod-using-pvc.yaml NAME=user CLAIM=c
k wait --for=condition=Ready pod/user --timeout=120s || fail "pod/user did not become Ready"
wait_field pvc/c '{.status.phase}' Bound 30
pv=$(jp pvc/c '{.spec.volumeName}')
dir=$(pv_dir c)
wait_file "$dir/used-by-user" 30
[[ $(jp pvc/c '{.metadata.finalizers}') == *kubernetes.io/pvc-protection* ]] || fail "pvc/c lacks the pvc-protection finalizer"
ok "pvc/c Bound to $pv ($dir), finalizer kubernetes.io/pvc-protection present"

step "delete the claim while the pod runs"
k delete pvc c --wait=false >/dev/null
sleep 3
[[ -n $(jp pvc/c '{.metadata.deletionTimestamp}') ]] || fail "pvc/c has no deletionTimestamp"
[[ $(jp pvc/c '{.status.phase}') == Bound ]] || fail "pvc/c is no longer Bound"
[[ $(jp pod/user '{.status.phase}') == Running ]] || fail "pod/user stopped running"
[[ -d $dir ]] || fail "$dir vanished while the pod uses it"
ok "pvc/c is Terminating but kept while pod/user runs"

step "delete the pod: the claim goes, then the volume and its directory"
k delete pod user --timeout=60s >/dev/null || fail "pod/user was not deleted"
k wait --for=delete pvc/c --timeout=60s || fail "pvc/c still exists after its pod went"
ok "pvc/c is gone"
kubectl wait --for=delete "pv/$pv" --timeout=60s || fail "pv/$pv was not reclaimed (Delete policy)"
ok "pv/$pv is gone"
deadline=$((SECONDS + 30))
while [[ -e $dir ]]; do
  ((SECONDS < deadline)) || fail "$dir is still on the host 30s after pv/$pv went"
  sleep 0.5
done
ok "$dir removed from the host"
