# unplug: remove disks while sequential writes stream (batches pending):
#  - driver unbind through sysfs during fio: I/O in flight drains, the disk
#    goes, fio sees errors and exits, nothing hangs; rebind, data readable;
#  - unbind while a process holds the disk open: SG_IO (200 times), the
#    other ioctls and I/O on its fd fail cleanly (no GOOD answer, no oops),
#    and the last close frees what is left;
#  - QMP device_del (PCI hot-unplug) during fio: same;
#  - then the module unloads cleanly.
# In bio mode each device is throttled first (QMP), so that stream batches
# are held when it goes: remove must send or drain them, not strand them.
. /tests/lib.sh
drv_load
d1=$(disk_by_serial UNPLUG-1)
d2=$(disk_by_serial UNPLUG-2)
vdev1=$(basename "$(readlink -f /sys/block/$d1/device)")
log "disks: $d1 ($vdev1) $d2"

bio=
[ -d /sys/block/$d1/vbblk ] && [ ! -d /sys/block/$d1/mq ] && bio=1
thr() { [ -z "$bio" ] || throttle "$@"; }	# bio mode only
merged() { cat /sys/block/$1/vbblk/merged 2>/dev/null || echo 0; }
# held DEV WHAT: in bio mode, wait (30 s at most: fio starts slowly on a
# debug kernel) until DEV has merged bios, that is batches are being held
held() {
	_i=0
	while [ -n "$bio" ] && [ "$(merged $1)" -eq 0 ]; do
		_i=$((_i + 1))
		[ $_i -lt 300 ] || fail "no batch held on $1 before $2"
		sleep 0.1
	done
	sleep 1
	log "$1: $(merged $1) bios merged so far"
}

# stream DEV: background sequential writes. Each loop opens /dev/DEV again:
# once the disk is gone fio would create a regular file of that name, which
# then keeps devtmpfs from making the node when the disk comes back
stream() {
	fio --name=stream --filename=/dev/$1 --allow_file_create=0 --direct=1 \
		--ioengine=libaio --iodepth=32 --rw=write --bs=4k --size=48m --loops=100 \
		> /tmp/fio-$1.out 2>&1 &
	echo $!
}
waitpid_t() { # waitpid_t PID SECONDS: the process must end in time
	_i=0
	while kill -0 $1 2>/dev/null; do
		sleep 0.5; _i=$((_i + 1))
		[ $_i -lt $(($2 * 2)) ] || fail "fio (pid $1) still running ${2}s after the disk went"
	done
}

thr unplug1 1000
pid=$(stream $d1)
sleep 3
held $d1 unbind
log "unbinding $vdev1 from $DRIVER during I/O"
echo "$vdev1" > /sys/bus/virtio/drivers/$DRIVER/unbind || fail "unbind failed"
wait_gone $d1 30 || fail "$d1 still present after unbind"
waitpid_t $pid 60
log "fio after unbind: $(grep -o 'err=[^,]*' /tmp/fio-$d1.out | head -n 1)"
echo "$vdev1" > /sys/bus/virtio/drivers/$DRIVER/bind || fail "rebind failed"
d1=$(disk_by_serial UNPLUG-1)
must dd if=/dev/$d1 of=/dev/null bs=1M count=8 iflag=direct
thr unplug1 0

log "an fd held across removal: SG_IO, other ioctls and I/O on it fail cleanly"
rm -f /tmp/gone.flag
vbtool gone /dev/$d1 /tmp/gone.flag > /tmp/gone.out 2>&1 &
gpid=$!
i=0
while [ ! -e /tmp/gone.flag ]; do
	sleep 0.1; i=$((i + 1)); [ $i -lt 100 ] || fail "vbtool gone did not start"
done
echo "$vdev1" > /sys/bus/virtio/drivers/$DRIVER/unbind || fail "unbind failed"
wait_gone $d1 30 || fail "$d1 still present after unbind"
rm -f /tmp/gone.flag
waitpid_t $gpid 60
wait $gpid || { cat /tmp/gone.out; fail "the removed disk's fd did not fail cleanly"; }
cat /tmp/gone.out
echo "$vdev1" > /sys/bus/virtio/drivers/$DRIVER/bind || fail "rebind failed"
d1=$(disk_by_serial UNPLUG-1)

thr unplug2 1000
pid=$(stream $d2)
sleep 3
held $d2 device_del
log "QMP device_del unplug2 during I/O"
hostcmd device_del unplug2 > /dev/null || fail "device_del failed"
wait_gone $d2 60 || fail "$d2 still present $((60 * VBSCALE))s after device_del"
waitpid_t $pid 60

drv_unload
log "unplug ok"
