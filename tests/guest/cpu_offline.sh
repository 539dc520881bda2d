# cpu_offline: take CPU 1 offline and online again, over and over, while
# sequential writes stream (batches are held on that CPU); no hang, the
# data verifies.
. /tests/lib.sh
[ -e /sys/devices/system/cpu/cpu1/online ] || fail "guest has no hot-pluggable cpu1"
drv_load
d=$(disk_by_serial CPU-1)
cpu1() { echo "$1" > /sys/devices/system/cpu/cpu1/online || fail "cpu1 online=$1"; }

fio --name=cpuoff --filename=/dev/$d --direct=1 --ioengine=libaio --iodepth=32 \
	--rw=write --bs=4k --size=32m --numjobs=2 --offset_increment=32m \
	--verify=crc32c --verify_fatal=1 --loops=3 > /tmp/fio.out 2>&1 &
pid=$!
i=0
while kill -0 $pid 2>/dev/null; do
	cpu1 0; sleep 0.3; cpu1 1; sleep 0.3
	i=$((i + 1))
done
wait $pid || { cat /tmp/fio.out; fail "fio failed during cpu offline/online"; }
grep -q 'verify: bad' /tmp/fio.out && { cat /tmp/fio.out; fail "verify errors"; }
log "$i offline/online cycles during I/O"
[ "$i" -ge 3 ] || fail "only $i cycles ran: fio ended too soon to test anything"
[ -r /sys/block/$d/vbblk/dispatch_cpu_offline ] &&
	log "dispatch_cpu_offline=$(cat /sys/block/$d/vbblk/dispatch_cpu_offline)"
log "cpu offline ok"
