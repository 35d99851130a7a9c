#!/usr/bin/env bash
# deploy/components/admission-fence on a real API server, by kubectl alone (no controller: the
# phase annotations are set by hand, as the controller would set them).
#   0. rendering: the cluster-scoped overlay includes the fence, the namespace-scoped one does
#      not; under a namespace and namePrefix of one's own the binding's parameter follows the
#      ServiceAccount;
#   1. installed under this test's names (namespace NS, names prefixed NS-), its bindings
#      limited to NS as they would have to be on a shared cluster; a StatefulSet web (1 replica,
#      pods never scheduled: only the API server's answers matter);
#   2. phase BackingUp: `kubectl scale` and `kubectl patch` of spec.replicas by the admin are
#      refused with the message (phase, why, the abort command), and so is a patch that drops the
#      phase annotation while raising the replicas; spec.replicas unchanged; scaling to 0 passes
#      and raising it again is refused; annotation edits pass (the phase and state annotations
#      included);
#   3. as the controller's ServiceAccount (impersonated): patching spec.replicas passes,
#      /scale is refused (the controller never uses it, so it is not exempt there);
#   4. ScalingDown, Recreating, Restoring: refused, each with its own advice; ScalingUp,
#      ScalingBack, CleaningUp, Completed, Failed and no phase: raising them passes, both ways;
#   5. stsresize.dev/advance: signed "by" another user, refused (create and update); by the
#      requester, passes; two "by" members or a backslash, refused; removal passes; the
#      ServiceAccount writes or removes one in anyone's name;
#   6. a StatefulSet paused by the rolling strategy (the finalizer stsresize.dev/rolling, deleted
#      with propagation Background; phase BackingUp): removing the finalizer by a JSON patch, a
#      merge patch or `kubectl replace` of the object without it is refused with why and how to
#      abort, and the object stays; changing its replicas passes (by patch and /scale: a paused
#      set starts nothing), annotation edits pass, an orphan delete passes and the garbage
#      collector's removal of its own finalizer `orphan` passes; the ServiceAccount removes the
#      finalizer and the object goes.
# On a private control plane (no node simulator, up in seconds), not the fixture's: the
# policies are cluster-wide objects, and kube-apiserver (1.37 included) stops for good the watch
# that feeds a policy's parameters of a built-in kind once no binding uses that kind
# (kubernetes/kubernetes#130887). On the fixture's apiserver, after another test removed the
# fence (the cluster-scoped deploy test installs it), the /scale policy would read StatefulSets
# from a frozen cache.
# Bounded polls, never blind sleeps: a new policy is enforced a moment after its creation, and
# the /scale policy reads the StatefulSet from the API server's watch cache.
#   admission_fence.sh
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"

cluster=$repo/scripts/cluster
private=$(basename "$cluster_dir")-fence
# The namespace goes with the control plane: `ns=` spares the exit a delete that cannot answer.
on_exit "'$cluster' down --name '$private' >/dev/null 2>&1; ns="
step "bring up private control plane $private (no node simulator)"
KUBECONFIG=$("$cluster" up --name "$private" --no-nodesim | tail -n 1) || fail "scripts/cluster up --name $private failed"
export KUBECONFIG
work=$(mktemp -d)
on_exit "rm -rf '$work'"
use_namespace
component=$repo/deploy/components/admission-fence
sa_user=system:serviceaccount:$ns:$ns-stsresize
admin=$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}')
[[ -n $admin ]] || fail "kubectl auth whoami names nobody"

