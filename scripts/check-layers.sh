#!/bin/bash
# Layer check: no object of vbblk.ko calls (or takes the address of) a
# function defined in its own layer's other files or in a layer above it.
# The layers, top first, as vbblk.h describes them. Run after a build, in
# the build directory: scripts/check-layers.sh [DIR]. Exit 1 on a finding.
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$dir"

LAYERS=(
	"core: virtio_blk_core vbblk_stats"
	"ioctl: vbblk_ioctl"
	"scsi: vbblk_scsi"
	"sg: vbblk_sg"
	"paths: virtio_blk_bio virtio_blk_rq vbblk_uring"
	"batch: virtio_blk_batch"
	"bio_cmd: virtio_blk_bio_cmd"
	"cmd: vbblk_cmd"
	"ring: virtio_ring_split"
	"trace: vbblk_trace"
)

# the objects kbuild linked into the module
[ -f vbblk.mod ] || { echo "check-layers: no vbblk.mod in $dir: build first" >&2; exit 1; }
objs=$(tr " " "\n" <vbblk.mod | sed -n "s|^.*/||; s|\.o$||p")

declare -A level name
for i in "${!LAYERS[@]}"; do
	for f in ${LAYERS[$i]#*:}; do
		level[$f]=$i
		name[$f]=${LAYERS[$i]%%:*}
	done
done

declare -A owner
for o in $objs; do
	[ -n "${level[$o]:-}" ] ||
		{ echo "check-layers: $o.c is in no layer: add it to $0 and vbblk.h"; exit 1; }
	for s in $(nm --defined-only "$o.o" | awk '$2 == "T" { print $3 }'); do
		owner[$s]=$o
	done
done

fail=0
for o in $objs; do
	for s in $(nm --undefined-only "$o.o" | awk '{ print $2 }'); do
		d=${owner[$s]:-}
		[ -n "$d" ] && [ "$d" != "$o" ] || continue
		if [ "${level[$d]}" -le "${level[$o]}" ]; then
			echo "check-layers: $o.c (${name[$o]}) uses $s of $d.c (${name[$d]})"
			fail=1
		fi
	done
done
[ $fail = 0 ] && echo "check-layers: $(wc -w <<<"$objs") files, ${#LAYERS[@]} layers, every call goes down"
exit $fail
