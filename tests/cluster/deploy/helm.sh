#!/usr/bin/env bash
# deploy/chart installed with the real helm (tests/tools/helm.sh), running the images that
# scripts/images built, on a private control plane (its node simulator runs pods from the
# images loaded into it, and no other test's pod may run from them):
#   1. `scripts/cluster load-image` of both docker-archives;
#   2. scope=cluster: `helm install --wait` into a namespace of its own, the controller's image
#      and the sync image from the archives, one replica on free ports (nodesim's pods share the
#      host's network); what the release's ServiceAccount may and may not do (kubectl auth can-i
#      with a TokenRequest token); the admission fence's binding names that ServiceAccount;
#   3. `helm upgrade` of a value (logLevel): the ConfigMap changes, its checksum rolls the pod;
#   4. the Deployment's pod runs stsresize from its image (event Pulled, imageID the image's
#      digest, its /metrics answers), takes the Lease, and resizes a 3-replica StatefulSet on
#      sim-fixed as the release's ServiceAccount: the copy Jobs run from the sync image (rsync,
#      the checksums and the copy script's shell are the image's), every file's sha256 unchanged;
#   5. `helm uninstall`: nothing of the release is left, the fence's policies included;
#   6. scope=namespace under a release name without "stsresize" (names <release>-stsresize):
#      no cluster-level object in the release, the Role's rights here and nothing cluster-wide;
#      uninstalled.
#   helm.sh STSRESIZE_BINARY IMAGES_DIR
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR/../e2e source=../e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

images=$(realpath "${2:?the directory scripts/images wrote}")
for archive in stsresize.tar stsresize-sync.tar digests; do
  [[ -f $images/$archive ]] || fail "no $images/$archive: run scripts/images --out $images"
done
controller_image=$(awk '$1 ~ "^localhost/stsresize:" { print $1 }' "$images/digests")
controller_digest=$(awk '$1 ~ "^localhost/stsresize:" { print $2 }' "$images/digests")
sync_image=$(awk '$1 ~ "^localhost/stsresize-sync:" { print $1 }' "$images/digests")
cluster=$repo/scripts/cluster
private=$(basename "$cluster_dir")-helm
# The namespace goes with the control plane: `ns=` spares the exit a delete that cannot answer.
on_exit "'$cluster' down --name '$private' >/dev/null 2>&1; ns="
e2e_init "${1:?path to the stsresize binary}"
step "bring up private cluster $private; load $controller_image and $sync_image"
KUBECONFIG=$("$cluster" up --name "$private" | tail -n 1) || fail "scripts/cluster up --name $private failed"
export KUBECONFIG
cluster_dir=$(dirname "$KUBECONFIG")
nodesim_dir=$cluster_dir/nodesim
"$cluster" load-image --name "$private" "$images/stsresize.tar" "$images/stsresize-sync.tar" ||
  fail "scripts/cluster load-image failed"
use_namespace
helm=$("$repo/tests/tools/helm.sh")
chart=$repo/deploy/chart
system_ns=$ns-sys
release=${ns}-stsresize # names every object: it says stsresize already
lease=stsresize-$ns
h() { "$helm" "$@" 2> >(grep -v 'msg="found symbolic link in path' >&2 || true); }

