#!/usr/bin/env bash
# A Job running `rsync -a /src/ /dst/` between two claims copies real files: every file's
# sha256 on the host matches between the two volume directories.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
use_namespace
files=300

step "create claims src and dst (sim-fixed)"
apply_manifest pvc.yaml NAME=src STORAGE_CLASS=sim-fixed SIZE=1Gi
apply_manifest pvc.yaml NAME=dst STORAGE_CLASS=sim-fixed SIZE=1Gi

step "Job fill writes $files files of random data (10 directories) into src"
job_yaml fill "set -e
i=0
while [ \$i -lt $files ]; do
  mkdir -p /src/dir\$((i % 10))/sub
  head -c \$(( (i * 7919) % 20000 + 1 )) /dev/urandom > /src/dir\$((i % 10))/sub/file\$i.bin
  i=\$((i + 1))
done
echo done > /src/FILLED" src:/src | k apply -f - >/dev/null
wait_job fill Complete 120
src=$(pv_dir src)
n=$(find "$src" -type f -name '*.bin' | wc -l)
[[ $n == "$files" ]] || fail "src volume $src holds $n .bin files, want $files"
ok "$n files, $(du -sk "$src" | cut -f1) KiB in $src"

step "Job copy runs rsync -a /src/ /dst/"
job_yaml copy "rsync -a /src/ /dst/" src:/src dst:/dst | k apply -f - >/dev/null
wait_job copy Complete 120
dst=$(pv_dir dst)
[[ $src != "$dst" ]] || fail "src and dst are the same directory"

step "compare sha256 of every file on the host"
sums() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
sums "$src" >"${TMPDIR:-/tmp}/$ns.src"
sums "$dst" >"${TMPDIR:-/tmp}/$ns.dst"
on_exit rm -f "${TMPDIR:-/tmp}/$ns.src" "${TMPDIR:-/tmp}/$ns.dst"
if ! diff -u "${TMPDIR:-/tmp}/$ns.src" "${TMPDIR:-/tmp}/$ns.dst" | head -n 20; then
  fail "the copies differ"
fi
copied=$(wc -l <"${TMPDIR:-/tmp}/$ns.dst")
((copied >= files + 1)) || fail "only $copied files in dst"
ok "$copied files identical (sha256) in $src and $dst"
