#!/bin/bash
# Fetch Debian's own kernel of another suite (default: unstable) for the
# guest tests, and a tree to build modules against it, into the kernel cache:
# tests/run KERNEL=7.2 and bench/compare KERNEL=7.2 use it.
#
#   scripts/debian-kernel.sh SERIES       SERIES: upstream series, e.g. 7.2
#
# DEBIAN_SUITE names another suite than unstable (e.g. experimental).
# The machine's apt configuration is not touched: a private sources list
# (its archive URL copied from the machine's own sources), lists and
# package cache under the kernel cache; packages are unpacked with dpkg -x,
# never installed. What is booted is Debian's image and its modules (the
# stock virtio_blk is what users of that kernel run). Debian's headers
# cannot build here (their kbuild tools want a newer C library, their
# config gcc-16), so modules are built against linux-source-VERSION of the
# same upload, configured with the image's config and given the headers'
# Module.symvers: `make olddefconfig` with gcc-12 may only change what
# depends on the toolchain (compiler, assembler, pahole, Rust), which the
# script checks; anything else stops it. The vermagic of a module built
# there must equal the image's.
#
# Result in $VBBLK_KERNEL_CACHE/VERSION (as scripts/build-kernel.sh):
#   vmlinuz  release  build/ (KDIR)  modroot/lib/modules/<release>
#   debian   the packages it came from    config.diff  olddefconfig's changes
#   sparse   the suite's sparse, built where the machine's is too old for the tree
#   key      the inputs; nothing is fetched or rebuilt while they match
# and $VBBLK_KERNEL_CACHE/linux-source-SERIES.tar.xz, the source as Debian
# ships it: scripts/build-kernel.sh NAME-SERIES (e.g. debug-7.2) builds it.
# Offline, a cached kernel is used as it is.
set -euo pipefail

CACHE=${VBBLK_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vbblk-kernels}
SUITE=${DEBIAN_SUITE:-unstable}
RECIPE=1
die() { echo "debian-kernel: $*" >&2; exit 1; }

SERIES=${1:-}
[[ $SERIES =~ ^[0-9]+\.[0-9]+$ ]] || die "usage: $0 SERIES (e.g. 7.2)"
dir=$CACHE/$SERIES
apt=$CACHE/apt-$SUITE
srctar=$CACHE/linux-source-$SERIES.tar.xz
t0=$SECONDS
# One at a time per suite: a full tests/run fetches for the debug kernel's
# build and the `kernels` test at once, into the same lists and cache.
mkdir -p "$CACHE"
exec 9>"$apt.lock"
flock 9

# The archive the machine already uses for Debian itself (deb822 or
# one-line sources), with the suite replaced.
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		awk -v RS= '/(^|\n)Suites:[^\n]*[^-a-z](bookworm|trixie|stable)([ \n]|$)/ &&
			!/Suites:[^\n]*-security/ {
			if (match($0, /URIs: *[^ \n]+/)) {
				u = substr($0, RSTART, RLENGTH); sub(/URIs: */, "", u); print u; exit } }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -e "$f" ] || continue
		awk '$1 == "deb" && $0 !~ /security/ && $0 ~ /debian/ {
			for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' "$f"
	done
}

APT_OPTS=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
	-o Debug::NoLocking=1 -o APT::Sandbox::User=root)

