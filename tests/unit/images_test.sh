#!/usr/bin/env bash
# scripts/images builds both images here and they are what they say: built twice, the same
# bytes (reproducible: same binary, same Debian packages, same SOURCE_DATE_EPOCH); the
# controller's configuration (user 65532, entrypoint stsresize, cmd run) and its root filesystem
# holding no shared object but those the binary links (ldd) and their links; the sync image's
# shell. Leaves the first build in OUT_DIR for the tests that run the images
# (Deploy_HelmInstallFromImagesResizesAsItsServiceAccount).
#
#   images_test.sh OUT_DIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?the directory for the images}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

"$repo/scripts/images" --no-bootstrap --out "$out" || fail "scripts/images failed"
binary=$repo/build-release/bin/stsresize
"$repo/scripts/images" --no-bootstrap --binary "$binary" --out "$work/again" 2>/dev/null ||
  fail "scripts/images failed the second time"
for f in stsresize.tar stsresize-sync.tar digests; do
  cmp -s "$out/$f" "$work/again/$f" || fail "$f differs between two builds of the same inputs"
done
ok "built twice, the same bytes: $(tr '\n' ' ' <"$out/digests")"

config=$(skopeo inspect --config "docker-archive:$out/stsresize.tar")
[[ $(jq -c '[.config.User, .config.Entrypoint, .config.Cmd]' <<<"$config") == '["65532:65532",["/usr/local/bin/stsresize"],["run"]]' ]] ||
  fail "the controller's configuration: $(jq -c .config <<<"$config")"
[[ $(jq -r .created <<<"$config") != 0001-* ]] || fail "no creation time"
mkdir -p "$work/controller" && tar -C "$work/controller" -xf "$out/stsresize.tar"
mkdir -p "$work/rootfs"
for layer in $(jq -r '.[0].Layers[]' "$work/controller/manifest.json"); do tar -C "$work/rootfs" -xf "$work/controller/$layer"; done
linked=$(ldd "$binary" | awk '$2 == "=>" { print $1 } $1 ~ /^\// { n = split($1, p, "/"); print p[n] }' | sort -u)
shipped=$(find "$work/rootfs" -name '*.so*' ! -type d -printf '%f\n' | sort -u)
# libz.so.1.2.13 is the file libz.so.1 links to: compared by the name before ".so".
linked_bases=$(sed 's/\.so.*//' <<<"$linked")
for name in $shipped; do
  grep -qxF "${name%%.so*}" <<<"$linked_bases" || fail "the controller image ships $name, which the binary does not link"
done
for name in $linked; do
  grep -qxF "$name" <<<"$shipped" || fail "the binary links $name, which the image does not ship"
done
bwrap --die-with-parent --unshare-all --bind "$work/rootfs" / --proc /proc --dev /dev --tmpfs /tmp \
  --uid 65532 --gid 65532 --unshare-user --clearenv /usr/local/bin/stsresize version >/dev/null ||
  fail "stsresize does not run as 65532 in its own root filesystem"
[[ $(stat -c %u:%g "$work/rootfs/var/lib/stsresize") == 65532:65532 ]] || fail "/var/lib/stsresize is not 65532's"
[[ -s $work/rootfs/etc/ssl/certs/ca-certificates.crt ]] || fail "no CA bundle"
ok "controller: user 65532, entrypoint stsresize run; $(wc -w <<<"$shipped") shared objects, each one the binary links, none missing; runs as 65532 in its own root"

sync=$(skopeo inspect --config "docker-archive:$out/stsresize-sync.tar")
[[ $(jq -r '.config.User // ""' <<<"$sync") == "" ]] || fail "the sync image does not run as root: the copy keeps owners"
ok "sync: runs as root, cmd $(jq -c .config.Cmd <<<"$sync")"
