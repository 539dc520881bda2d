# soak: mixed verified fio on 2 disks (2 queues each) for SOAK seconds (the
# vbsoak= kernel argument: 90 by default, SOAK_MINUTES=30 for the long run),
# while the cache type flips, disk 2 grows and CPU 1 goes offline and back.
# No error, no hang, and unreclaimable slab ends within 8 MiB of the start.
. /tests/lib.sh
drv_load
SOAK=$(sed -n 's/.*vbsoak=\([0-9]*\).*/\1/p' /proc/cmdline)
SOAK=${SOAK:-180}
a=$(disk_by_serial SOAK-1)
b=$(disk_by_serial SOAK-2)
sunreclaim() { sed -n 's/^SUnreclaim: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
echo 3 > /proc/sys/vm/drop_caches
s0=$(sunreclaim)
log "soak ${SOAK}s on $a and $b; SUnreclaim ${s0} kB"

pids=
job() { # DISK NAME ARGS...: one verified fio job in the background
	_d=$1 _n=$2
	shift 2
	fio --name=$_n --filename=/dev/$_d --direct=1 --ioengine=libaio --time_based \
		--runtime=$SOAK --verify=crc32c --verify_fatal=1 --verify_backlog=64 "$@" \
		> /tmp/soak-$_n.out 2>&1 &
	pids="$pids $!"
}
job $a seq --rw=write --bs=64k --iodepth=16 --iodepth_batch_submit=8 --size=24m --offset=0
job $a rnd --rw=randwrite --bsrange=4k-128k --iodepth=32 --size=24m --offset=32m
job $b mix --rw=randrw --rwmixread=70 --bs=4k --iodepth=16 --size=32m --offset=0
job $b small --rw=randwrite --bs=512 --iodepth=4 --size=8m --offset=40m

end=$(($(date +%s) + SOAK))
n=0 size=64
while [ "$(date +%s)" -lt $end ]; do
	n=$((n + 1))
	echo "write through" > /sys/block/$a/cache_type
	sleep 2
	echo "write back" > /sys/block/$a/cache_type
	echo 0 > /sys/devices/system/cpu/cpu1/online || fail "cpu1 offline"
	sleep 1
	echo 1 > /sys/devices/system/cpu/cpu1/online || fail "cpu1 online"
	if [ $size -lt 256 ]; then
		size=$((size + 16))
		hostcmd resize soak2 ${size}M > /dev/null || fail "resize soak2 ${size}M"
	fi
	sleep 2
done
for p in $pids; do
	wait $p || { cat /tmp/soak-*.out; fail "a soak job failed"; }
done
grep -h "err=" /tmp/soak-*.out | head -n 4
expect_eq "soak2 size after growth" "$(blockdev --getsize64 /dev/$b)" $((size << 20))
echo 3 > /proc/sys/vm/drop_caches
sleep 1
s1=$(sunreclaim)
log "$n cycles of cache_type flips, CPU 1 offline/online and resizes; SUnreclaim ${s0} -> ${s1} kB"
[ "$s1" -le $((s0 + 8192)) ] || fail "unreclaimable slab grew from ${s0} to ${s1} kB"
drv_unload
log "soak ok"
