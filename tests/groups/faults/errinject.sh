# errinject: blkdebug fails reads of sector 8200 (4M + 4K) and writes of
# sector 16392 (8M + 4K) on one disk, and every flush on another. A batch
# or merged request that covers a bad sector is retried bio by bio, so
# exactly the one 4 KiB bio on it fails; a failed flush fails the fsync,
# fdatasync and O_DSYNC write that needed it; a journal write error turns
# ext4 (errors=remount-ro) read-only; nothing hangs or leaks.
. /tests/lib.sh
touch /tmp/.allow_io_errors
drv_load
d=$(disk_by_serial EINJ-1)
f=$(disk_by_serial EFLUSH-1)

stat_of() { [ -r /sys/block/$1/vbblk/$2 ] && cat /sys/block/$1/vbblk/$2 || echo 0; }
# batched FIO RW OFFSET: 16 x 4 KiB submitted together around a bad sector;
# prints fio's error total
batched() {
	fio --name=b --filename=/dev/$d --rw=$1 --bs=4k --offset=$2 --size=64k --direct=1 \
		--ioengine=libaio --iodepth=16 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 \
		--buffer_pattern=0x5a --continue_on_error=all > /tmp/fio.out 2>&1
	sed -n 's/.*errors *: total=\([0-9]*\).*/\1/p' /tmp/fio.out | head -n 1
}

r0=$(stat_of $d retried)
errs=$(batched read $(((4 << 20) - 28672)))
[ "$errs" = 1 ] || { cat /tmp/fio.out; fail "batched reads over one bad sector: $errs errors, expected 1"; }
log "ok: 16 batched reads over a bad sector: 1 error"
errs=$(batched write $(((8 << 20) - 28672)))
[ "$errs" = 1 ] || { cat /tmp/fio.out; fail "batched writes over one bad sector: $errs errors, expected 1"; }
log "ok: 16 batched writes over a bad sector: 1 error"
r1=$(stat_of $d retried)
# batch=0 sends each bio alone: nothing to retry there
log "commands retried bio by bio: $((r1 - r0))"
# the other 15 writes landed
dd if=/dev/zero bs=4096 count=1 2>/dev/null | tr '\000' 'Z' > /tmp/ref
good=0 i=0
while [ $i -lt 16 ]; do
	dd if=/dev/$d of=/tmp/blk bs=4096 skip=$(((8 << 8) - 7 + i)) count=1 2>/dev/null
	cmp -s /tmp/ref /tmp/blk && good=$((good + 1))
	i=$((i + 1))
done
[ "$good" = 15 ] || fail "$good of the 15 good batched writes read back"
log "ok: the 15 good writes of the batch are on the disk"

# a failed flush fails what waited for it
mustfail dd if=/dev/zero of=/dev/$f bs=4k count=1 conv=fsync 2>/dev/null
fio --name=fds --filename=/dev/$f --rw=write --bs=4k --size=16k --ioengine=psync --fdatasync=1 \
	> /tmp/fio.out 2>&1 && { cat /tmp/fio.out; fail "fdatasync after a failed flush succeeded"; }
fio --name=dsync --filename=/dev/$f --rw=write --bs=4k --size=16k --ioengine=psync --direct=1 --sync=dsync \
	> /tmp/fio.out 2>&1 && { cat /tmp/fio.out; fail "O_DSYNC write with a failed flush succeeded"; }
log "ok: fsync, fdatasync and O_DSYNC writes fail when the flush fails"

# ext4 whose journal starts at 8M: its first commit writes 8M + 4K, the bad
# sector, so the journal aborts and errors=remount-ro makes the fs read-only
must mkfs.ext4 -q -F -b 4096 -E lazy_journal_init=1 -J size=4,location=8M /dev/$d
mkdir -p /mnt/e
must mount -t ext4 -o errors=remount-ro /dev/$d /mnt/e
# 6.1 does not flip the mount to ro (no SB_RDONLY without s_umount): it
# shuts the filesystem down, so writes fail with EROFS
i=0
while echo data > /mnt/e/a$i 2>/dev/null; do
	sync 2>/dev/null || true
	i=$((i + 1))
	[ $i -lt 100 ] || fail "ext4 still takes writes after a journal write error"
done
dmesg | grep -q "Remounting filesystem read-only" || fail "ext4 did not report going read-only"
out=$(touch /mnt/e/after 2>&1) && fail "write succeeded on the read-only filesystem"
case "$out" in *Read-only*) ;; *) fail "write failed, but not with EROFS: $out" ;; esac
must umount /mnt/e
log "ok: a journal write error made ext4 read-only; unmount is clean"

# nothing left in flight, and the driver goes away cleanly
for x in $d $f; do
	expect_eq "$x inflight" "$(sysblk $x inflight | tr -s ' ' | sed 's/^ //')" "0 0"
done
drv_unload
log "errinject ok"
