# readonly: a read-only drive is read-only in the guest and no write reaches
# the backing file (the host also compares sha256 before/after).
. /tests/lib.sh
modprobe ext4 || fail "modprobe ext4"
drv_load
d=$(disk_by_serial RO-1)
expect_eq "/sys/block/$d/ro" "$(sysblk $d ro)" 1
expect_eq "blockdev --getro" "$(blockdev --getro /dev/$d)" 1
host=$(hostcmd sha256 rodisk)
sum=$(devsum $d)
expect_eq "guest sha256 == host file sha256" "$sum" "$host"

mustfail dd if=/dev/zero of=/dev/$d bs=4096 count=1 oflag=direct conv=notrunc
mustfail dd if=/dev/zero of=/dev/$d bs=4096 count=16 conv=notrunc,fsync
mustfail fio --name=rowrite --filename=/dev/$d --rw=write --bs=4k --size=1m --direct=1 --ioengine=libaio
mustfail fio --name=rowrite2 --filename=/dev/$d --rw=randwrite --bs=64k --size=4m --ioengine=psync
mustfail mkfs.ext4 -q -F /dev/$d
mustfail blkdiscard /dev/$d
mustfail vbtool zeroout /dev/$d 0 4096
log "all writes were refused"
# reads still work
run_fio --name=roread --filename=/dev/$d --rw=randread --bs=4k --size=8m --direct=1 --ioengine=libaio --iodepth=8
expect_eq "sha256 after write attempts" "$(devsum $d)" "$sum"
expect_eq "host sha256 after write attempts" "$(hostcmd sha256 rodisk)" "$host"
log "readonly ok"
