#!/usr/bin/env bash
# The krew manifest (deploy/krew/stsresize.yaml) installs the plugin with the real krew (built
# from the Go module proxy, tests/tools/go_tool.sh): scripts/plugin-archive packs the binary and
# renders the manifest, `krew install --manifest --archive` installs it into a private
# KREW_ROOT, and the real kubectl then runs `kubectl stsresize`. Also: the archive is the same
# bytes when packed twice, and an archive that does not match the manifest's sha256 is refused.
#
#   krew_install_test.sh STSRESIZE_BINARY
set -euo pipefail
binary=$(readlink -f "${1:?path to the stsresize binary}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

krew=$("$repo/tests/tools/go_tool.sh" krew sigs.k8s.io/krew/cmd/krew@v0.4.3)
mapfile -t made < <("$repo/scripts/plugin-archive" --binary "$binary" --out "$work/one")
archive=${made[0]} manifest=${made[1]}
"$repo/scripts/plugin-archive" --binary "$binary" --out "$work/two" >/dev/null
[[ $(sha256sum <"$archive") == $(sha256sum <"$work/two/$(basename "$archive")") ]] ||
  fail "two packings of one binary differ"
ok "packed twice, same sha256"

export KREW_ROOT=$work/krew
out=$("$krew" install --manifest="$manifest" --archive="$archive" </dev/null 2>&1) ||
  fail "krew install failed: $out"
version=$("$binary" version)
got=$(PATH="$KREW_ROOT/bin:$PATH" kubectl stsresize version 2>&1) || fail "kubectl stsresize version: $got"
[[ $got == "$version" ]] || fail "kubectl stsresize version printed '$got', expected '$version'"
help=$(PATH="$KREW_ROOT/bin:$PATH" kubectl stsresize --help 2>&1)
grep -q '^Usage: kubectl stsresize ' <<<"$help" || fail "the plugin's help does not name it kubectl stsresize: $help"
ok "krew installed it; kubectl stsresize version: $got"

# The same manifest with another archive: krew must refuse it (the sha256 is checked).
cp "$archive" "$work/tampered.tar.gz"
printf 'x' >>"$work/tampered.tar.gz"
KREW_ROOT=$work/krew2 "$krew" install --manifest="$manifest" --archive="$work/tampered.tar.gz" \
  </dev/null >"$work/tampered.log" 2>&1 && fail "krew installed an archive that does not match the sha256"
grep -q 'checksum does not match' "$work/tampered.log" || fail "krew refused the tampered archive for another reason: $(cat "$work/tampered.log")"
ok "an archive that does not match the manifest is refused"
