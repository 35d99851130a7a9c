#!/usr/bin/env bash
# A shrink on the local control plane (issue #17): 3 replicas of 1Gi on sim-fixed with random
# data (about 1.3 MiB of files, 2 MiB on disk, per volume), an explicit request for a smaller
# size. Every case first measures each claim while the application runs (Measuring: a measure
# Job per claim on its replica's node, ClaimMeasured in the journal before anything is scaled).
#
#   fits            16Mi on the rebind path: Measuring -> UpdatingTemplate -> ... -> Completed;
#                   every claim 16Mi on its copy's volume, every file's sha256 intact, the
#                   volumes' policies back (Delete), no old volume, claim or Job left; each
#                   measure Job was created for the node its replica ran on.
#   fits_two_copies the same with `run --no-rebind` (the two-copy path a namespace-scoped
#                   installation takes): backup, recreate at 16Mi, restore.
#   refused         1Mi: refused with the measured figures (the ResizeFailed Warning and the
#                   failure say what each claim holds and needs); nothing changed: the same
#                   StatefulSet object and generation, templates 1Gi, 3/3 Ready throughout the
#                   operation, each claim the same object on the same volume, no Job left.
#   grown           16Mi in manual mode; while Measuring -> UpdatingTemplate waits for approval
#                   24 MiB are written into data-web-1 (the application writes until it is
#                   scaled down); approved on: the copy Job of data-web-1 finds the data does not
#                   fit (exit 5, "does not fit") and the operation scales back: Failed, every
#                   claim 1Gi on its own volume with every file (the new one too), 3/3 Ready.
#
#   shrink.sh STSRESIZE_BINARY CASE
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
case_name=${2:?case: fits, fits_two_copies, refused or grown}
# shellcheck source-path=SCRIPTDIR source=rebind_lib.sh
source "$(dirname "$0")/rebind_lib.sh"
use_namespace

annotation() {
  jp statefulset/web "{.metadata.annotations.stsresize\\.dev/$1}" 2>/dev/null || true
}
rows() { "$stsresize" replay --journal "$work/journal.db" -o json; }

# Every claim measured before anything was scaled: ClaimMeasured x3 before the first phase change
# out of Measuring, each measure Job created beside the replica of its claim.
assert_measured_first() {
  local r i node want
  r=$(rows) || fail "replay exited $?"
  [[ $(jq -r '[.rows[] | select(.event == "PhaseChanged")][0].details' <<<"$r") == "Pending → Measuring"* ]] ||
    fail "the operation did not begin in Measuring: $(jq -c '[.rows[] | select(.event == "PhaseChanged") | .details]' <<<"$r")"
  local measured
  measured=$(jq -r '[.rows as $rows | $rows | to_entries[]
      | select(.value.event == "PhaseChanged" and (.value.details | startswith("Measuring →")))
      | .key][0] as $out
    | [.rows[:$out][] | select(.event == "ClaimMeasured")] | length' <<<"$r")
  ((measured == 3)) || fail "$measured ClaimMeasured before Measuring ended (want 3)"
  for i in 0 1 2; do
    node=$(awk -v c="data-web-$i" '$1 == c { print $2 }' "$work/nodes")
    want="measure data-web-$i on node $node, beside its pod"
    jq -e --arg want "$want" 'any(.rows[]; .event == "ActionIntended" and (.details | contains($want)))' <<<"$r" >/dev/null ||
      fail "no measure Job of data-web-$i created on node $node: $(jq -c '[.rows[] | select(.event == "ActionIntended") | .details | select(contains("measure"))]' <<<"$r")"
  done
  ok "3 claims measured (ClaimMeasured) before Measuring ended, each beside its replica ($(awk '{print $2}' "$work/nodes" | sort -u | paste -sd ' '))"
}

assert_nothing_left() {
  local deadline=$((SECONDS + 60)) leftovers
  while leftovers=$(k get pvc,jobs -o name | grep stsresize || true) && [[ -n $leftovers ]]; do
    ((SECONDS > deadline)) && fail "left behind: $leftovers"
    sleep 0.5
  done
  ok "no backup claim or Job left"
}

