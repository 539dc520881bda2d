# resize: host grows the disk via QMP block_resize while ext4 is mounted and
# verified I/O runs on it; the guest sees the new capacity without reboot;
# resize2fs grows the fs online.
. /tests/lib.sh
modprobe ext4 || fail "modprobe ext4"
drv_load
d=$(disk_by_serial RESIZE-1)
expect_eq "$d initial size" "$(blockdev --getsize64 /dev/$d)" $((128 << 20))
must mkfs.ext4 -q -F /dev/$d
mkdir -p /mnt/t
must mount -t ext4 /dev/$d /mnt/t
must dd if=/dev/urandom of=/mnt/t/before bs=1M count=10 2>/dev/null
sum1=$(sha256sum /mnt/t/before | cut -d' ' -f1)
blocks0=$(df -k /mnt/t | tail -n 1 | awk '{print $2}')

# the capacity changes under verified I/O on the mounted filesystem
fio --name=busy --filename=/mnt/t/busy --rw=randwrite --bs=4k --size=8m --direct=1 \
	--ioengine=libaio --iodepth=16 --verify=crc32c --verify_fatal=1 --loops=4 > /tmp/busy.out 2>&1 &
busy=$!
sleep 1
hostcmd resize rsz 256M || fail "host block_resize failed"
i=0
while [ "$(sysblk $d size)" != $((256 << 11)) ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "size in /sys/block/$d/size still $(sysblk $d size) after 30s"
	sleep 0.1
done
log "new size visible after ~$((i / 10)).$((i % 10))s"
wait $busy || { cat /tmp/busy.out; fail "verified I/O across the resize failed"; }
log "verified I/O across the resize: ok"
expect_eq "$d blockdev --getsize64" "$(blockdev --getsize64 /dev/$d)" $((256 << 20))
must resize2fs /dev/$d
blocks1=$(df -k /mnt/t | tail -n 1 | awk '{print $2}')
log "fs size ${blocks0}K -> ${blocks1}K"
[ "$blocks1" -gt $((blocks0 + 100000)) ] || fail "filesystem did not grow (${blocks0}K -> ${blocks1}K)"
# use the new space
must dd if=/dev/urandom of=/mnt/t/after bs=1M count=150 2>/dev/null
sum2=$(sha256sum /mnt/t/after | cut -d' ' -f1)
must umount /mnt/t
must fsck.ext4 -n -f /dev/$d
must mount -t ext4 /dev/$d /mnt/t
expect_eq "before sha256" "$(sha256sum /mnt/t/before | cut -d' ' -f1)" "$sum1"
expect_eq "after sha256" "$(sha256sum /mnt/t/after | cut -d' ' -f1)" "$sum2"
must umount /mnt/t
log "resize ok"
