#!/bin/sh
# vbblk-compare - fio on one disk under stock virtio_blk, vbblk mode=request
# and vbblk mode=bio, interleaved (A B C A B C ...), in a real guest.
# Prints per job and driver: median IOPS (min-max over rounds), mean
# latency, the ratio to stock, and for vbblk the device commands and
# notifies per fio I/O from /sys/block/vdX/vbblk/. busybox sh compatible.
#
#   vbblk-compare [-r ROUNDS] [-t SECONDS] [-w] DISK JOB.fio...
#     DISK  vdX or serial=XYZ; the disk moves between drivers, so it must
#           have a serial and must not be mounted
#     JOB   fio job files (bench/jobs/*.fio); any job that writes needs -w,
#           and overwrites the disk
#     -r    rounds (default 3), -t seconds per run (default 10)
# Environment: CONFIGS (default "stock request bio"; also bio-nobatch),
# VBBLK_BIND (default: vbblk-bind next to this script, else in PATH),
# VBBLK_KO (insmod path when modprobe cannot find vbblk).
prog=${0##*/}
err() { echo "$prog: error: $*" >&2; exit 1; }
usage() { sed -n '/^#   vbblk-compare/,/^#     -r/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

rounds=3 runtime=10 writes=
while getopts r:t:w o; do
	case $o in
	r) rounds=$OPTARG ;;
	t) runtime=$OPTARG ;;
	w) writes=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
disk=$1; shift
CONFIGS=${CONFIGS:-stock request bio}
here=$(dirname "$(readlink -f "$0")")
if [ -z "$VBBLK_BIND" ]; then
	for b in "$here/vbblk-bind" "$here/vbblk-bind.sh" vbblk-bind vbblk-bind.sh; do
		command -v "$b" >/dev/null 2>&1 && { VBBLK_BIND=$b; break; }
	done
fi
[ -n "$VBBLK_BIND" ] || err "vbblk-bind not found (make install-conf, or set VBBLK_BIND)"
command -v fio >/dev/null || err "fio not found"
case $rounds$runtime in *[!0-9]*) err "-r and -t take whole numbers" ;; esac

for j in "$@"; do
	[ -r "$j" ] || err "cannot read job file $j"
	if grep -Eq '^[[:space:]]*(rw|readwrite)[[:space:]]*=[[:space:]]*(.*write|rw|randrw|trim)' "$j" &&
	   [ -z "$writes" ]; then
		err "$j writes to the disk; pass -w if its data may be destroyed"
	fi
done
for c in $CONFIGS; do
	case $c in stock|request|bio|bio-nobatch) ;; *) err "unknown config $c" ;; esac
done

case $disk in
serial=*) serial=${disk#serial=} ;;
/dev/vd*|vd*) serial=$(cat "/sys/block/${disk#/dev/}/serial" 2>/dev/null) ||
		err "no disk ${disk#/dev/}" ;;
*) usage ;;
esac
[ -n "$serial" ] || err "$disk has no serial: it could not be found again after a move"
start=$(for f in /sys/block/vd*/serial; do
	[ "$(cat "$f" 2>/dev/null)" = "$serial" ] && basename "${f%/serial}"; done)
[ -n "$start" ] || err "no virtio disk with serial $serial"
# the driver to give the disk back to at the end
orig=$(basename "$(readlink -f "/sys/block/$start/device/driver")")

# setup CONFIG: bind the disk to the driver and mode CONFIG asks for; prints vdX
setup() {
	case $1 in
	stock) "$VBBLK_BIND" "serial=$serial" virtio_blk || exit 1; return ;;
	bio-nobatch) m=bio ;;
	*) m=$1 ;;
	esac
	if [ "$(cat /sys/module/vbblk/parameters/mode 2>/dev/null)" != "$m" ]; then
		# the mode is read at probe: reload vbblk, which must hold no other disk
		"$VBBLK_BIND" "serial=$serial" virtio_blk >/dev/null || exit 1
		if [ -d /sys/module/vbblk ]; then
			rmmod vbblk || err "cannot unload vbblk (does it drive other disks?)"
		fi
		modprobe vbblk mode=$m 2>/dev/null || { [ -n "$VBBLK_KO" ] && insmod "$VBBLK_KO" mode=$m; } ||
			err "cannot load vbblk mode=$m (make install, or set VBBLK_KO)"
	fi
	[ "$1" = bio-nobatch ] && b=0 || b=1
	echo $b > /sys/module/vbblk/parameters/batch || err "cannot set batch=$b"
	"$VBBLK_BIND" "serial=$serial" vbblk || exit 1
}

