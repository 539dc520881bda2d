#!/bin/bash
# make deb: vbblk-dkms_<version>_all.deb with dpkg-buildpackage (debian/).
# Builds from a copy of the files git tracks or would track (not ignored),
# so build output and test results in the tree never get in and a tree that
# was never built works. The version comes from git:
# 0.0~git<commit date>.<short hash>, "+dirty" when that copy is not HEAD's.
#
#   scripts/build-deb.sh [OUTDIR]      (default: the top of the tree)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$repo}" && cd "${1:-$repo}" && pwd)

git=(git -C "$repo")
date=$(TZ=UTC "${git[@]}" log -1 --date=format-local:%Y%m%d --format=%cd)
version=0.0~git$date.$("${git[@]}" rev-parse --short=7 HEAD)
[ -z "$("${git[@]}" status --porcelain)" ] || version+=+dirty

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/vbblk-$version
mkdir "$src"
# (a tracked file deleted in the working tree is left out)
"${git[@]}" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
	tar -C "$repo" --null -T - -cf - | tar -C "$src" -xf -

# the changelog's top entry carries this version and the commit's date, so
# two builds of one commit give the same package (SOURCE_DATE_EPOCH)
when=$("${git[@]}" log -1 --format=%cD)
sed -i -e "1s/(.*)/($version)/" -e "0,/^ -- /s/^\( -- .*>  \).*/\1$when/" "$src/debian/changelog"

echo "build-deb: vbblk-dkms $version (log: $out/vbblk-dkms_${version}_build.log)"
if ! (cd "$src" && dpkg-buildpackage -b -us -uc) > "$out/vbblk-dkms_${version}_build.log" 2>&1; then
	tail -n 20 "$out/vbblk-dkms_${version}_build.log" >&2
	echo "build-deb: dpkg-buildpackage failed (scripts/install-deps.sh installs debhelper, dh-dkms)" >&2
	exit 1
fi
deb=vbblk-dkms_${version}_all.deb
mv "$tmp/$deb" "$out/"
rm -f "$out/vbblk-dkms_${version}_build.log"
echo "build-deb: $out/$deb"