pkgver() { apt-cache "${APT_OPTS[@]}" show "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1; }

online=1
url=$(mirror | head -n 1)
[ -n "$url" ] || die "no Debian archive in /etc/apt/sources.list{,.d}"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
echo "deb $url $SUITE main" > "$apt/sources.list"
echo "debian-kernel: apt-get update ($url $SUITE, private lists in $apt)"
if ! apt-get "${APT_OPTS[@]}" -qq update >"$apt/update.log" 2>&1; then
	online=0
	tail -n 3 "$apt/update.log" >&2
fi
rel=
if [ "$online" = 1 ]; then
	rel=$(apt-cache "${APT_OPTS[@]}" pkgnames linux-image-"$SERIES". 2>/dev/null |
		sed -n "s/^linux-image-\($SERIES\.[0-9]*+deb[0-9]*-amd64\)$/\1/p" | sort -V | tail -n 1)
	[ -n "$rel" ] || online=0
fi
if [ "$online" = 0 ]; then
	[ -f "$dir/vmlinuz" ] && [ -f "$dir/key" ] ||
		die "cannot reach the $SUITE archive and no cached $SERIES kernel"
	echo "debian-kernel: archive unreachable: using the cached $(cat "$dir/release")"
	exit 0
fi

pkgs=("linux-image-$rel" "linux-binary-$rel" "linux-modules-$rel" "linux-base-$rel"
	"linux-headers-$rel" "linux-source-$SERIES")
vers=()
for p in "${pkgs[@]}"; do
	v=$(pkgver "$p")
	[ -n "$v" ] || die "$p is not in $SUITE"
	vers+=("$p=$v")
done
# The source must be the upload the image was built from.
sv=$(pkgver "linux-source-$SERIES") iv=$(pkgver "linux-modules-$rel")
[ "$sv" = "$iv" ] || die "linux-source-$SERIES $sv is not the upload of $rel ($iv)"

key=$( { echo "recipe $RECIPE"; printf '%s\n' "${vers[@]}"; gcc --version | head -n 1
	sha256sum "$0" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1)
if [ -f "$dir/key" ] && [ "$(cat "$dir/key")" = "$key" ] && [ -f "$dir/vmlinuz" ] &&
	[ -f "$srctar" ]; then
	echo "debian-kernel: $SERIES is up to date: $rel in $dir"
	exit 0
fi

# Prepared where it stays (kbuild records paths); complete once key exists.
echo "debian-kernel: fetching ${vers[*]}"
rm -rf "$dir"
mkdir -p "$dir/debs" "$dir/root"
(cd "$dir/debs" && apt-get "${APT_OPTS[@]}" -qq download "${vers[@]}") ||
	die "apt-get download failed"
for d in "$dir"/debs/*.deb; do
	dpkg -x "$d" "$dir/root"
done
root=$dir/root
mods=$root/usr/lib/modules/$rel
[ -d "$mods" ] || mods=$root/lib/modules/$rel
hdr=$root/usr/src/linux-headers-$rel
[ -f "$mods/vmlinuz" ] || [ -f "$root/boot/vmlinuz-$rel" ] || die "no vmlinuz in linux-binary-$rel"
[ -f "$hdr/.config" ] && [ -f "$hdr/Module.symvers" ] || die "linux-headers-$rel has no .config/Module.symvers"

echo "debian-kernel: unpacking linux-source-$SERIES"
mkdir -p "$dir/build"
tar -xf "$root/usr/src/linux-source-$SERIES.tar.xz" -C "$dir/build" --strip-components=1
build=$dir/build
cp "$hdr/.config" "$build/.config"
make -s -C "$build" olddefconfig >"$dir/config.log" 2>&1 ||
	{ tail -n 20 "$dir/config.log"; die "olddefconfig failed"; }
"$build/scripts/diffconfig" "$hdr/.config" "$build/.config" > "$dir/config.diff" || true
# Only the toolchain may differ: the compiler's, assembler's, linker's and
# pahole's versions and what they offer, and Rust (no bindgen here) with
# what needs it. Anything else could change a structure a module sees.
toolchain='^[-+ ](CC_|GCC_|AS_|LD_|PAHOLE_|RUST|BINDGEN|TOOLS_SUPPORT_|OPENSSL_SUPPORTS_|'
toolchain+='MODULE_SIG_KEY_TYPE_MLDSA|DEBUG_INFO_COMPRESSED_ZSTD |[A-Z0-9_]*RUST[A-Z0-9_]* |'
toolchain+='AMCC_QT2025_PHY |NOVA_CORE |DRM_PANIC_SCREEN_QR_)'
if grep -vE "$toolchain" "$dir/config.diff" | grep -q .; then
	grep -vE "$toolchain" "$dir/config.diff" >&2
	die "olddefconfig changed options beyond the toolchain's (above): the tree would not match $rel"
fi
echo "debian-kernel: config: $(wc -l < "$dir/config.diff") toolchain options differ from the image's (config.diff)"
echo "debian-kernel: make modules_prepare (KERNELRELEASE=$rel)"
make -s -C "$build" -j"$(($(nproc) + 1))" KERNELRELEASE="$rel" modules_prepare \
	>"$dir/prepare.log" 2>&1 || { tail -n 20 "$dir/prepare.log"; die "modules_prepare failed"; }
# Debian's symbol versions, and the vmlinux that module BTF is based on.
cp "$hdr/Module.symvers" "$build/"
[ -f "$hdr/vmlinux" ] && cp "$hdr/vmlinux" "$build/"

# The modules, as the guest's /lib/modules/<release>, with their index.
mkdir -p "$dir/modroot/lib/modules"
mv "$mods" "$dir/modroot/lib/modules/$rel"
m=$dir/modroot/lib/modules/$rel
if [ -f "$m/vmlinuz" ]; then
	mv "$m/vmlinuz" "$dir/vmlinuz"
else
	cp "$root/boot/vmlinuz-$rel" "$dir/vmlinuz"
fi
rm -f "$m/build" "$m/source"
depmod -b "$dir/modroot" "$rel"

# The check that the tree matches: a module built there carries the
# vermagic of the image's own.
want=$(modinfo -F vermagic "$(find "$m" -name 'virtio_blk.ko*' | head -n 1)")
t=$dir/vermagic-check
mkdir -p "$t"
printf '#include <linux/module.h>\nMODULE_LICENSE("GPL");\n' > "$t/vmcheck.c"
echo 'obj-m := vmcheck.o' > "$t/Kbuild"
make -s -C "$build" M="$t" CONFIG_MODULE_SIG_ALL= modules >"$t/build.log" 2>&1 ||
	{ tail -n 20 "$t/build.log"; die "a test module does not build against the prepared tree"; }
got=$(modinfo -F vermagic "$t/vmcheck.ko")
[ "$got" = "$want" ] || die "vermagic of a module built here is '$got', the image's is '$want'"
echo "debian-kernel: vermagic matches the image's: $got"
mv "$root/usr/src/linux-source-$SERIES.tar.xz" "$srctar"
rm -rf "$t" "$dir/debs" "$dir/root"

# sparse: where the kernel wants a newer one than the machine's (its
# checker-valid.sh test fails), build the suite's from source, for C=2
# builds against this tree (make check-style, the kernels test).
if ! command -v sparse >/dev/null ||
	[ "$("$build/scripts/checker-valid.sh" sparse -D__x86_64__ -m64 2>/dev/null)" != 1 ]; then
	echo "debian-kernel: the machine's sparse is too old for $SERIES: building $SUITE's"
	echo "deb-src $url $SUITE main" > "$apt/sources-src.list"
	SRC_OPTS=("${APT_OPTS[@]}" -o Dir::Etc::SourceList="$apt/sources-src.list"
		-o Dir::State::Lists="$apt/lists-src")
	mkdir -p "$apt/lists-src/partial" "$dir/sparse-src"
	apt-get "${SRC_OPTS[@]}" -qq update >"$dir/sparse-src/update.log" 2>&1 ||
		die "apt-get update (deb-src) failed: $dir/sparse-src/update.log"
	(cd "$dir/sparse-src" && apt-get "${SRC_OPTS[@]}" -qq source --download-only sparse) \
		>/dev/null 2>&1 || die "cannot fetch $SUITE's sparse source"
	tar -xzf "$dir"/sparse-src/sparse_*.orig.tar.gz -C "$dir/sparse-src"
	make -s -C "$dir"/sparse-src/sparse-*/ -j"$(nproc)" sparse >"$dir/sparse-src/build.log" 2>&1 ||
		die "sparse does not build: $dir/sparse-src/build.log"
	cp "$dir"/sparse-src/sparse-*/sparse "$dir/sparse"
	rm -rf "$dir/sparse-src"
	[ "$("$build/scripts/checker-valid.sh" "$dir/sparse" -D__x86_64__ -m64)" = 1 ] ||
		die "$SUITE's sparse does not pass $SERIES's checker-valid.sh either"
	echo "debian-kernel: sparse for $SERIES in $dir/sparse ($(apt-cache "${SRC_OPTS[@]}" showsrc sparse |
		sed -n 's/^Version: //p' | head -n 1))"
fi
printf '%s\n' "${vers[@]}" > "$dir/debian"
echo "$rel" > "$dir/release"
echo "$key" > "$dir/key"
echo "debian-kernel: $rel ready in $dir ($((SECONDS - t0)) s)"