vstat() { cat "/sys/block/$1/vbblk/$2" 2>/dev/null || echo 0; }

res=$(mktemp) || exit 1
trap 'rm -f "$res"' EXIT
echo "$prog: disk serial $serial, configs: $CONFIGS, $rounds round(s) x ${runtime}s per job"
r=1
while [ $r -le "$rounds" ]; do
	for j in "$@"; do
		jn=$(basename "$j" .fio)
		for c in $CONFIGS; do
			d=$(setup $c) || err "cannot set up $c"
			q0=$(vstat "$d" requests) n0=$(vstat "$d" notifies)
			out=$(fio --filename="/dev/$d" --time_based --runtime="$runtime" \
				--output-format=terse --terse-version=3 "$j") || err "fio $j failed on $c"
			q1=$(vstat "$d" requests) n1=$(vstat "$d" notifies)
			# terse v3: 8/49 read/write IOPS, 9/50 runtime (ms), 40/81 mean
			# latency (us); stock has no counters
			echo "$out" | awk -F';' -v j="$jn" -v c="$c" -v r="$r" \
				-v q=$((q1 - q0)) -v n=$((n1 - n0)) '
				$1 == 3 { io += $8 + $49; lat += $8 * $40 + $49 * $81
					  ios += ($8 * $9 + $49 * $50) / 1000 }
				END { v = c != "stock" && ios > 0
					printf "%s %s %d %.0f %.1f %s %s\n", j, c, r, io,
					io ? lat / io : 0, v ? sprintf("%.3f", q / ios) : "-",
					v ? sprintf("%.3f", n / ios) : "-" }' >> "$res"
			echo "  round $r $jn $c: $(tail -n 1 "$res" | cut -d' ' -f4) IOPS" >&2
		done
	done
	r=$((r + 1))
done
"$VBBLK_BIND" "serial=$serial" $orig >/dev/null || echo "$prog: could not move the disk back to $orig" >&2

# median, min, max per job and config; ratio of medians to stock
sort -k1,1 -k2,2 -k4,4n "$res" | awk -v cfgs="$CONFIGS" '
	{ k = $1 " " $2; n[k]++; v[k, n[k]] = $4; lat[k] += $5
	  if ($6 != "-") { rq[k] += $6; nt[k] += $7; nb[k]++ }
	  if (!($1 in seen)) { seen[$1] = 1; jobs[++nj] = $1 } }
	END {
		for (k in n) {
			m = n[k]
			med[k] = (m % 2) ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2
		}
		nc = split(cfgs, cf, " ")
		printf "%-24s %-12s %10s %19s %9s %8s %9s %9s\n", "job", "config", "IOPS",
			"min-max", "lat(us)", "x stock", "cmds/IO", "ntfy/IO"
		for (i = 1; i <= nj; i++) for (c = 1; c <= nc; c++) {
			k = jobs[i] " " cf[c]; m = n[k]; if (!m) continue
			s = jobs[i] " stock"
			printf "%-24s %-12s %10.0f %9.0f-%-9.0f %9.1f %8s %9s %9s\n", jobs[i], cf[c],
				med[k], v[k, 1], v[k, m], lat[k] / m,
				(s in med && med[s]) ? sprintf("%.2f", med[k] / med[s]) : "-",
				nb[k] ? sprintf("%.3f", rq[k] / nb[k]) : "-",
				nb[k] ? sprintf("%.3f", nt[k] / nb[k]) : "-"
		}
	}'
