#!/usr/bin/env bash
# A long copy as people watch it. `web`: 2 replicas on sim-fixed, each volume with about 1 GiB of
# random data; a request for 2Gi; `stsresize run --copy-bandwidth-limit 48Mi
# --copy-progress-interval 2s`, so each copy of the pre-copy takes about 20 s. While it runs,
# `stsresize status -o json` sampled every second and `stsresize status` beside it:
#   - PROGRESS (the table) and the row's progress (JSON): a percentage of about 2 GiB and an
#     ETA; within a pre-copy pass the percentage never goes back; a new value at most 10 s after
#     the last; the ETA is sane: rsync is done within 10 s of when the first ETA past 25% said;
#   - `describe`: the running copy Jobs' PROGRESS;
#   - /metrics: stsresize_copy_progress_{bytes,total_bytes,rate_bytes_per_second,eta_seconds}
#     for both claims;
#   - Events CopyProgress on the StatefulSet: each claim's tenths of the first pass, in order;
#   - the cost: the controller's reads of copy logs (stsresize_api_requests_total{verb="pod_log"})
#     per minute of copying, printed, and at most one per copy per interval (and 2 over).
# Then the resize completes with every file's sha256 unchanged.
#   copy_progress.sh STSRESIZE_BINARY
# shellcheck source-path=SCRIPTDIR/../proof source=../proof/lib.sh
source "$(dirname "$0")/../proof/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"

e2e_init "${1:?path to the stsresize binary}"
use_namespace
status() { "$stsresize" status --kubeconfig "$KUBECONFIG" -n "$ns" "$@"; }

step "StatefulSet web: 2 replicas on sim-fixed, about 1 GiB of random data in each volume"
e2e_statefulset web sim-fixed 2
for i in 0 1; do
  dir=$(pv_dir "data-web-$i")
  head -c $((1000 * 1024 * 1024)) /dev/urandom >"$dir/random/large.bin"
  e2e_checksums "data-web-$i" >"$work/before-web-$i"
done
ok "2 x $(du -sh "$(pv_dir data-web-0)" | cut -f1)"

step "resize to 2Gi, each copy held to 48 MiB/s, progress read every 2 s"
e2e_start_controller controller.log --copy-bandwidth-limit 48Mi --copy-progress-interval 2s \
  --metrics-bind-address 127.0.0.1:0
