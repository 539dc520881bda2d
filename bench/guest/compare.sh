# compare: fio against one disk under each driver configuration, interleaved
# (A B C D A B C D ...), in one boot. Writes fio JSON and counters to
# /host/results/. Settings come from /host/config.sh (written by
# bench/compare): ROUNDS, RUNTIME, CONFIGS, WORKLOADS.
. /tests/lib.sh
. /host/config.sh
mkdir -p /host/results
jobs=/tests/jobs

load_cfg() {
	case $1 in
	stock) modprobe virtio_blk ;;
	request) insmod "$VBBLK_KO" mode=request ;;
	bio-nobatch) insmod "$VBBLK_KO" mode=bio batch=0 ;;
	bio) insmod "$VBBLK_KO" mode=bio batch=1 ;;
	*) fail "unknown config $1" ;;
	esac || fail "cannot load config $1"
}
unload_cfg() { if [ "$1" = stock ]; then rmmod virtio_blk; else rmmod vbblk; fi || fail "unload $1"; }

devops() { hostcmd blockstats bench | awk -F= '/^(rd|wr|flush)_operations=/ { n += $2 } END { print n + 0 }'; }
irqs() { # interrupts of the disk's virtio request queues, all CPUs
	awk -v dev="$1" '$0 ~ dev"-req" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i } END { print n + 0 }' /proc/interrupts
}
vstat() { if [ -r /sys/block/$d/vbblk/$1 ]; then cat /sys/block/$d/vbblk/$1; else echo 0; fi; }

r=1
while [ $r -le "$ROUNDS" ]; do
	for cfg in $CONFIGS; do
		load_cfg $cfg
		d=$(disk_by_serial BENCH-1)
		vd=$(basename "$(readlink -f /sys/block/$d/device)")
		for wl in $WORKLOADS; do
			out=/host/results/r$r-$cfg-$wl
			o0=$(devops); i0=$(irqs $vd); n0=$(vstat notifies); b0=$(vstat bios)
			fio --output-format=json --output=$out.json --filename=/dev/$d \
				--runtime="$RUNTIME" $jobs/$wl.fio > $out.err 2>&1 ||
				{ cat $out.err; fail "fio $wl under $cfg"; }
			echo "dev_ops=$(($(devops) - o0)) irqs=$(($(irqs $vd) - i0)) notifies=$(($(vstat notifies) - n0)) bios=$(($(vstat bios) - b0))" > $out.counts
			log "round $r $cfg $wl: $(cat $out.counts)"
		done
		unload_cfg $cfg
		wait_gone $d || fail "$d did not go away"
	done
	r=$((r + 1))
done
echo done > /host/results/complete
