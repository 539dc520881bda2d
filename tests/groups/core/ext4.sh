# ext4: build a file tree, checksum it, unmount, reload the driver, remount,
# compare checksums, fsck clean.
. /tests/lib.sh
modprobe ext4 || fail "modprobe ext4"
drv_load
d=$(disk_by_serial EXT4-1)
log "disk $d"
must mkfs.ext4 -q -F /dev/$d
mkdir -p /mnt/t
must mount -t ext4 /dev/$d /mnt/t
i=0
for sz in 0 1 511 512 4095 4096 4097 65536 131071 1000000 3000000 8388608 20000000; do
	i=$((i + 1))
	dir=/mnt/t/d$((i % 4))/sub$((i % 3))
	mkdir -p $dir
	if [ $sz -eq 0 ]; then
		: > $dir/f$i.bin
	else
		must dd if=/dev/urandom of=$dir/f$i.bin bs=$sz count=1 iflag=fullblock 2>/dev/null
	fi
done
mkdir -p /mnt/t/small
for i in $(seq 1 200); do
	echo "file $i $(date +%s%N)" > /mnt/t/small/s$i.txt
	[ $((i % 10)) -ne 0 ] || dd if=/dev/urandom of=/mnt/t/small/r$i bs=$((i * 37)) count=1 2>/dev/null
done
ln /mnt/t/d1/sub1/f1.bin /mnt/t/hardlink
ln -s d1/sub1/f1.bin /mnt/t/symlink
# overwrite in the middle of a file
must dd if=/dev/urandom of=/mnt/t/d0/sub0/f12.bin bs=4096 seek=100 count=50 conv=notrunc 2>/dev/null
(cd /mnt/t && find . -type f | sort | xargs sha256sum) > /tmp/sums
n=$(wc -l < /tmp/sums)
log "$n files written, $(du -sk /mnt/t | cut -f1) KiB"
must sync
must umount /mnt/t

log "reloading $DRIVER"
drv_unload
wait_gone $d || fail "$d still present after rmmod"
drv_load
d=$(disk_by_serial EXT4-1)
must fsck.ext4 -n -f /dev/$d
must mount -t ext4 /dev/$d /mnt/t
(cd /mnt/t && sha256sum -c /tmp/sums > /tmp/sumcheck 2>&1) || { grep -v ': OK$' /tmp/sumcheck | head; fail "checksum mismatch after reload"; }
expect_eq "files checked" "$(grep -c ': OK$' /tmp/sumcheck)" "$n"
[ "$(readlink /mnt/t/symlink)" = d1/sub1/f1.bin ] || fail "symlink lost"
must umount /mnt/t
must fsck.ext4 -n -f /dev/$d
log "ext4 ok"
