#!/bin/bash
# Style gate: W=1 build, sparse (C=2: every file), with and without
# VBBLK_SCSI, the layer order (scripts/check-layers.sh) and checkpatch.pl
# from Debian's linux-source-6.1. Any finding fails. The builds run in a
# temporary copy of the source: a vbblk.ko built here stays. KDIRS="DIR ..."
# builds against each of those kernels (default: the Makefile's KDIR), e.g.
#   KDIRS="$(ls -d /usr/src/linux-headers-*-amd64) \
#          $(scripts/build-kernel.sh --path 7.2)/build" make check-style
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

cache=${VBBLK_CACHE:-$top/.cache}
src=/usr/src/linux-source-6.1.tar.xz
cp_dir=$cache/checkpatch
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	[ -f "$src" ] || { echo "check-style: $src missing (apt-get install linux-source-6.1)" >&2; exit 1; }
	mkdir -p "$cp_dir"
	tar -xaf "$src" -C "$cp_dir" --strip-components=1 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
fi
command -v sparse >/dev/null || { echo "check-style: sparse missing (apt-get install sparse)" >&2; exit 1; }

fail=0
log=$(mktemp)
# The builds run in a copy of the source (what git tracks or would track,
# as the working tree has it), never here: their `make clean` would take
# away the vbblk.ko this tree built. The probes' cache comes along.
src=$(mktemp -d "${TMPDIR:-/tmp}/vbblk-style.XXXXXX")
trap 'rm -rf "$log" "$src"' EXIT
git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf - | tar -C "$src" -xf -
for d in .features tests/kmod/.features; do
	[ ! -d "$d" ] || cp -r "$d" "$src/$d"
done

# clean_build WHAT DIR MAKEARGS...: a C=2 W=1 build of DIR against $kdir
# that must succeed without a finding
clean_build() {
	local what=$1 dir=$2
	shift 2
	make -s -C "$dir" clean KDIR="$kdir" >/dev/null 2>&1 || true
	if ! make -C "$dir" C=2 W=1 CHECK="$chk" KDIR="$kdir" "$@" >"$log" 2>&1; then
		cat "$log"; echo "check-style: $what build failed against $kdir"; exit 1
	fi
	if grep -E 'warning:|error:|not available or not up to date' "$log" |
		grep -v 'Skipping BTF'; then
		echo "check-style: $what compiler/sparse findings above ($kdir)"; fail=1
	fi
}

# (make kdir fails, saying why, when KVER's headers are missing: the
# running kernel's unless KVER= says otherwise)
kdirs=${KDIRS:-$(make -s --no-print-directory kdir)}
for kdir in $kdirs; do
	# a kernel of scripts/debian-kernel.sh may come with the sparse it needs
	chk=sparse
	[ -x "$(dirname "$kdir")/sparse" ] && chk=$(dirname "$kdir")/sparse
	echo "== W=1 + sparse: $kdir ($chk)"
	clean_build vbblk "$src"
	scripts/check-layers.sh "$src" || fail=1
	# The build without the SCSI translation must hold too.
	clean_build "vbblk VBBLK_SCSI=n" "$src" VBBLK_SCSI=n
	scripts/check-layers.sh "$src" || fail=1
	make -s -C "$src" clean KDIR="$kdir" >/dev/null 2>&1 || true
	# The test-only modules (tests/kmod) are kernel code too.
	clean_build tests/kmod "$src/tests/kmod"
done

# A probe that compiles on none of the kernels is broken, not a missing
# API: it would silently pick the other branch everywhere.
set -- ${KDIRS:-}
if [ $# -gt 1 ]; then
	echo "== probes across $# kernels"
	for pd in probe:vbblk_features.h tests/kmod/probe:vbtest_features.h; do
		seen=$(for kdir in "$@"; do
			d=$(scripts/probe-kernel.sh "$kdir" "$src/${pd%%:*}" "${pd#*:}" 2>/dev/null)
			sed -n 's/^#define \(HAVE_[A-Z0-9_]*\) 1$/\1/p' "$d/${pd#*:}"
		done | sort -u)
		for p in "${pd%%:*}"/*.c; do
			m=HAVE_$(basename "$p" .c | tr '[:lower:]' '[:upper:]')
			grep -qx "$m" <<<"$seen" && continue
			# a probe for kernels between the tested ones says so
			if grep -q '^ \* Untested:' "$p"; then
				echo "note: $p compiles on none of KDIRS (untested, as it says)"
			else
				echo "$p compiles on none of KDIRS"; fail=1
			fi
		done
	done
fi

echo "== checkpatch"
cp() { perl "$cp_dir/scripts/checkpatch.pl" --no-tree --quiet --show-types "$@"; }
compat=include/vbblk_compat.h
# Kernel code only: tests/tools holds userspace helpers, tests/kmod the
# test-only modules with their own compat header.
kcompat=tests/kmod/vbtest_compat.h
files=$(git ls-files '*.c' '*.h' | grep -v -e '^tests/' -e "^$compat\$" || true)
files="$files $(git ls-files 'tests/kmod/*.c' 'tests/kmod/*.h' | grep -v "^$kcompat\$" || true)"
# shellcheck disable=SC2086
if ! cp -f $files; then
	echo "check-style: checkpatch findings above"; fail=1
fi
if ! cp -f "$compat"; then
	echo "check-style: checkpatch findings above"; fail=1
fi
# The test modules' compat header keeps one version test (a behaviour).
if ! cp --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f $kcompat; then
	echo "check-style: checkpatch findings above"; fail=1
fi
# Kernel features are tested in include/ only, and there by probe.
if git grep -n 'LINUX_VERSION_CODE\|KERNEL_VERSION(' -- '*.c' '*.h' ':!tests/kmod/vbtest_compat.h'; then
	echo "check-style: version tests above: key on a probe (probe/) instead"; fail=1
fi

scripts/check-docs.sh || fail=1
[ "$fail" = 0 ] && echo "check-style: clean"
exit "$fail"