step "StatefulSet web: 3 replicas, claims of 1Gi on sim-fixed, random data in every volume"
e2e_statefulset web sim-fixed 3
rebind_claim_volumes web 3 >"$work/volumes-before"
e2e_claim_uids web 3 >"$work/uids-before"
for i in 0 1 2; do echo "data-web-$i $(jp "pod/web-$i" '{.spec.nodeName}')"; done >"$work/nodes"
sts_uid=$(jp statefulset/web '{.metadata.uid}')
generation=$(jp statefulset/web '{.metadata.generation}')
ok "$(wc -l <"$work/before-web-0") files per volume, $(du -sh "$(pv_dir data-web-0)" | cut -f1) on disk; pods on $(awk '{print $2}' "$work/nodes" | paste -sd ' ')"

case $case_name in
  fits | fits_two_copies)
    flags=()
    [[ $case_name == fits_two_copies ]] && flags=(--no-rebind)
    step "request 16Mi (${flags[*]:-rebind path})"
    e2e_start_controller controller.log "${flags[@]}"
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"16Mi"}}' >/dev/null
    e2e_wait_completed web 300
    ok "Completed; phases seen: ${phases[*]}"
    [[ ${phases[0]} == Measuring ]] || fail "the first phase seen was ${phases[0]}, not Measuring"
    assert_measured_first
    planned=$(rebind_planned "$work/journal.db")
    if [[ $case_name == fits ]]; then
      [[ $planned == "Rebind path, "* ]] || fail "Planned says: $planned"
    else
      [[ $planned == "Copy path, "*"not rebind: the controller runs with --no-rebind"* ]] || fail "Planned says: $planned"
    fi
    ok "Planned: $planned"

    step "every claim 16Mi with every file intact; nothing left"
    for i in 0 1 2; do
      [[ $(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase}') == "16Mi Bound" ]] ||
        fail "pvc/data-web-$i is '$(jp "pvc/data-web-$i" '{.spec.resources.requests.storage} {.status.phase}')', not '16Mi Bound'"
    done
    e2e_assert_data_intact web 3
    ok "every claim 16Mi and Bound; every file's sha256 unchanged"
    [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 16Mi ]] ||
      fail "the template asks for $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}')"
    k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web is not ready"
    ok "the template asks for 16Mi; 3/3 Ready"
    mapfile -t old_volumes < <(awk '{ print $2 }' "$work/volumes-before")
    rebind_assert_volumes web 3 Delete 120 "${old_volumes[@]}"
    assert_nothing_left
    ;;

  refused)
    step "request 1Mi: less than the data (a 1 MiB file and 200 small ones per volume)"
    e2e_start_controller controller.log
    # Ready replicas seen while the operation runs: never fewer than 3.
    (
      while :; do
        echo "$(jp statefulset/web '{.spec.replicas} {.status.readyReplicas}' 2>/dev/null)"
        sleep 0.2
      done
    ) >"$work/replicas-seen" &
    watcher=$!
    on_exit "kill $watcher 2>/dev/null || true"
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"1Mi"}}' >/dev/null
    e2e_wait_failed web 180
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    ok "Failed; phases seen: ${phases[*]}"
    failure=$(jq -r .failure <<<"$(annotation state)")
    [[ $failure == "shrink refused, nothing was changed: claim data-web-0 holds "*" and needs at least "*"more than 1Mi"* ]] ||
      fail "the failure is \"$failure\""
    ok "failure: ${failure:0:220}..."
    e2e_wait_event web "^ResizeFailed: .*shrink refused, nothing was changed: claim data-web-0 holds [0-9.]+ MiB \\([0-9]+ files" 30
    ok "Warning ${event:0:160}..."
    assert_measured_first

    step "nothing changed"
    [[ $(jp statefulset/web '{.metadata.uid} {.metadata.generation}') == "$sts_uid $generation" ]] ||
      fail "the StatefulSet is '$(jp statefulset/web '{.metadata.uid} {.metadata.generation}')', was '$sts_uid $generation'"
    [[ $(jp statefulset/web '{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}') == 1Gi ]] ||
      fail "the template was changed"
    ok "the same StatefulSet object at the same generation ($generation), template 1Gi"
    bad=$(awk 'NF && $0 != "3 3" && $0 != "3"' "$work/replicas-seen" | sort -u | paste -sd ';')
    [[ -z $bad && -s $work/replicas-seen ]] || fail "replicas/ready seen during the operation: $bad"
    ok "3 replicas, 3 Ready in each of $(wc -l <"$work/replicas-seen") samples during the operation"
    e2e_claim_uids web 3 >"$work/uids-after"
    rebind_claim_volumes web 3 >"$work/volumes-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "claims replaced: $(diff "$work/uids-before" "$work/uids-after")"
    diff -q "$work/volumes-before" "$work/volumes-after" >/dev/null || fail "volumes changed"
    e2e_assert_data_intact web 3
    rebind_assert_volumes web 3 Delete 10
    ok "each claim the same object, 1Gi, on its own volume, every file intact"
    assert_nothing_left
    ;;

  grown)
    step "manual mode; request 16Mi; wait until Measuring -> UpdatingTemplate waits for approval"
    k annotate statefulset web stsresize.dev/mode=manual >/dev/null
    e2e_start_controller controller.log
    k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"16Mi"}}' >/dev/null
    deadline=$((SECONDS + 120))
    until [[ $(annotation awaiting-approval) == "Measuring -> UpdatingTemplate" ]]; do
      ((SECONDS < deadline)) || fail "Measuring -> UpdatingTemplate never waited (phase $(annotation phase), awaiting '$(annotation awaiting-approval)')"
      sleep 0.3
    done
    ok "measured; waiting to leave Measuring"

    step "the application writes 24 MiB into data-web-1 after the measure"
    head -c $((24 * 1024 * 1024)) /dev/urandom >"$(pv_dir data-web-1)/late.bin"
    e2e_checksums data-web-1 >"$work/before-web-1"
    ok "$(wc -l <"$work/before-web-1") files in data-web-1 now"

    step "approve every transition: the copy finds the data no longer fits and scales back"
    deadline=$((SECONDS + 300))
    while [[ $(annotation phase) != Failed ]]; do
      waiting=$(annotation awaiting-approval)
      if [[ -n $waiting && -z $(annotation advance) ]]; then
        out=$("$stsresize" advance "$ns/web" --kubeconfig "$KUBECONFIG" --approve) ||
          fail "advance --approve exited $? at $waiting: $out"
        ok "approved $waiting"
      fi
      ((SECONDS < deadline)) || fail "not Failed (phase $(annotation phase), awaiting '$waiting')"
      _e2e_any_controller_alive || fail "the controller exited: $(tail -n 20 "$work/controller.log")"
      sleep 0.3
    done
    failure=$(jq -r .failure <<<"$(annotation state)")
    [[ $failure == *"copy Job data-web-1-stsresize-backup failed"*"stsresize-copy: does not fit: /source holds "* ]] ||
      fail "the failure is \"$failure\""
    ok "Failed: ${failure:0:200}"
    transitions=$(e2e_journal_transitions <<<"$(rows)")
    [[ $(tail -n 2 <<<"$transitions" | paste -sd,) == "BackingUp -> ScalingBack,ScalingBack -> Failed" ]] ||
      fail "the journal does not end BackingUp -> ScalingBack -> Failed: $transitions"
    ok "BackingUp -> ScalingBack -> Failed"

    step "scaled back: every claim 1Gi on its own volume with every file, 3/3 Ready"
    e2e_claim_uids web 3 >"$work/uids-after"
    rebind_claim_volumes web 3 >"$work/volumes-after"
    diff -q "$work/uids-before" "$work/uids-after" >/dev/null || fail "claims replaced: $(diff "$work/uids-before" "$work/uids-after")"
    diff -q "$work/volumes-before" "$work/volumes-after" >/dev/null || fail "volumes changed"
    e2e_assert_data_intact web 3
    k rollout status statefulset/web --timeout=180s >/dev/null || fail "statefulset/web is not ready again"
    [[ $(jp statefulset/web '{.spec.replicas} {.status.readyReplicas}') == "3 3" ]] || fail "not 3/3 Ready"
    rebind_assert_volumes web 3 Delete 60
    ok "each claim the same object on its own volume, every file intact (late.bin too), 3/3 Ready"
    assert_nothing_left
    ;;

  *) fail "unknown case $case_name (fits, fits_two_copies, refused, grown)" ;;
esac