k annotate statefulset web 'stsresize.dev/resize={"data":{"storage":"2Gi"}}' >/dev/null
e2e_wait_phase web PreCopying 60
start=$SECONDS
: >"$work/samples"
seen_metrics=0
described=0
while [[ $(jp statefulset/web '{.metadata.annotations.stsresize\.dev/phase}') == PreCopying ]]; do
  now=$SECONDS
  json=$(status web -o json 2>/dev/null) || { sleep 1; continue; }
  table=$(status 2>/dev/null | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "PROGRESS") c = i } NR == 2 { print $c }')
  jq -c --argjson t "$now" --arg table "$table" '.items[0] | {t: $t, table: $table,
      progress: .progress, pass: ([.jobs[] | .progress.preCopyPass // 0] | max)}' <<<"$json" >>"$work/samples"
  if ((seen_metrics == 0)) && jq -e '.items[0].progress.percent // 0 | . > 20' <<<"$json" >/dev/null; then
    e2e_scrape controller.log >"$work/metrics"
    seen_metrics=1
  fi
  if ((described == 0)) && jq -e '.items[0].progress.percent // 0 | . > 30' <<<"$json" >/dev/null; then
    "$stsresize" describe --kubeconfig "$KUBECONFIG" "$ns/web" >"$work/describe" 2>&1
    described=1
  fi
  ((SECONDS - start < 300)) || fail "still PreCopying after 300 s"
  sleep 1
done
copying=$((SECONDS - start))
ok "PreCopying for ${copying}s: $(wc -l <"$work/samples") samples"

# The samples as "t percent eta pass stage table" lines, while rsync copied (not listing).
jq -r 'select(.progress != null) | [.t, (.progress.percent // -1), (.progress.etaSeconds // -1), .pass,
  .progress.stage, .progress.listing, (.progress.bytesTotal // 0), .table] | @tsv' "$work/samples" >"$work/progress"
copying_lines=$(awk -F'\t' '$5 == "Copying" && $6 == "false"' "$work/progress")
[[ -n $copying_lines ]] || fail "status never showed a copy in progress: $(cat "$work/samples")"
distinct=$(cut -f2 <<<"$copying_lines" | sort -un | wc -l)
((distinct >= 5)) || fail "only $distinct distinct percentages: $copying_lines"
# The total is estimated from rsync's percentage (rounded down): close once past half.
total=$(awk -F'\t' '$2 >= 50 { t = $7 } END { print t + 0 }' <<<"$copying_lines")
((total > 1950 * 1024 * 1024 && total < 2100 * 1024 * 1024)) || fail "past 50% the total said is $total bytes, not 2004 MiB"
awk -F'\t' 'NR > 1 && $4 == pass && $2 < percent { print "went back: " prev " -> " $0; bad = 1 }
  { pass = $4; percent = $2; prev = $0 } END { exit bad }' <<<"$copying_lines" || fail "the percentage went back"
awk -F'\t' 'NR > 1 && $8 != table { if ($1 - changed > 10) { print "no change for " $1 - changed " s"; bad = 1 } changed = $1 }
  NR == 1 { changed = $1 } { table = $8 } END { exit bad }' <<<"$copying_lines" || fail "PROGRESS stood still more than 10 s"
ok "PROGRESS: $distinct percentages of $((total / 1024 / 1024)) MiB, e.g. '$(sed -n '3p' <<<"$copying_lines" | cut -f8)'; never back, never still for 10 s"

# The ETA: the first one past 25% against when the copy went on to its proof.
read -r at eta < <(awk -F'\t' '$2 >= 25 && $3 >= 0 { print $1, $3; exit }' <<<"$copying_lines")
[[ -n ${eta:-} ]] || fail "no ETA past 25%: $copying_lines"
# Ended: both rsyncs of the first pass at 99% or more, or one on its second pass (the pre-copy's
# manifest and second pass follow, which no ETA counts).
ended=$(awk -F'\t' '$5 == "Verifying" || $2 >= 99 || $4 >= 2 { print $1; exit }' "$work/progress")
[[ -n $ended ]] || ended=$((start + copying))
off=$((at + eta - ended))
((off >= -10 && off <= 10)) || fail "at ${at}s the ETA said ${eta}s, the copy ended at ${ended}s (${off}s off)"
ok "at $((at - start))s the ETA said ${eta}s left; rsync was done $((ended - at))s later"

grep -E "^  data-web-[01]-stsresize-precopy .* Running .*[0-9]+% \(.* left$" "$work/describe" >"$work/described" ||
  fail "describe shows no progress of a running copy Job: $(cat "$work/describe")"
(($(wc -l <"$work/described") == 2)) || fail "describe shows the progress of $(wc -l <"$work/described") copies, not 2"
ok "describe: $(head -n 1 "$work/described" | sed 's/  */ /g')"

((seen_metrics)) || fail "/metrics was never read during the copy"
for i in 0 1; do
  for series in stsresize_copy_progress_bytes stsresize_copy_progress_total_bytes \
    stsresize_copy_progress_rate_bytes_per_second stsresize_copy_progress_eta_seconds; do
    grep -qE "^$series\{.*claim=\"data-web-$i\".*\} [0-9.e+]+$" "$work/metrics" ||
      fail "/metrics has no $series of data-web-$i: $(grep copy_progress "$work/metrics")"
  done
done
ok "/metrics: $(grep -c '^stsresize_copy_progress' "$work/metrics") stsresize_copy_progress series"

for i in 0 1; do
  said=$(k get events --field-selector involvedObject.name=web,reason=CopyProgress -o json |
    jq -r --arg c "data-web-$i" '.items | sort_by(.firstTimestamp, .metadata.creationTimestamp) | .[] |
      select(.message | startswith("pre-copy " + $c + ": ")) | .message' |
    sed -nE 's/^[^:]*: ([0-9]+)% .*/\1/p')  # the first pass (a later one says "pass N:")
  (($(wc -l <<<"$said") >= 4)) || fail "data-web-$i: only these CopyProgress percentages: $said"
  sort -n -c <<<"$said" 2>/dev/null || fail "data-web-$i: CopyProgress out of order: $said"
done
ok "Events CopyProgress: $(k get events --field-selector involvedObject.name=web,reason=CopyProgress -o name | wc -l), e.g. '$(k get events --field-selector involvedObject.name=web,reason=CopyProgress -o jsonpath='{.items[0].message}')'"

e2e_wait_completed web 300
reads=$(e2e_metric controller.log 'stsresize_api_requests_total{code="200",verb="pod_log"}')
per_minute=$(awk -v n="$reads" -v s="$copying" 'BEGIN { printf "%.0f", n * 60 / s }')
allowed=$((2 * (copying / 2 + 2) + 4))
((reads <= allowed)) || fail "$reads reads of copy logs in ${copying}s of copying (2 copies, every 2s: at most $allowed)"
ok "cost: $reads log reads in ${copying}s of copying ($per_minute a minute for 2 copies read every 2 s; 6 a copy a minute at the default 10 s)"
e2e_assert_resized web 2 2Gi
e2e_stop_controller "$controller_pid"
