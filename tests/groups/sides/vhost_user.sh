# vhost_user: the device side is a qemu-storage-daemon process
# (vhost-user-blk), which can go away on its own.
#  1. The daemon is stopped and started again while the guest is idle:
#     QEMU reconnects (chardev reconnect=1), what was written reads back,
#     verified I/O goes on.
#  2. The daemon is paused (SIGSTOP) with a 1 MiB write queued, and the
#     driver is unbound: removal waits for the slow device, longer than
#     the 10 s after which the driver used to give up, and when the daemon
#     goes on (SIGCONT) the write completes successfully.
#  3. The daemon is killed (SIGKILL) under writes: I/O stalls. QMP
#     device_del removes the disk: after remove_timeout (set to 10 s here)
#     without a completion the driver resets the device and fails what it
#     held, the writers (random, and sequential with batches held for
#     its stream) end with I/O errors, the disk goes away; no oops, no
#     hang.
. /tests/lib.sh
drv_load
d=$(disk_by_serial VU-1)
log "disk $d"
vdev=$(basename "$(readlink -f /sys/block/$d/device)")

run_fio --name=before --filename=/dev/$d --rw=write --bs=64k --size=16m --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1
s1=$(devsum $d 16)

log "idle: stopping the daemon, then starting it again"
hostcmd vu_stop vu1 > /dev/null || fail "vu_stop"
sleep 2
hostcmd vu_start vu1 > /dev/null || fail "vu_start"
sleep 3
expect_eq "data after reconnect" "$(devsum $d 16)" "$s1"
run_fio --name=after --filename=/dev/$d --rw=randwrite --bs=4k --size=8m --offset=32m \
	--direct=1 --ioengine=libaio --iodepth=16 --verify=crc32c --do_verify=1 --verify_fatal=1

log "slow, not dead: the daemon paused with a write queued, then unbind"
must dd if=/dev/urandom of=/tmp/slow bs=1M count=1 2>/dev/null
hostcmd vu_pause vu1 > /dev/null || fail "vu_pause"
dd if=/tmp/slow of=/dev/$d bs=1M seek=40 oflag=direct conv=notrunc 2>/tmp/dd.err &
wpid=$!
sleep 1
kill -0 $wpid 2>/dev/null || { cat /tmp/dd.err; fail "the write ended on a paused device"; }
echo $vdev > /sys/bus/virtio/drivers/$DRIVER/unbind &
upid=$!
sleep 15
kill -0 $wpid 2>/dev/null || { cat /tmp/dd.err; fail "the write ended while its device was paused (given up on?)"; }
hostcmd vu_resume vu1 > /dev/null || fail "vu_resume"
wait $wpid || { cat /tmp/dd.err; dmesg | tail -n 5; fail "a write to a slow device failed during removal"; }
wait $upid || fail "unbind failed"
wait_gone $d 10 || fail "$d still present after unbind"
dmesg | grep -q 'failing them' && fail "the driver gave up on a device that was only slow"
echo $vdev > /sys/bus/virtio/drivers/$DRIVER/bind || fail "rebind failed"
d=$(disk_by_serial VU-1)
expect_eq "the slow write, after rebind" "$(dd if=/dev/$d bs=1M skip=40 count=1 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)" \
	"$(sha256sum /tmp/slow | cut -d' ' -f1)"

log "killing the daemon under writes"
[ "$DRIVER" = vbblk ] && echo 10 > /sys/module/vbblk/parameters/remove_timeout
touch /tmp/.allow_io_errors
# beside the random writer, a sequential one refilled one I/O at a time,
# whose stream batches bio mode holds for its in-flight commands: those
# held when the device is given up on must still go (and fail)
fio --name=dying --filename=/dev/$d --allow_file_create=0 --rw=randwrite --bs=4k --size=32m \
	--direct=1 --ioengine=libaio --iodepth=32 --time_based --runtime=300 \
	--name=dying-seq --filename=/dev/$d --allow_file_create=0 --rw=write --bs=4k --offset=32m \
	--size=32m --direct=1 --ioengine=libaio --iodepth=32 --iodepth_batch_submit=1 \
	--time_based --runtime=300 > /tmp/fio-dying.out 2>&1 &
pid=$!
sleep 3
kill -0 $pid 2>/dev/null || { cat /tmp/fio-dying.out; fail "fio ended before the kill"; }
hostcmd vu_kill vu1 > /dev/null || fail "vu_kill"
sleep 3
kill -0 $pid 2>/dev/null || fail "fio ended although its device is gone (no stall?)"
log "QMP device_del vu1 with the daemon dead"
hostcmd device_del vu1 > /dev/null || fail "device_del failed"
wait_gone $d 45 || fail "$d still present 45s after device_del"
i=0
while kill -0 $pid 2>/dev/null; do
	sleep 0.5; i=$((i + 1))
	[ $i -lt 60 ] || fail "fio still running 30s after the disk went"
done
grep -q 'err=' /tmp/fio-dying.out || { cat /tmp/fio-dying.out; fail "fio saw no error"; }
log "fio: $(grep -o 'err=[^,]*' /tmp/fio-dying.out | head -n 1)"
if [ "$DRIVER" = vbblk ]; then
	dmesg | grep -q 'commands on the rings: failing them' ||
		fail "no 'failing them' line: who ended the stall?"
fi
drv_unload
log "vhost_user ok"
