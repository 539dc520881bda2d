# ioerror: the host fails every read covering sector 8192 (byte 4 MiB) with
# EIO (blkdebug).  Only reads of that block fail; everything else, writes and
# a driver reload keep working; no kernel splat.
. /tests/lib.sh
touch /tmp/.allow_io_errors
drv_load
d=$(disk_by_serial IOERR-1)
must vbtool fill /dev/$d 0 16M 9
must dd if=/dev/$d of=/dev/null bs=4096 count=1024 iflag=direct
mustfail dd if=/dev/$d of=/dev/null bs=4096 skip=1024 count=1 iflag=direct
mustfail dd if=/dev/$d of=/dev/null bs=1M skip=3 count=2 iflag=direct
must dd if=/dev/$d of=/dev/null bs=4096 skip=1025 count=1023 iflag=direct
must vbtool check /dev/$d 0 4M 9
must vbtool check /dev/$d 4100K 11196K 9
mustfail vbtool check /dev/$d 4M 4K 9
# writes to the bad block are fine, reads of it still fail
must dd if=/dev/zero of=/dev/$d bs=4096 seek=1024 count=1 oflag=direct
mustfail dd if=/dev/$d of=/dev/null bs=512 skip=8192 count=1 iflag=direct
# concurrent I/O with some failing requests
fio --name=mixed --filename=/dev/$d --rw=randread --bs=64k --size=16m --direct=1 \
	--ioengine=libaio --iodepth=16 --continue_on_error=read --number_ios=512 > /tmp/fio.out 2>&1 || true
grep -E 'err=|IOPS' /tmp/fio.out | head -n 3
dmesg | grep -cE 'I/O error' | sed 's/^/I\/O error lines in dmesg: /'
drv_unload
drv_load
d=$(disk_by_serial IOERR-1)
must vbtool check /dev/$d 0 4M 9
mustfail dd if=/dev/$d of=/dev/null bs=4096 skip=1024 count=1 iflag=direct
drv_unload
log "ioerror ok"
