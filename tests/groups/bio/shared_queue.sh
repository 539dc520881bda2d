# shared_queue: one virtqueue shared by both CPUs of a device throttled to
# 1000 IOPS. CPU 1 keeps 32 random reads queued; CPU 0 writes 100
# sequential 4 KiB blocks at QD1 (O_DIRECT). A write that continues a
# stream may be held for batching, but only for what was in flight when it
# was held, never for as long as the other CPU's load lasts. The writer's
# worst latency is compared with the stock driver's in the same boot, on
# the same disk (vbblk-bind.sh moves it): a starvation check, with bounds
# generous enough for TCG noise (see the end).
. /tests/lib.sh
BG_SECONDS=${BG_SECONDS:-90}	# the reader is stopped once the writer is done

# scenario vdX: the writer's mean and worst completion latency, in
# microseconds, into /tmp/lat
scenario() {
	throttle sq 1000
	fio --name=bg --filename=/dev/$1 --direct=1 --ioengine=libaio --rw=randread \
		--bs=4k --iodepth=32 --size=16m --cpus_allowed=1 --time_based \
		--runtime=$BG_SECONDS > /tmp/bg.out 2>&1 &
	bg=$!
	sleep 3
	fio --name=w --filename=/dev/$1 --direct=1 --ioengine=psync --rw=write \
		--bs=4k --size=400k --offset=32m --cpus_allowed=0 > /tmp/w.out 2>&1 ||
		{ cat /tmp/w.out >&2; fail "writer failed on $1"; }
	# the reader must outlast the writer, or the writer ran on an idle queue
	kill -0 $bg 2>/dev/null || { cat /tmp/w.out /tmp/bg.out >&2; fail "reader ended before the writer: raise BG_SECONDS"; }
	kill $bg
	wait $bg 2>/dev/null || true
	grep -q 'err= 0' /tmp/bg.out || { cat /tmp/bg.out >&2; fail "reader failed on $1"; }
	throttle sq 0
	grep -E ' clat \(' /tmp/w.out
	# ' clat (usec): min=12, max=1182.9k, avg=96429.50, ...': fio scales
	# large values with k/M; the unit is in the parentheses
	awk 'function val(k,   v, m) { v = $0; sub(".*" k "=", "", v); sub(/,.*/, "", v)
			m = 1; if (v ~ /k$/) m = 1000; if (v ~ /M$/) m = 1000000
			sub(/[kM]$/, "", v); return v * m * f }
		/ clat \(/ { u = $2; sub(/.*\(/, "", u); sub(/\).*/, "", u)
			f = (u == "nsec") ? 0.001 : (u == "msec") ? 1000 : (u == "sec") ? 1000000 : 1
			printf "%d %d\n", val("avg"), val("max"); exit }' /tmp/w.out > /tmp/lat
	[ -s /tmp/lat ] || { cat /tmp/w.out; fail "no clat line in fio's output"; }
}

if [ "$DRIVER" = vbblk ]; then
	# the stock driver first, as the reference, then the same disk on vbblk
	modprobe virtio_blk || fail "modprobe virtio_blk"
	d=$(disk_by_serial SQ-1)
	expect_eq "$d driver" "$(basename "$(readlink -f /sys/block/$d/device/driver)")" virtio_blk
	scenario $d
	set -- $(cat /tmp/lat)
	savg=$1 smax=$2
	log "virtio_blk: writer clat mean ${savg} us, max ${smax} us"
	drv_load
	export VBBLK_KO
	d=$(vbblk-bind.sh serial=SQ-1 vbblk) || fail "vbblk-bind.sh serial=SQ-1 vbblk"
	expect_eq "$d virtqueues" "$(vq_count $d)" 1
	scenario $d
	set -- $(cat /tmp/lat)
	avg=$1 max=$2
	log "vbblk ($VBPARAMS): writer clat mean ${avg} us, max ${max} us"
	grep . /sys/block/$d/vbblk/merged /sys/block/$d/vbblk/dispatch_* || true
	# generous: 5x stock's mean (at least 20 ms), 10x its max (at least 500 ms)
	bavg=$((savg * 5)); [ $bavg -ge 20000 ] || bavg=20000
	bmax=$((smax * 10)); [ $bmax -ge 500000 ] || bmax=500000
	[ "$avg" -le "$bavg" ] && [ "$max" -le "$bmax" ] ||
		fail "a QD1 writer sharing a queue with another CPU's reads waited ${avg} us on average, ${max} us at worst (stock: ${savg}, ${smax}; bounds ${bavg}, ${bmax}): starved behind the other CPU's I/O"
else
	drv_load
	d=$(disk_by_serial SQ-1)
	scenario $d
	set -- $(cat /tmp/lat)
	log "virtio_blk: writer clat mean $1 us, max $2 us"
	[ "$2" -le 1000000 ] || fail "stock writer waited $2 us"
fi
log "shared queue ok"
