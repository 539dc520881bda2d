# flush: FLUSH/FUA semantics per Documentation/block/writeback_cache_control.rst.
# The host checks the order from QEMU's virtio-blk trace (tests/lib/flushcheck.py);
# each phase is bracketed by a 512-byte marker read at sector 100000+N.
#   wb disk (volatile cache): O_DSYNC writes (FUA): each write is followed by a
#   flush before the next write, on the raw device and as O_DIRECT overwrites
#   on ext4 (FUA writes with no fsync flush in bio mode, which has queue/fua);
#   fdatasync on the raw device and fsync on ext4 end with a flush after every
#   write completed.
#   wt disk (write through): the same I/O sends no flush at all.
# Counts: the driver's flush counter equals QMP flush_operations.
. /tests/lib.sh
drv_load
wb=$(disk_by_serial FLUSH-WB)
wt=$(disk_by_serial FLUSH-WT)
if [ "$VBSIDE" = vhost-user ]; then
	# qemu-storage-daemon's export reports no write cache (wce 0) whatever it
	# has; the guest turns it on, which the daemon follows
	echo "write back" > /sys/block/$wb/cache_type || fail "cannot enable $wb's write cache"
fi
expect_eq "$wb write_cache" "$(sysblk $wb queue/write_cache)" "write back"
expect_eq "$wt write_cache" "$(sysblk $wt queue/write_cache)" "write through"

# busybox dd quietly drops O_DIRECT when O_DIRECT refuses a read: use fio
# --invalidate=0: fio would otherwise BLKFLSBUF the disk first, which syncs
# the mounted ext4 and puts its metadata writeback inside the phase
mark() {
	fio --name=mark --filename=/dev/$1 --rw=read --bs=512 --size=512 --offset=$(((100000 + $2) * 512)) \
		--direct=1 --invalidate=0 --ioengine=psync --output=/dev/null || fail "marker read $2"
}
devflush() { hostcmd blockstats $1 | sed -n 's/^flush_operations=//p'; }
drvflush() { if [ -r /sys/block/$1/vbblk/flushes ]; then cat /sys/block/$1/vbblk/flushes; else echo 0; fi; }

wbf0=$(devflush flwb); wtf0=$(devflush flwt); d0=$(drvflush $wb)

mark $wb 1
run_fio --name=dsync --filename=/dev/$wb --rw=write --bs=4k --size=32k --ioengine=psync --direct=1 --sync=dsync
mark $wb 2
run_fio --name=fdatasync --filename=/dev/$wb --rw=write --bs=64k --size=1m --offset=1m --ioengine=psync --fdatasync=4 --end_fsync=1
mark $wb 3
# quiet ext4: no background init, no periodic commit during the phase, so
# every write in it is one the fsync covers
must mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/$wb 32M
mkdir -p /mnt/wb
must mount -t ext4 -o commit=600 /dev/$wb /mnt/wb
sync
mark $wb 4
run_fio --name=fsync --filename=/mnt/wb/f --rw=write --bs=4k --size=256k --ioengine=psync --end_fsync=1
mark $wb 5
# O_DIRECT|O_DSYNC overwrites of allocated blocks: where the queue says it
# has FUA (bio mode) ext4 sends FUA writes and no separate flush, so only
# the driver's FUA emulation puts a flush after each write.
log "queue/fua=$(sysblk $wb queue/fua)"
sync
mark $wb 6
run_fio --name=diodsync --filename=/mnt/wb/f --rw=write --bs=4k --size=64k --ioengine=psync --direct=1 --sync=dsync
mark $wb 7
must umount /mnt/wb

mark $wt 11
run_fio --name=wtdsync --filename=/dev/$wt --rw=write --bs=4k --size=32k --ioengine=psync --direct=1 --sync=dsync
run_fio --name=wtfdatasync --filename=/dev/$wt --rw=write --bs=64k --size=1m --offset=1m --ioengine=psync --fdatasync=4 --end_fsync=1
mark $wt 12

wbf=$(($(devflush flwb) - wbf0)); wtf=$(($(devflush flwt) - wtf0)); d=$(($(drvflush $wb) - d0))
log "device flushes: write-back disk $wbf, write-through disk $wtf; driver counted $d"
[ "$wbf" -ge 8 ] || fail "only $wbf flushes reached the write-back disk"
[ "$wtf" -eq 0 ] || fail "$wtf flushes reached the write-through disk"
if [ "$VBSIDE" = vhost-user ]; then
	# counted where the daemon flushes its file: QEMU's block layer drops a
	# flush that follows no write, so there may be fewer
	[ "$DRIVER" != vbblk ] || [ "$wbf" -le "$d" ] ||
		fail "device flushed $wbf times, the driver sent $d"
elif [ "$DRIVER" = vbblk ]; then
	expect_eq "driver flush count vs device" "$d" "$wbf"
fi
log "flush counts ok (order is checked on the host)"
