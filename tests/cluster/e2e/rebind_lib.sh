# shellcheck shell=bash
# The rebind path's checks (issue #17: the copy path copies each claim once and gives the copy's
# volume the claim's name), shared by the e2e and deploy tests. Source after proof/lib.sh and
# e2e/lib.sh.
#
#   rebind_claim_volumes NAME N       "claim volume" of the N claims of NAME, one a line
#   rebind_planned JOURNAL [STS]      the details of every Planned row of JOURNAL (of StatefulSet
#                                     STS of this namespace alone, if given), one a line
#                                     ("Rebind path, 3 claims: ..." or "Copy path, ... (not
#                                     rebind: WHY)")
#   rebind_retained JOURNAL ROLE      "claim volume policy" of every VolumeRetained row of ROLE
#                                     (source: "its volume", copy: "its copy's volume")
#   rebind_count JOURNAL EVENT        how many rows of EVENT the journal holds
#   rebind_assert_volumes NAME N POLICY SECS [GONE...]
#                                     each claim of NAME Bound to a volume that is Bound to it with
#                                     reclaim policy POLICY, at once; then, within SECS (the PV
#                                     controller deletes released volumes asynchronously), no
#                                     volume GONE left and no other volume reserved for or bound to
#                                     a claim data-NAME-* of this namespace (its backup claims'
#                                     included): no copy or old volume left over

rebind_claim_volumes() {
  local name=$1 replicas=$2 i
  for ((i = 0; i < replicas; i++)); do
    echo "data-$name-$i $(jp "pvc/data-$name-$i" '{.spec.volumeName}')"
  done
}

# _rebind_rows JOURNAL EVENT [STS]
_rebind_rows() {
  local only=()
  # shellcheck disable=SC2154 # ns comes from proof/lib.sh
  [[ -n ${3:-} ]] && only=(--namespace "$ns" --statefulset "$3")
  # shellcheck disable=SC2154 # stsresize comes from e2e_init
  "$stsresize" replay --journal "$1" "${only[@]}" -o json |
    jq -r --arg event "$2" '.rows[] | select(.event == $event) | .details' || fail "replay of $1 failed"
}

rebind_planned() {
  _rebind_rows "$1" Planned "${2:-}"
}

rebind_retained() {
  local journal=$1 role=$2 pattern
  case $role in
    source) pattern="^([^ ]+): its volume ([^ ]+) kept \\(Retain; its own policy ([A-Za-z]+)\\)\$" ;;
    copy) pattern="^([^ ]+): its copy's volume ([^ ]+) kept \\(Retain; its own policy ([A-Za-z]+)\\)\$" ;;
    *) fail "rebind_retained: role source or copy, not $role" ;;
  esac
  _rebind_rows "$journal" VolumeRetained | sed -nE "s/$pattern/\\1 \\2 \\3/p"
}

rebind_count() {
  local rows
  rows=$(_rebind_rows "$1" "$2")
  grep -c . <<<"$rows" || true
}

# Every volume the claims data-NAME-* of this namespace hold or are promised:
# "name phase policy claim".
_rebind_namespace_volumes() {
  kubectl get pv -o json | jq -r --arg ns "$ns" --arg prefix "data-$1-" '.items[]
    | select(.spec.claimRef.namespace == $ns and (.spec.claimRef.name | startswith($prefix)))
    | "\(.metadata.name) \(.status.phase) \(.spec.persistentVolumeReclaimPolicy) \(.spec.claimRef.name)"'
}

rebind_assert_volumes() {
  local name=$1 replicas=$2 policy=$3 secs=$4 i claim pv row deadline left
  shift 4
  local gone=("$@") kept=()
  for ((i = 0; i < replicas; i++)); do
    claim=data-$name-$i
    pv=$(jp "pvc/$claim" '{.spec.volumeName}')
    [[ -n $pv ]] || fail "pvc/$claim names no volume"
    row=$(kubectl get pv "$pv" -o jsonpath='{.status.phase} {.spec.persistentVolumeReclaimPolicy} {.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.claimRef.uid}') ||
      fail "pv/$pv of pvc/$claim is gone"
    [[ $row == "Bound $policy $ns/$claim $(jp "pvc/$claim" '{.metadata.uid}')" ]] ||
      fail "pv/$pv of pvc/$claim is '$row', not 'Bound $policy $ns/$claim <its uid>'"
    kept+=("$pv")
  done
  ok "every claim's volume Bound to it, reclaim policy $policy"
  deadline=$((SECONDS + secs))
  while :; do
    left=()
    for pv in "${gone[@]}"; do
      kubectl get pv "$pv" >/dev/null 2>&1 && left+=("$pv")
    done
    while read -r pv row; do
      [[ -z $pv || " ${kept[*]} " == *" $pv "* || " ${left[*]} " == *" $pv "* ]] || left+=("$pv")
    done <<<"$(_rebind_namespace_volumes "$name")"
    ((${#left[@]} == 0)) && break
    ((SECONDS < deadline)) ||
      fail "volumes left after ${secs}s: ${left[*]}; volumes of data-$name-*: $(_rebind_namespace_volumes "$name" | paste -sd ';')"
    sleep 1
  done
  ok "no other volume left (${#gone[@]} that had to go gone)"
}