# try CMD...: runs CMD; its output in $out, its exit code in $rc.
try() {
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
}
# refused WANT CMD...: CMD fails, refused by the fence with a message containing WANT.
refused() {
  local want=$1
  shift
  try "$@"
  ((rc != 0)) || fail "not refused: $*"
  [[ $out == *"ValidatingAdmissionPolicy '$ns-stsresize-fence"*"denied request: "* && $out == *"$want"* ]] ||
    fail "refused, but not by the fence with '$want': $*: $out"
}
passes() {
  try "$@"
  ((rc == 0)) || fail "refused: $*: $out"
}
# eventually refused|passes SECS ARGS...: until `refused ARGS` or `passes ARGS` holds, bounded.
# Only for server-side dry runs, which change nothing however often they are sent.
eventually() {
  local want=$1 deadline=$((SECONDS + $2))
  shift 2
  while :; do
    if [[ $want == refused ]]; then
      try "${@:2}"
      ((rc != 0)) && [[ $out == *"denied request: "*"$1"* ]] && return 0
    else
      try "$@"
      ((rc == 0)) && return 0
    fi
    ((SECONDS > deadline)) && fail "not $want within the bound: ${*}: $out"
    sleep 0.3
  done
}
sa() { kubectl --as="$sa_user" -n "$ns" "$@"; }
replicas() { jp statefulset/web '{.spec.replicas}'; }
phase() {
  if [[ -n $1 ]]; then
    k annotate statefulset web --overwrite "stsresize.dev/phase=$1" >/dev/null
  else
    k annotate statefulset web stsresize.dev/phase- >/dev/null
  fi
}
scale_to() { k scale statefulset web --replicas="$1" "${@:2}"; }
patch_to() { k patch statefulset web --type=merge -p "{\"spec\":{\"replicas\":$1}}" "${@:2}"; }
held() { echo "stsresize is resizing the volumes of StatefulSet $ns/web (phase $1): its replicas are held at 0"; }

step "rendering: the cluster-scoped overlay includes the fence, the namespace-scoped one does not"
to_json() { kubectl create --dry-run=client -o json -f - | jq -s '{items: .}'; }
rendered=$(kubectl kustomize "$repo/deploy/overlays/cluster-scoped" | to_json)
[[ $(jq -r '[.items[] | select(.kind | startswith("ValidatingAdmissionPolicy")) | .metadata.name] | sort | join(" ")' <<<"$rendered") == \
  "stsresize-fence stsresize-fence stsresize-fence-scale stsresize-fence-scale" ]] ||
  fail "the cluster-scoped overlay does not render both policies and bindings"
[[ $(jq -c '.items[] | select(.kind == "ValidatingAdmissionPolicyBinding" and .metadata.name == "stsresize-fence") | .spec.paramRef' <<<"$rendered") == \
  '{"name":"stsresize","namespace":"stsresize-system","parameterNotFoundAction":"Allow"}' ]] ||
  fail "the binding's parameter is not the controller's ServiceAccount"
! kubectl kustomize "$repo/deploy/overlays/namespace-scoped" | grep -q '^kind: ValidatingAdmissionPolicy' ||
  fail "the namespace-scoped overlay renders a policy"
mkdir -p "$work/mine"
cat >"$work/mine/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: storage-ops
namePrefix: acme-
resources:
  - $(realpath --relative-to="$work/mine" "$repo/deploy/overlays/cluster-scoped")
YAML
mine=$(kubectl kustomize "$work/mine" | to_json)
[[ $(jq -c '.items[] | select(.kind == "ValidatingAdmissionPolicyBinding") | [.metadata.name, .spec.policyName, .spec.paramRef.name, .spec.paramRef.namespace]' <<<"$mine" | LC_ALL=C sort | paste -sd' ') == \
  '["acme-stsresize-fence","acme-stsresize-fence","acme-stsresize","storage-ops"] ["acme-stsresize-fence-scale","acme-stsresize-fence-scale",null,null]' ]] ||
  fail "namespace and namePrefix do not follow into the bindings: $(jq -c '.items[] | select(.kind == "ValidatingAdmissionPolicyBinding") | .spec' <<<"$mine")"
ok "both overlays as intended; namespace: and namePrefix: follow into policyName and paramRef"

step "install the component as $ns/$ns-stsresize, its bindings limited to namespace $ns"
mkdir -p "$work/fence"
cp "$repo/deploy/base/serviceaccount.yaml" "$work/fence/"
cat >"$work/fence/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
namePrefix: $ns-
resources:
  - serviceaccount.yaml
