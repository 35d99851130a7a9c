#!/usr/bin/env bash
# deploy/chart with the real helm (built from the Go module proxy, tests/tools/helm.sh), no
# cluster: `helm lint --strict` in each mode; `helm package` renders as the directory does;
# `helm template` equivalent to the kustomize overlays it mirrors, object by object and grant by
# grant (manifests_equivalent.py): both scopes, and the journal-pvc and servicemonitor
# components against their values; names that follow the release (the fence's parameter is the
# release's ServiceAccount, its bindings name the release's policies); values that cannot work
# refused with the reason and nothing rendered. Debian's python3 with python3-yaml
# (scripts/bootstrap) reads the YAML.
#
#   helm_chart_test.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

helm=$("$repo/tests/tools/helm.sh")
chart=$repo/deploy/chart
# helm logs each link under files/ at INFO (the kustomize files, linked); keep only the rest.
quiet() { grep -v 'msg="found symbolic link in path' || true; }

for scope in cluster namespace; do
  out=$("$helm" lint --strict --set "scope=$scope" "$chart" 2>&1) || fail "helm lint --strict (scope=$scope): $out"
done
out=$("$helm" lint --strict --set replicaCount=1,journal.persistence.enabled=true,metrics.serviceMonitor.enabled=true "$chart" 2>&1) ||
  fail "helm lint --strict with a persistent journal and a ServiceMonitor: $out"
ok "helm lint --strict: both scopes, persistent journal + ServiceMonitor"

# helm package copies what files/ links to: the packaged chart renders the same bytes.
"$helm" package "$chart" -d "$work/package" 2> >(quiet >&2) >/dev/null || fail "helm package failed"
packaged=$(tar -tzf "$work"/package/stsresize-*.tgz)
grep -qx 'stsresize/files/cluster-rbac.yaml' <<<"$packaged" || fail "the package holds no files/cluster-rbac.yaml: $packaged"
for scope in cluster namespace; do
  cmp -s <("$helm" template stsresize "$chart" --set "scope=$scope" 2>/dev/null) \
    <("$helm" template stsresize "$work"/package/stsresize-*.tgz --set "scope=$scope" 2>/dev/null) ||
    fail "the packaged chart renders differently (scope=$scope)"
done
ok "helm package: $(grep -c . <<<"$packaged") files, the linked ones as files; renders the same bytes as the directory"

# equivalent NAME OVERLAY_KUSTOMIZATION_BODY HELM_ARGS...: kustomize and Helm render the same,
# the image too: the base's tag and the chart's appVersion are both the binary's version.
equivalent() {
  local name=$1 body=$2 namespace
  shift 2
  mkdir -p "$work/$name"
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n%s\n' "$body" >"$work/$name/kustomization.yaml"
  kubectl kustomize "$work/$name" >"$work/$name.kustomize.yaml" || fail "$name: kubectl kustomize failed"
  namespace=$(awk '$1 == "namespace:" { print $2; exit }' "$work/$name.kustomize.yaml")
  "$helm" template stsresize "$chart" --namespace "$namespace" "$@" \
    >"$work/$name.helm.yaml" 2> >(quiet >&2) || fail "$name: helm template $* failed"
  /usr/bin/python3 "$repo/tests/unit/manifests_equivalent.py" "$work/$name.kustomize.yaml" "$work/$name.helm.yaml" \
    >"$work/$name.out" || fail "$name: kustomize and Helm differ: $(cat "$work/$name.out")"
  ok "$name ($*): $(tr '\n' ';' <"$work/$name.out")"
}
overlays=$(realpath --relative-to="$work/x" "$repo/deploy/overlays")
components=$(realpath --relative-to="$work/x" "$repo/deploy/components")
equivalent cluster-scoped "resources: [$overlays/cluster-scoped]"
equivalent namespace-scoped "resources: [$overlays/namespace-scoped]" --set scope=namespace
equivalent journal-pvc "resources: [$overlays/cluster-scoped]
components: [$components/journal-pvc]" --set replicaCount=1,journal.persistence.enabled=true
equivalent servicemonitor "resources: [$overlays/namespace-scoped]
components: [$components/servicemonitor]" --set scope=namespace,metrics.serviceMonitor.enabled=true

