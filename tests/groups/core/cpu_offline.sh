# cpu_offline: take CPU 1 offline and online again, over and over, while
# sequential writes stream; no hang, the data verifies. In bio mode the
# device is throttled (QMP) so that it, not the TCG guest, is the
# bottleneck: stream batches are then pending on the CPUs while they go
# away (checked: bios were merged during the test). Such a batch is
# normally sent before the CPU's hotplug callback runs (the migrated
# task's plug is flushed, completions send stream batches); the callback
# is the last resort, so its count is only reported.
. /tests/lib.sh
[ -e /sys/devices/system/cpu/cpu1/online ] || fail "guest has no hot-pluggable cpu1"
drv_load
d=$(disk_by_serial CPU-1)
cpu1() { echo "$1" > /sys/devices/system/cpu/cpu1/online || fail "cpu1 online=$1"; }
bio=
[ -d /sys/block/$d/vbblk ] && [ ! -d /sys/block/$d/mq ] && bio=1
if [ -n "$bio" ]; then
	throttle cpuoff 1000
	off0=$(cat /sys/block/$d/vbblk/dispatch_cpu_offline)
	m0=$(cat /sys/block/$d/vbblk/merged)
fi

fio --name=cpuoff --filename=/dev/$d --direct=1 --ioengine=libaio --iodepth=32 \
	--rw=write --bs=4k --size=32m --numjobs=2 --offset_increment=32m \
	--verify=crc32c --verify_fatal=1 --loops=3 > /tmp/fio.out 2>&1 &
pid=$!
i=0
t0=$(date +%s)
while kill -0 $pid 2>/dev/null; do
	cpu1 0; sleep 0.3; cpu1 1; sleep 0.3
	i=$((i + 1))
	# fio takes about 20 s: 150 s is a hang, shown before the host's timeout
	if [ $(($(date +%s) - t0)) -gt $((150 * VBSCALE)) ]; then
		log "fio still running after $((150 * VBSCALE)) s ($i cycles): driver and task state"
		grep -H . /sys/block/$d/inflight /sys/block/$d/vbblk/* 2>/dev/null
		for t in /proc/[0-9]*/task/*; do
			[ "$(cat $t/comm 2>/dev/null)" = fio ] || continue
			echo "$t: $(cat $t/wchan 2>/dev/null)"
			cat $t/stack 2>/dev/null
		done
		fail "fio hung during cpu offline/online"
	fi
done
wait $pid || { cat /tmp/fio.out; fail "fio failed during cpu offline/online"; }
grep -q 'verify: bad' /tmp/fio.out && { cat /tmp/fio.out; fail "verify errors"; }
log "$i offline/online cycles during I/O"
[ "$i" -ge 3 ] || fail "only $i cycles ran: fio ended too soon to test anything"
if [ -n "$bio" ]; then
	throttle cpuoff 0
	m=$(($(cat /sys/block/$d/vbblk/merged) - m0))
	off=$(($(cat /sys/block/$d/vbblk/dispatch_cpu_offline) - off0))
	log "bios merged into held batches: $m; batches sent by the offline callback: $off"
	[ "$m" -gt 0 ] || fail "no batch was ever held: the test did not run with batches pending"
fi
log "cpu offline ok"