components:
  - $(realpath --relative-to="$work/fence" "$component")
patches:
  # The policies are cluster-wide objects; bound to this namespace only, they would fence no
  # other test's StatefulSets even on a shared cluster.
  - target:
      kind: ValidatingAdmissionPolicyBinding
    patch: |-
      - op: add
        path: /spec/matchResources
        value:
          namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: $ns
YAML
on_exit "kubectl delete -k '$work/fence' --ignore-not-found --wait=false >/dev/null 2>&1"
out=$(kubectl apply --dry-run=server -k "$work/fence" 2>&1) || fail "server dry-run failed: $out"
out=$(kubectl apply -k "$work/fence" 2>&1) || fail "apply failed: $out"
for policy in "$ns-stsresize-fence" "$ns-stsresize-fence-scale"; do
  kubectl get validatingadmissionpolicy "$policy" >/dev/null || fail "no policy $policy"
  kubectl get validatingadmissionpolicybinding "$policy" >/dev/null || fail "no binding $policy"
done
k create role fenced-sts --verb=get,list,patch,update --resource=statefulsets,statefulsets/scale >/dev/null
k create rolebinding fenced-sts --role=fenced-sts --serviceaccount="$ns:$ns-stsresize" >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      # Never scheduled: the test is about the API server's answers, not pods.
      nodeSelector: {stsresize.dev/no-such-node: "true"}
      containers:
        - name: main
          image: docker.io/library/busybox:1.36
          command: [sleep, infinity]
YAML
ok "policies and bindings $ns-stsresize-fence and $ns-stsresize-fence-scale, the ServiceAccount, a Role for it; statefulset/web, 1 replica; the admin is $admin"

step "phase BackingUp: raising the replicas is refused, with why and how to abort"
phase BackingUp
# The policies are enforced a moment after their creation; the /scale one also waits for its
# watch cache to show the annotation.
eventually refused 60 "$(held BackingUp)" scale_to 2 --dry-run=server
eventually refused 60 "$(held BackingUp)" patch_to 2 --dry-run=server
refused "$(held BackingUp)" scale_to 2
abort_advice="To give up the resize, run \`stsresize advance $ns/web --abort\`; it scales back to the original replica count."
[[ $out == *"$abort_advice"* ]] || fail "no abort advice: $out"
ok "kubectl scale: ${out#*denied request: }"
refused "$(held BackingUp)" patch_to 2
ok "kubectl patch of spec.replicas: refused the same way"
refused "$(held BackingUp)" k patch statefulset web --type=merge \
  -p '{"metadata":{"annotations":{"stsresize.dev/phase":null}},"spec":{"replicas":2}}'
ok "a patch dropping the phase annotation while raising the replicas: refused (the stored phase counts)"
[[ $(replicas) == 1 && $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == BackingUp ]] ||
  fail "replicas $(replicas), phase $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}')"
passes scale_to 0
refused "$(held BackingUp)" scale_to 1
refused "$(held BackingUp)" patch_to 1
[[ $(replicas) == 0 ]] || fail "replicas $(replicas), want 0"
ok "scaling to 0 passes (it starts nothing: the controller and advance --apply-locally do it); back to 1 is refused"
passes k annotate statefulset web --overwrite example.com/note=edited-during-backup
passes k annotate statefulset web --overwrite 'stsresize.dev/state={"v":1,"phase":"BackingUp"}' stsresize.dev/phase=BackingUp
passes k label statefulset web --overwrite example.com/label=during-backup
[[ $(replicas) == 0 ]] || fail "replicas $(replicas), want 0"
ok "annotation and label edits pass, the state and phase annotations included"