# Names follow the release; what refers to them follows too.
"$helm" template shop-ops "$chart" --namespace platform 2> >(quiet >&2) >"$work/named.yaml" ||
  fail "helm template shop-ops failed"
/usr/bin/python3 - "$work/named.yaml" <<'PY' || fail "names do not follow the release"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
sa = ("ServiceAccount", "shop-ops-stsresize")
assert sa in by, sorted(by)
policies = {n for k, n in by if k == "ValidatingAdmissionPolicy"}
assert policies == {"shop-ops-stsresize-fence", "shop-ops-stsresize-fence-scale"}, policies
for (kind, name), d in by.items():
    if kind == "ValidatingAdmissionPolicyBinding":
        assert d["spec"]["policyName"] in policies, d["spec"]
        ref = d["spec"]["paramRef"]
        if "name" in ref:
            assert (ref["name"], ref["namespace"]) == ("shop-ops-stsresize", "platform"), ref
    if kind.endswith("Binding") and kind != "ValidatingAdmissionPolicyBinding":
        assert d["subjects"] == [{"kind": "ServiceAccount", "name": "shop-ops-stsresize", "namespace": "platform"}], d
        assert ("Role" if kind == "RoleBinding" else "ClusterRole", d["roleRef"]["name"]) in by, d["roleRef"]
    if kind == "Deployment":
        spec = d["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == "shop-ops-stsresize"
        assert spec["containers"][0]["envFrom"][0]["configMapRef"]["name"] in {n for k, n in by if k == "ConfigMap"}
        assert spec["containers"][0]["image"] == "localhost/stsresize:0.1.0", spec["containers"][0]["image"]
print(len(docs), "objects")
PY
ok "release shop-ops: every name shop-ops-stsresize*, the fence's parameter platform/shop-ops-stsresize, bindings and references resolve"

# refused VALUES... PATTERN: helm template fails, says PATTERN, and renders nothing.
refused() {
  local pattern=${*: -1} out
  if out=$("$helm" template stsresize "$chart" "${@:1:$#-1}" 2>&1); then
    fail "helm template ${*:1:$#-1} rendered: $(grep -c '^kind:' <<<"$out") objects"
  fi
  grep -qE "$pattern" <<<"$out" || fail "helm template ${*:1:$#-1} failed without saying '$pattern': $out"
  ! grep -q '^kind:' <<<"$out" || fail "helm template ${*:1:$#-1} printed objects"
  ok "refused ${*:1:$#-1}: $(grep -E "$pattern" <<<"$out" | head -n 1 | cut -c 1-160)"
}
refused --set scope=cluster-wide 'scope.*(must be one of|value must be one of).*cluster'
refused --set sope=namespace "additional properties 'sope' not allowed|sope"
refused --set leaderElection.enabled=false 'replicaCount 2 with leaderElection.enabled=false'
refused --set journal.persistence.enabled=true 'replicaCount 2 with journal.persistence.enabled=true'
refused --set image.digest=latest 'digest'
refused --set logLevel=verbose 'logLevel'
refused --set-json 'extraArgs=["max-parallel-copies=4"]' 'extraArgs'

out=$("$helm" template stsresize "$chart" --set replicaCount=1,leaderElection.enabled=false 2> >(quiet >&2))
! grep -q -- '--leader-elect' <<<"$out" || fail "leader election off still passes --leader-elect"
grep -q 'minAvailable: 0' <<<"$out" || fail "one replica, but the PodDisruptionBudget keeps one available"
ok "one replica without leader election: no --leader-elect, the PodDisruptionBudget lets a drain take it"
