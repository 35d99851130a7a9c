#!/usr/bin/env bash
# Prints the path of the helm the tests use, built once from the Go module proxy (go_tool.sh).
# Helm 4: the v3 line's newest release is not approved here.
exec "$(dirname "$0")/go_tool.sh" helm helm.sh/helm/v4/cmd/helm@v4.3.2
