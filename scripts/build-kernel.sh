#!/bin/bash
# Build a named guest kernel from Debian's linux-source-6.1 into a cache outside
# the repository, for tests/run KERNEL=NAME.
#
#   scripts/build-kernel.sh NAME      NAME: debug | kcsan | guest
#   scripts/build-kernel.sh NAME-SERIES   the same from Debian's linux-source-SERIES
#                                     of unstable, e.g. debug-7.2 (the tarball is
#                                     fetched by scripts/debian-kernel.sh SERIES)
#   scripts/build-kernel.sh SERIES    Debian's kernel of that series, e.g. 7.2
#                                     (scripts/debian-kernel.sh: fetched, not built)
#   scripts/build-kernel.sh --path NAME   print the cache directory of NAME
#   scripts/build-kernel.sh --fragments NAME   print NAME's fragments, in order
#
# Config: allnoconfig + scripts/kernel/guest.config + scripts/kernel/NAME.config
# (guest alone for NAME=guest); for NAME-SERIES each followed by its
# override for that series where there is one (guest-SERIES.config,
# NAME-SERIES.config): where a symbol is set twice the later line counts,
# and `=n` holds for a symbol the series no longer has. Every line that
# counts must hold in the resulting .config, or the build stops and says
# which did not.
#
# Result in $VBBLK_KERNEL_CACHE/NAME (default ~/.cache/vbblk-kernels/NAME):
#   vmlinuz   the bzImage          release   its `uname -r`
#   build/    the object tree: KDIR for external modules (make KDIR=...)
#   modroot/  modules_install root (lib/modules/<release>)
#   key       hash of the inputs; the build is skipped while it matches
# Inputs: the source tarball, the CONFIG_ lines that count, the
# compiler, and RECIPE below (bump it when the way of building changes). A
# changed input rebuilds incrementally in the same object tree.
# JOBS=N overrides the make parallelism (default: CPUs + 1).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VBBLK_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vbblk-kernels}
TARBALL=${LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
FRAGS=$REPO/scripts/kernel
RECIPE=1

die() { echo "build-kernel: $*" >&2; exit 1; }

[ "${1:-}" = --path ] && { [ -n "${2:-}" ] || die "usage: $0 --path NAME"; echo "$CACHE/$2"; exit 0; }
list=0
[ "${1:-}" = --fragments ] && { list=1; shift; }
NAME=${1:-}
[ -n "$NAME" ] || die "usage: $0 NAME[-SERIES] (debug, kcsan or guest; or a Debian series such as 7.2)"
# A series number names Debian's own kernel of that series, fetched (not built).
[[ $NAME =~ ^[0-9]+\.[0-9]+$ ]] && exec "$REPO/scripts/debian-kernel.sh" "$NAME"
base=$NAME series=
[[ $NAME =~ ^(.+)-([0-9]+\.[0-9]+)$ ]] && base=${BASH_REMATCH[1]} series=${BASH_REMATCH[2]}
[ "$base" = guest ] || [ -f "$FRAGS/$base.config" ] ||
	die "no config fragment $FRAGS/$base.config (known: $(cd "$FRAGS" && ls *.config | grep -v -- "-[0-9]" | sed "s/\.config//" | tr "\n" " ")each also as NAME-SERIES)"

names=(guest)
[ "$base" = guest ] || names+=("$base")
frags=()
for f in "${names[@]}"; do
	frags+=("$FRAGS/$f.config")
	if [ -n "$series" ] && [ -f "$FRAGS/$f-$series.config" ]; then
		frags+=("$FRAGS/$f-$series.config")
	fi
done
[ $list = 0 ] || { printf '%s\n' "${frags[@]}"; exit 0; }
# the CONFIG_ lines that count: the last of each symbol
effective() { grep -h '^CONFIG_' "${frags[@]}" | tac | awk -F= '!seen[$1]++' | tac; }

if [ -n "$series" ]; then
	# Debian's source of that series, as scripts/debian-kernel.sh keeps it
	"$REPO/scripts/debian-kernel.sh" "$series" ||
		die "linux-source-$series not available (scripts/debian-kernel.sh $series failed)"
	TARBALL=$CACHE/linux-source-$series.tar.xz
	[ -f "$TARBALL" ] || die "$TARBALL missing (scripts/debian-kernel.sh $series keeps it there)"
fi
[ -f "$TARBALL" ] || die "$TARBALL missing (apt-get install linux-source-6.1, or run scripts/install-deps.sh)"
dir=$CACHE/$NAME
# the series' sparse, for C=2 builds against this tree (make check-style)
if [ -n "$series" ] && [ -x "$CACHE/$series/sparse" ]; then
	mkdir -p "$dir"
	ln -sfn "../$series/sparse" "$dir/sparse"
fi
key=$( { echo "recipe $RECIPE"; sha256sum "$TARBALL" | cut -d' ' -f1
	effective; gcc --version | head -n1; } | sha256sum | cut -d' ' -f1)
if [ -f "$dir/key" ] && [ "$(cat "$dir/key")" = "$key" ] && [ -f "$dir/vmlinuz" ]; then
	echo "build-kernel: $NAME is up to date: $(cat "$dir/release") in $dir"
	exit 0
fi

t0=$SECONDS
mkdir -p "$CACHE"
# one unpacked source per tarball, shared by every NAME (built with O=)
skey=$(sha256sum "$TARBALL" | cut -c1-16)
src=$CACHE/src-$skey
if [ ! -f "$src/.unpacked" ]; then
	echo "build-kernel: unpacking $TARBALL"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xf "$TARBALL" -C "$src.tmp" --strip-components=1
	touch "$src.tmp/.unpacked"
	mv "$src.tmp" "$src"
fi

echo "build-kernel: configuring $NAME (allnoconfig + ${frags[*]##*/})"
rm -rf "$dir/modroot" "$dir/vmlinuz" "$dir/key" "$dir/release"
fresh=1
[ -f "$dir/build/vmlinux" ] && fresh=0
mkdir -p "$dir/build"
effective > "$dir/fragment.config"
make -s -C "$src" O="$dir/build" KCONFIG_ALLCONFIG="$dir/fragment.config" allnoconfig \
	> "$dir/config.log" 2>&1 || { tail -n 20 "$dir/config.log"; die "allnoconfig failed"; }
bad=0
while IFS= read -r l; do
	k=${l%%=*}
	if [ "${l#*=}" = n ]; then
		got=$(grep "^$k=" "$dir/build/.config" || true)
	elif grep -qxF "$l" "$dir/build/.config"; then
		got=
	else
		got=$(grep "^$k=" "$dir/build/.config" || echo "not set")
	fi
	[ -z "$got" ] && continue
	echo "build-kernel: $l did not hold: $got (a dependency is missing from the fragment)" >&2
	bad=1
done < "$dir/fragment.config"
[ $bad = 0 ] || die "config of $NAME does not match its fragments"

jobs=${JOBS:-$(( $(nproc) + 1 ))}
kind="a full build"
[ $fresh = 1 ] || kind="an incremental build (the object tree is kept)"
echo "build-kernel: building $NAME with $jobs jobs, $kind (log: $dir/build.log); progress every 30 s"
# kbuild prints one line per step; show the count and the latest now and then
# so that a long build does not look hung
prev=0
[ $fresh = 0 ] || prev=$(cat "$CACHE/$NAME.steps" 2>/dev/null || echo 0)
n=0
last=$SECONDS
set +e
make -C "$src" O="$dir/build" -j"$jobs" bzImage modules 2>&1 | tee "$dir/build.log" |
	while IFS= read -r line; do
		case $line in "  "[A-Z]*) n=$((n + 1)) ;; esac
		if [ $((SECONDS - last)) -ge 30 ]; then
			last=$SECONDS
			pct=
			[ "$prev" -gt 0 ] && pct=" (~$((n * 100 / prev))% of the last build's $prev)"
			printf 'build-kernel: %s: %dm%02ds, %d steps%s: %s\n' "$NAME" \
				$(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)) "$n" "$pct" "${line:0:70}"
		fi
		echo "$n" > "$dir/steps"
	done
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" != 0 ]; then
	grep -E 'error|Error' "$dir/build.log" | head -n 20 >&2
	die "make failed for $NAME (rc $rc), see $dir/build.log"
fi
# a full build's step count estimates the next full build's progress
if [ $fresh = 1 ]; then mv "$dir/steps" "$CACHE/$NAME.steps"; else rm -f "$dir/steps"; fi
make -s -C "$src" O="$dir/build" INSTALL_MOD_PATH="$dir/modroot" INSTALL_MOD_STRIP=1 \
	modules_install > "$dir/modules_install.log" 2>&1 ||
	{ tail -n 20 "$dir/modules_install.log"; die "modules_install failed"; }
make -s -C "$src" O="$dir/build" kernelrelease > "$dir/release"
cp "$dir/build/arch/x86/boot/bzImage" "$dir/vmlinuz"
echo "$key" > "$dir/key"
echo "build-kernel: $NAME built in $(((SECONDS - t0) / 60))m$(((SECONDS - t0) % 60))s: $(cat "$dir/release") in $dir"