step "helm install $release (scope=cluster) into $system_ns"
on_exit "'$helm' uninstall '$release' -n '$system_ns' --ignore-not-found >/dev/null 2>&1; kubectl delete namespace '$system_ns' --wait=false >/dev/null 2>&1"
read -r metrics_port probe_port < <(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
[[ $controller_image == "localhost/stsresize:$(awk '$1 == "appVersion:" { gsub(/"/, "", $2); print $2 }' "$chart/Chart.yaml")" ]] ||
  fail "the chart's default image is not $controller_image: its appVersion and the binary's version differ"
out=$(h install "$release" "$chart" -n "$system_ns" --create-namespace --wait --timeout 180s \
  --set "leaderElection.id=$lease,syncImage=$sync_image,replicaCount=1" \
  --set "metrics.port=$metrics_port,healthProbePort=$probe_port" \
  --set-json "extraArgs=[\"--namespace=$ns\",\"--poll-interval=1s\"]" 2>&1) || fail "helm install failed: $out"
[[ $(h status "$release" -n "$system_ns" -o json | jq -r .info.status) == deployed ]] || fail "the release is not deployed"
kubectl -n "$system_ns" rollout status "deployment/$release" --timeout=60s >/dev/null || fail "the Deployment did not roll out"
[[ $(kubectl get clusterrolebinding "$release" -o jsonpath='{.subjects[0].namespace}/{.subjects[0].name}') == "$system_ns/$release" ]] ||
  fail "the ClusterRoleBinding does not name $system_ns/$release"
param=$(kubectl get validatingadmissionpolicybinding "$release-fence" -o jsonpath='{.spec.paramRef.namespace}/{.spec.paramRef.name} {.spec.policyName}')
[[ $param == "$system_ns/$release $release-fence" ]] || fail "the fence's binding says '$param'"
kubectl get validatingadmissionpolicy "$release-fence" "$release-fence-scale" >/dev/null || fail "the fence's policies are missing"
ok "deployed; ClusterRole + binding to $system_ns/$release; fence bound to $param"

deploy_sa_kubeconfig "$release" "$system_ns" "$work/sa.kubeconfig"
can() { kubectl --kubeconfig "$work/sa.kubeconfig" auth can-i "$@" 2>/dev/null || true; }
for allowed in "list statefulsets.apps -A" "delete persistentvolumeclaims -n $ns" "patch persistentvolumes" \
  "create jobs.batch -n $ns" "create pods/eviction -n $ns" "update leases.coordination.k8s.io -n $system_ns"; do
  # shellcheck disable=SC2086 # words on purpose
  [[ $(can $allowed) == yes ]] || fail "the ServiceAccount may not: $allowed"
done
for refused in "get secrets -n $ns" "delete persistentvolumes" "update leases.coordination.k8s.io -n $ns"; do
  # shellcheck disable=SC2086
  [[ $(can $refused) == no ]] || fail "the ServiceAccount may, but should not: $refused"
done
ok "as $system_ns/$release: the ClusterRole's verbs, leases only in $system_ns, no secrets, no PV delete"

step "helm upgrade --set logLevel=debug: the ConfigMap changes, its checksum rolls the pods"
checksum() { kubectl -n "$system_ns" get deployment "$release" -o jsonpath='{.spec.template.metadata.annotations.checksum/config}'; }
before=$(checksum)
out=$(h upgrade "$release" "$chart" -n "$system_ns" --reuse-values --set logLevel=debug --wait --timeout 180s 2>&1) ||
  fail "helm upgrade failed: $out"
[[ $(kubectl -n "$system_ns" get configmap "$release-config" -o jsonpath='{.data.LOG_LEVEL}') == debug ]] || fail "LOG_LEVEL is not debug"
[[ $(checksum) != "$before" ]] || fail "the pod template's checksum did not change"
kubectl -n "$system_ns" rollout status "deployment/$release" --timeout=120s >/dev/null || fail "the upgrade did not roll out"
ok "revision $(h status "$release" -n "$system_ns" -o json | jq -r .version); LOG_LEVEL=debug; rolled out"

step "the Deployment's pod runs stsresize from $controller_image: resize db (sim-fixed) to 2Gi"
e2e_statefulset db sim-fixed 3
deadline=$((SECONDS + 60))
until holder=$(kubectl -n "$system_ns" get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) &&
  [[ $holder == "$release-"* ]] && kubectl -n "$system_ns" get pod "$holder" >/dev/null 2>&1; do
  ((SECONDS > deadline)) && fail "no pod of the Deployment took Lease $lease in 60s"
  sleep 0.5
done
[[ $(kubectl -n "$system_ns" get pod "$holder" -o jsonpath='{.status.containerStatuses[0].imageID}') == "$controller_digest" ]] ||
  fail "pod $holder's imageID is not $controller_digest: $(kubectl -n "$system_ns" get pod "$holder" -o jsonpath='{.status.containerStatuses}')"
kubectl -n "$system_ns" get events --field-selector "involvedObject.name=$holder,reason=Pulled" -o jsonpath='{.items[*].message}' |
  grep -qF "\"$controller_image\" already present" || fail "no Pulled event of $controller_image on $holder"
log=$nodesim_dir/pods/${system_ns}_$holder/controller.log
curl -fsS "http://127.0.0.1:$metrics_port/metrics" | grep -q '^stsresize_leader 1' ||
  fail "the pod's /metrics on :$metrics_port does not say it leads"
ok "pod $holder runs $controller_image ($controller_digest), leads Lease $lease (leaderElection.id), /metrics on :$metrics_port"
k annotate statefulset db 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
deadline=$((SECONDS + 240))
until [[ -z $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/phase}') ]] &&
  [[ $(jp statefulset/db '{.metadata.annotations.stsresize\.dev/last-operation}') == *Completed* ]] &&
  [[ $(jp statefulset/db '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 2Gi ]]; do
  ((SECONDS > deadline)) && fail "no completion in 240s: $(tail -n 20 "$log" 2>&1)"
  sleep 0.5
done
deploy_assert_resized db 3 2Gi
[[ -f $log ]] || fail "no log of the leading pod at $log"
grep -q '"level":"debug"' "$log" || fail "the leader does not log at debug: the upgraded ConfigMap did not reach it"
! grep -qi forbidden "$log" || fail "the leader was refused something: $(grep -i -m 3 forbidden "$log")"
copies=$(k get events --field-selector reason=Pulled -o json |
  jq --arg m "Container image \"$sync_image\" already present on machine" '[.items[] | select(.message == $m)] | length')
((copies >= 3)) || fail "$copies copy pods ran from $sync_image, not at least 3 (one per claim)"
ok "resized by the release's leader as its ServiceAccount, at debug level, nothing forbidden; $copies copy pods ran from $sync_image"

step "helm uninstall: nothing of the release is left"
kubectl -n "$system_ns" scale deployment "$release" --replicas=0 >/dev/null
out=$(h uninstall "$release" -n "$system_ns" --wait --timeout 120s 2>&1) || fail "helm uninstall failed: $out"
left=$( (kubectl get clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding -o name
  kubectl -n "$system_ns" get all,configmap,serviceaccount,role,rolebinding,networkpolicy,poddisruptionbudget -o name) 2>/dev/null |
  grep -F "$release" || true)
[[ -z $left ]] || fail "left behind: $left"
ok "no ClusterRole, binding, policy, Deployment, ConfigMap, ServiceAccount or Role of $release"

step "scope=namespace, release ops into $ns: names ops-stsresize, no cluster-level object"
out=$(h install ops "$chart" -n "$ns" --set scope=namespace --wait --timeout 180s 2>&1) || fail "helm install failed: $out"
on_exit "'$helm' uninstall ops -n '$ns' --ignore-not-found >/dev/null 2>&1"
kinds=$(h get manifest ops -n "$ns" | awk '$1 == "kind:" { print $2 }' | sort -u | tr '\n' ' ')
[[ ! $kinds =~ (Cluster|ValidatingAdmission|Namespace) ]] || fail "the namespace-scoped release holds: $kinds"
grep -q -- '--namespace=$(POD_NAMESPACE)' <<<"$(k get deployment ops-stsresize -o jsonpath='{.spec.template.spec.containers[0].args}')" ||
  fail "the Deployment does not pass --namespace"
deploy_sa_kubeconfig ops-stsresize "$ns" "$work/ops.kubeconfig"
can() { kubectl --kubeconfig "$work/ops.kubeconfig" auth can-i "$@" 2>/dev/null || true; }
for allowed in "watch statefulsets.apps" "delete persistentvolumeclaims" "create jobs.batch" "update leases.coordination.k8s.io"; do
  # shellcheck disable=SC2086
  [[ $(can $allowed -n "$ns") == yes ]] || fail "ops-stsresize may not: $allowed"
done
for refused in "list statefulsets.apps -A" "list storageclasses.storage.k8s.io" "get persistentvolumes" "list statefulsets.apps -n default"; do
  # shellcheck disable=SC2086
  [[ $(can $refused) == no ]] || fail "ops-stsresize may, but should not: $refused"
done
out=$(h uninstall ops -n "$ns" --wait --timeout 120s 2>&1) || fail "helm uninstall ops failed: $out"
ok "kinds: $kinds; the Role's verbs in $ns, nothing cluster-wide; uninstalled"
