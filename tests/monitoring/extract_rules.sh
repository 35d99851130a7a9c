#!/usr/bin/env bash
# Prints the rules of deploy/monitoring/prometheus-rule.yaml as promtool reads them: the
# PrometheusRule's spec (its groups), one level of indentation less.
#   extract_rules.sh PROMETHEUS_RULE_YAML
set -euo pipefail
sed -n '/^spec:$/,$p' "${1:?the PrometheusRule file}" | tail -n +2 | sed 's/^  //'
