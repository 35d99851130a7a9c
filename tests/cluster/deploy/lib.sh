# shellcheck shell=bash
# Shared steps of the deploy/ tests: install an overlay of deploy/ under this test's names, and
# run `stsresize run` on the host as the installation's ServiceAccount. Source after
# proof/lib.sh and e2e/lib.sh.
#
#   deploy_overlay DIR BASE NAMESPACE [NAME_PREFIX]
#                                 writes DIR/kustomization.yaml: deploy/overlays/BASE with
#                                 `namespace:` and `namePrefix:` set, the way README's
#                                 configuration flow does it
#   deploy_install DIR            kubectl apply --dry-run=server -k, then apply -k; the
#                                 Deployment rolls out
#   deploy_sa_kubeconfig SA NS OUT
#                                 a kubeconfig at OUT with a TokenRequest token of NS/SA, the
#                                 cluster's server and CA, and NS as its namespace
#   deploy_start_controller KUBECONFIG LOG ARGS...
#                                 `stsresize run` with that kubeconfig, json logs, probes on a
#                                 free port, poll 1s; pid in $controller_pid (killed at exit)
#   deploy_probe_port LOG         the health probe port the controller logged
#   deploy_wait_event NAME REASON PATTERN SECS
#                                 waits for an Event of REASON on statefulset NAME whose message
#                                 matches PATTERN (grep -E)
#   deploy_assert_resized NAME N SIZE
#                                 e2e_assert_resized, the installation's ConfigMap excepted
#   deploy_pod_visible_binary     a copy of $stsresize that nodesim's pods can run: they see the
#                                 host's filesystem except /tmp and /run (their own tmpfs), and a
#                                 checkout (CI's clean clone) may well live under /tmp; the copy
#                                 is under ~/.cache/stsresize, removed at exit

deploy_overlay() {
  local dir=$1 base=$2 namespace=$3 prefix=${4:-} relative
  mkdir -p "$dir"
  # shellcheck disable=SC2154 # repo comes from proof/lib.sh
  relative=$(realpath --relative-to="$dir" "$repo/deploy/overlays/$base")
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "namespace: $namespace"
    [[ -n $prefix ]] && echo "namePrefix: $prefix"
    echo "resources:"
    echo "  - $relative"
  } >"$dir/kustomization.yaml"
}

deploy_install() {
  local dir=$1 out
  out=$(kubectl apply --dry-run=server -k "$dir" 2>&1) || fail "server dry-run of $dir failed: $out"
  ok "kubectl apply --dry-run=server -k: $(grep -c . <<<"$out") objects accepted"
  out=$(kubectl apply -k "$dir" 2>&1) || fail "apply of $dir failed: $out"
  ok "kubectl apply -k: $(grep -c . <<<"$out") objects"
}

deploy_sa_kubeconfig() {
  local sa=$1 namespace=$2 out=$3 server ca token
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  token=$(kubectl -n "$namespace" create token "$sa" --duration=1h) || fail "TokenRequest for $namespace/$sa failed"
  cat >"$out" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $sa
  user:
    token: $token
contexts:
- name: $sa
  context:
    cluster: cluster
    user: $sa
    namespace: $namespace
current-context: $sa
KUBECONFIG
  chmod 600 "$out"
}

deploy_start_controller() {
  local kubeconfig=$1 log=$2
  shift 2
  # shellcheck disable=SC2154 # stsresize and work come from e2e_init
  "$stsresize" run --kubeconfig "$kubeconfig" --journal "$work/journal-$log.db" \
    --metrics-bind-address 0 --health-probe-bind-address "127.0.0.1:0" --poll-interval 1s \
    --log-format json "$@" >>"$work/$log" 2>&1 &
  controller_pid=$!
  controllers+=("$controller_pid")
}

deploy_probe_port() {
  local log=$1 i port
  for i in $(seq 1 100); do
    port=$(grep -o '"address":"127.0.0.1:[0-9]*","for":"health-probe-bind-address"' "$work/$log" |
      head -n 1 | sed 's/.*:\([0-9]*\)",.*/\1/' || true)
    [[ -n $port ]] && { echo "$port"; return 0; }
    sleep 0.1
  done
  fail "no health probe address in $log: $(tail -n 5 "$work/$log")"
}

deploy_wait_event() {
  local name=$1 reason=$2 pattern=$3 deadline=$((SECONDS + $4)) messages
  while :; do
    messages=$(k get events --field-selector "involvedObject.kind=StatefulSet,involvedObject.name=$name,reason=$reason" \
      -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' 2>/dev/null || true)
    grep -qE "$pattern" <<<"$messages" && return 0
    ((SECONDS > deadline)) && fail "no $reason event matching '$pattern' on statefulset/$name in $4s (got: $messages)"
    sleep 0.5
  done
}

# deploy_assert_resized NAME N SIZE: e2e_assert_resized, where the installation's own ConfigMap
# (stsresize-config-<hash>, in the namespace-scoped mode) is not a leftover.
deploy_assert_resized() {
  e2e_assert_resized "$1" "$2" "$3" '^configmap/stsresize-config-'
}

deploy_pod_visible_binary() {
  local dir
  dir=$(mktemp -d "${XDG_CACHE_HOME:-$HOME/.cache}/stsresize/deploy-test-bin.XXXXXX")
  # shellcheck disable=SC2154 # stsresize comes from e2e/lib.sh
  cp "$stsresize" "$dir/stsresize"
  chmod 0755 "$dir" "$dir/stsresize"
  on_exit "rm -rf '$dir'"
  echo "$dir/stsresize"
}
