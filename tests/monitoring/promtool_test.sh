#!/usr/bin/env bash
# deploy/monitoring/ checked with the real promtool (built from the Go module proxy by
# tests/tools/go_tool.sh; about 12 minutes on 2 cores the first time, hence CTest runs this only
# with -DSTSRESIZE_PROMTOOL_TESTS=ON): the PrometheusRule's rules pass `promtool check rules`, its
# alerts pass the unit tests of alerts_test.yaml (`promtool test rules`), and every query of the
# Grafana dashboard parses (each made a recording rule, with the dashboard's variables given a
# value, for `promtool check rules`).
#
#   promtool_test.sh [PROMTOOL]      default: built (or taken from the cache)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
promtool=${1:-$("$repo/tests/tools/go_tool.sh" promtool github.com/prometheus/prometheus/cmd/promtool@v0.316.0)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$here/extract_rules.sh" "$repo/deploy/monitoring/prometheus-rule.yaml" >"$work/rules.yaml"
cp "$here/alerts_test.yaml" "$work/"
"$promtool" check rules "$work/rules.yaml"
(cd "$work" && "$promtool" test rules alerts_test.yaml)

{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  jq -r '.panels[].targets[].expr' "$repo/deploy/monitoring/grafana-dashboard.json" |
    sed 's/\$job/.*/g' | awk '{gsub(/'\''/, "'\'''\''"); printf "      - record: dashboard:query_%d\n        expr: '\''%s'\''\n", NR, $0}'
} >"$work/dashboard-queries.yaml"
"$promtool" check rules "$work/dashboard-queries.yaml"