step "as the controller's ServiceAccount ($sa_user)"
passes sa patch statefulset web --type=merge -p '{"spec":{"replicas":1}}'
[[ $(replicas) == 1 ]] || fail "replicas $(replicas) after the ServiceAccount's patch"
passes sa annotate statefulset web --overwrite stsresize.dev/phase=Recreating
passes sa patch statefulset web --type=merge -p '{"metadata":{"annotations":{"stsresize.dev/phase":"BackingUp"}},"spec":{"replicas":2}}'
[[ $(replicas) == 2 ]] || fail "replicas $(replicas) after the ServiceAccount's patch"
passes sa patch statefulset web --type=merge -p '{"spec":{"replicas":0}}'
ok "its updates pass: replicas 0 -> 1, a phase change, a phase change and replicas 1 -> 2 at once, back to 0"
eventually refused 30 "$(held BackingUp)" sa scale statefulset web --replicas=2 --dry-run=server
refused "$(held BackingUp)" sa scale statefulset web --replicas=2
[[ $(replicas) == 0 ]] || fail "replicas $(replicas), want 0"
ok "its /scale is refused: the controller never uses /scale, so the fence there exempts nobody"

step "the other copy phases are fenced, each with its own advice"
for p in ScalingDown Recreating Restoring; do
  phase "$p"
  eventually refused 30 "$(held "$p")" scale_to 2 --dry-run=server
  refused "$(held "$p")" scale_to 2
  case $p in
    Recreating) [[ $out == *"--abort\` (refused once a source claim is deleted: then let it finish)"* ]] || fail "$p: $out" ;;
    Restoring) [[ $out == *"can no longer be aborted: let it finish (stsresize describe $ns/web)"* ]] || fail "$p: $out" ;;
    *) [[ $out == *"$abort_advice"* ]] || fail "$p: $out" ;;
  esac
  refused "$(held "$p")" patch_to 2
  [[ $(replicas) == 0 ]] || fail "$p: replicas $(replicas)"
  ok "$p: refused (${out##*"(phase $p): "})"
done

step "outside the copy phases raising the replicas passes"
for p in PreCopying ScalingUp ScalingBack CleaningUp Completed Failed ''; do
  phase "$p"
  # The /scale policy may see the previous (fenced) phase for a moment.
  eventually passes 30 scale_to 2 --dry-run=server
  passes scale_to 2
  passes patch_to 3
  [[ $(replicas) == 3 ]] || fail "${p:-no phase}: replicas $(replicas), want 3"
  passes patch_to 1
  ok "${p:-no phase}: kubectl scale to 2, kubectl patch to 3 and back to 1 pass"
done

step "stsresize.dev/advance must be signed by whoever writes it"
request() { # request BY: an approval as engine/advance_request.cc encodes it
  printf '{"action":"approve","at":"2026-01-01T00:00:00Z","by":"%s","nonce":"n-%s","operation":"web-1","phase":"BackingUp"}' "$1" "$RANDOM"
}
advance() { jp statefulset/web '{.metadata.annotations.stsresize\.dev/advance}'; }
phase BackingUp
refused "it says \"by\":\"mallory\", and the request comes from $admin" \
  k annotate statefulset web --overwrite "stsresize.dev/advance=$(request mallory)"
ok "another user's name: ${out#*denied request: }"
[[ -z $(advance) ]] || fail "the refused request was written"
passes k annotate statefulset web --overwrite "stsresize.dev/advance=$(request "$admin")"
[[ $(advance) == *"\"by\":\"$admin\""* ]] || fail "the request by $admin is not there: $(advance)"
ok "signed by $admin, written by $admin: passes"
passes k annotate statefulset web --overwrite example.com/note=while-a-request-waits
ok "other edits pass while it is there"
refused "it says \"by\":\"mallory\"" k annotate statefulset web --overwrite "stsresize.dev/advance=$(request mallory)"
refused "it must have exactly one \"by\" member" k annotate statefulset web --overwrite \
  "stsresize.dev/advance={\"action\":\"abort\",\"by\":\"$admin\",\"by\":\"mallory\",\"nonce\":\"n\",\"operation\":\"web-1\",\"phase\":\"BackingUp\"}"
refused "it may hold no backslash" k annotate statefulset web --overwrite \
  "stsresize.dev/advance={\"action\":\"abort\",\"b\\u0079\":\"mallory\",\"by\":\"$admin\",\"nonce\":\"n\",\"operation\":\"web-1\",\"phase\":\"BackingUp\"}"
