# load_unload: 50 load/unload cycles (15 where kmemleak watches: it sees a
# leak in one cycle, and makes each one slow) with a disk attached and some I/O in
# between; rmmod is refused while I/O holds the disk open and while ext4 is
# mounted, and succeeds once it is closed.
. /tests/lib.sh
modprobe ext4 || fail "modprobe ext4"
drv_load
d=$(disk_by_serial LU-1)
must vbtool fill /dev/$d 0 4M 1
drv_unload
wait_gone $d || fail "$d still present after rmmod"
cycles=50
[ -z "$KML" ] || cycles=15	# kmemleak on: tests/guest/init scans after the test
for i in $(seq 1 $cycles); do
	drv_load
	d=$(disk_by_serial LU-1 10) || fail "cycle $i: disk did not appear"
	if [ $((i % 5)) -eq 0 ]; then
		vbtool check /dev/$d 0 4M 1 || fail "cycle $i: data check failed"
		vbtool fill /dev/$d 8M 1M $i || fail "cycle $i: write failed"
	fi
	if [ $((i % 5)) -eq 1 ] && [ $i -gt 1 ]; then
		vbtool check /dev/$d 8M 1M $((i - 1)) || fail "cycle $i: data from cycle $((i - 1)) lost"
	fi
	rmmod $DRIVER || fail "cycle $i: rmmod $DRIVER failed"
	wait_gone $d 5 || fail "cycle $i: $d still present after rmmod"
	drv_loaded && fail "cycle $i: module still loaded after rmmod"
	[ $((i % 10)) -ne 0 ] || log "cycle $i done"
done

drv_load
d=$(disk_by_serial LU-1)
must vbtool check /dev/$d 0 4M 1
# rmmod during I/O: refused while the disk is open, fine after
fio --name=open --filename=/dev/$d --rw=randread --bs=4k --size=16m --direct=1 \
	--ioengine=libaio --iodepth=8 --time_based --runtime=4 > /tmp/open.out 2>&1 &
pid=$!
# wait until fio is doing I/O, so the disk is surely open
r0=$(awk '{print $1}' /sys/block/$d/stat)
i=0
while [ "$(awk '{print $1}' /sys/block/$d/stat)" = "$r0" ]; do
	i=$((i + 1))
	[ $i -lt 200 ] || { cat /tmp/open.out; fail "fio did no I/O in 20 s"; }
	sleep 0.1
done
mustfail rmmod $DRIVER
drv_loaded || fail "module unloaded while fio had the disk open"
wait $pid || { cat /tmp/open.out; fail "I/O failed around a refused rmmod"; }
log "rmmod refused during I/O (good)"
must rmmod $DRIVER
wait_gone $d 5 || fail "$d still present after rmmod"
drv_load
d=$(disk_by_serial LU-1)
must mkfs.ext4 -q -F /dev/$d
mkdir -p /mnt/t
must mount -t ext4 /dev/$d /mnt/t
must dd if=/dev/urandom of=/mnt/t/a bs=1M count=4 2>/dev/null
mustfail rmmod $DRIVER
drv_loaded || fail "module unloaded while the fs is mounted"
[ -b /dev/$d ] || fail "/dev/$d vanished"
log "rmmod refused while mounted (good)"
must dd if=/dev/urandom of=/mnt/t/b bs=1M count=4 2>/dev/null
must sync
s=$(cat /mnt/t/a /mnt/t/b | sha256sum)
echo 3 > /proc/sys/vm/drop_caches
expect_eq "file contents" "$(cat /mnt/t/a /mnt/t/b | sha256sum)" "$s"
must umount /mnt/t
drv_unload
drv_load
d=$(disk_by_serial LU-1)
must fsck.ext4 -n -f /dev/$d
must mount -t ext4 /dev/$d /mnt/t
expect_eq "file contents after reload" "$(cat /mnt/t/a /mnt/t/b | sha256sum)" "$s"
must umount /mnt/t
drv_unload
log "load_unload ok"