passes k annotate statefulset web --overwrite \
  "stsresize.dev/advance={ \"action\": \"abort\", \"by\" : \"$admin\", \"nonce\": \"n2\", \"operation\": \"web-1\", \"phase\": \"BackingUp\" }"
ok "changed to another name, two \"by\" members, an escaped key: refused; spaced-out JSON signed by $admin: passes"
passes k annotate statefulset web stsresize.dev/advance-
[[ -z $(advance) ]] || fail "the request was not removed"
ok "removal passes"
refused "it says \"by\":\"mallory\"" k apply -f - <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: forged
  annotations:
    stsresize.dev/advance: '$(request mallory)'
spec:
  serviceName: forged
  replicas: 0
  selector:
    matchLabels: {app: forged}
  template:
    metadata:
      labels: {app: forged}
    spec:
      containers:
        - {name: main, image: docker.io/library/busybox:1.36}
YAML
! k get statefulset forged >/dev/null 2>&1 || fail "statefulset/forged was created"
ok "a StatefulSet created with a request in another's name: refused"
passes sa annotate statefulset web --overwrite "stsresize.dev/advance=$(request mallory)"
passes sa annotate statefulset web stsresize.dev/advance-
passes k annotate statefulset web --overwrite "stsresize.dev/advance=$(request "$admin")"
passes sa annotate statefulset web stsresize.dev/advance-
[[ -z $(advance) ]] || fail "the request was not removed by the ServiceAccount"
ok "the ServiceAccount carries or removes a request in anyone's name"

step "a StatefulSet paused by the rolling strategy: only the controller removes its finalizer"
passes sa patch statefulset web --type=json -p '[{"op":"add","path":"/metadata/finalizers","value":["stsresize.dev/rolling"]}]'
phase BackingUp
passes k delete statefulset web --wait=false
[[ -n $(jp statefulset/web '{.metadata.deletionTimestamp}') ]] || fail "statefulset/web is not being deleted"
finalizers() { jp statefulset/web '{.metadata.finalizers}'; }
paused="stsresize has paused StatefulSet $ns/web (phase BackingUp) to copy the volumes of one replica"
refused "$paused" k patch statefulset web --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'
[[ $out == *"stsresize removes it itself when it resumes the set"*"run \`stsresize advance $ns/web --abort\`"* ]] ||
  fail "no resume or abort advice: $out"
ok "a JSON patch removing it: ${out#*denied request: }"
refused "$paused" k patch statefulset web --type=merge -p '{"metadata":{"finalizers":null}}'
k get statefulset web -o json | jq 'del(.metadata.finalizers)' >"$work/replace.json"
refused "$paused" k replace -f "$work/replace.json"
[[ $(finalizers) == *stsresize.dev/rolling* ]] || fail "the finalizer is gone: $(finalizers)"
ok "a merge patch and kubectl replace without it: refused; the finalizer and the object stay"
passes patch_to 3
eventually passes 30 scale_to 2 --dry-run=server
passes scale_to 2
[[ $(replicas) == 2 ]] || fail "replicas $(replicas), want 2"
passes k annotate statefulset web --overwrite example.com/note=while-paused
ok "paused in BackingUp: replicas 1 -> 3 by patch, 3 -> 2 by /scale, annotation edits: pass (the paused set starts nothing)"
passes k delete statefulset web --cascade=orphan --wait=false
deadline=$((SECONDS + 60))
until [[ $(finalizers) == '["stsresize.dev/rolling"]' ]]; do
  ((SECONDS < deadline)) || fail "the garbage collector did not take its finalizer off in 60 s: $(finalizers)"
  sleep 0.3
done
ok "an orphan delete passes, and so does the garbage collector's removal of its finalizer orphan"
passes sa patch statefulset web --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'
deadline=$((SECONDS + 30))
while k get statefulset web >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "statefulset/web still there 30 s after the ServiceAccount removed the finalizer"
  sleep 0.3
done
ok "the ServiceAccount removes the finalizer: the object goes"
