# restore_fail: a resume whose restore cannot make the virtqueues again.
# fail_function (kernels with it: the debug ones) fails vbblk_init_vqs(),
# else tests/kmod/vbfault.ko's drv_fail fails every allocation of vbblk's
# own (to 6.10), for one suspend/resume (pm_test=devices), so all of
# restore's tries fail and the devices are left without rings. The resume
# must end (a disk marked dead from inside it, with a mounted ext4 whose
# kernel threads are still frozen, could wait on them), and from then on
# whatever would use the rings must end with an error, within a bound,
# never wait for ever or use a deleted virtqueue:
#   cache_type  write back -> write through (its FLUSH) fails, stays write back
#   I/O         O_DIRECT reads and writes, an fsync'ed write fail with EIO
#   GET_ID      the serial attribute fails
#   SG_IO       an INQUIRY of VPD page 80 (the serial) fails
#   uring       a passthrough command fails (or the node is gone)
#   ext4        on the second disk: a write and fsync fail, umount completes
#   suspend     a second suspend/resume is harmless, the disk stays failed
#   unbind      completes, with dirty pages of the dead disk in the cache
#   rmmod       works; reloaded, the driver binds the devices again, the
#               data written before the failed resume reads back and the
#               ext4 files synced before it are intact after fsck
# Each step runs in the background and must end within 60 s.
. /tests/lib.sh
[ -w /sys/power/pm_test ] || fail "kernel has no /sys/power/pm_test (CONFIG_PM_DEBUG)"
FF=/sys/kernel/debug/fail_function
if [ ! -d $FF ]; then
	insmod /lib/modules/$KVER/extra/vbfault.ko || fail "insmod vbfault"
	DF=/sys/kernel/debug/vbfault/drv_fail
	case $(cat $DF) in SKIP*) skip "no fail_function; vbfault: $(cat $DF)" ;; esac
fi
modprobe ext4 || fail "modprobe ext4"

drv_load
d=$(disk_by_serial RF-1)
e=$(disk_by_serial RF-2)
vdev=$(basename "$(readlink -f /sys/block/$d/device)")
DRV=/sys/bus/virtio/drivers/$DRIVER
expect_eq "cache_type before" "$(sysblk $d cache_type)" "write back"
must vbtool fill /dev/$d 0 1M 7
must mkfs.ext4 -q -F /dev/$e
mkdir -p /mnt/rf
must mount -t ext4 /dev/$e /mnt/rf
for i in 1 2 3 4 5 6 7 8; do
	must dd if=/dev/urandom of=/mnt/rf/f$i bs=64k count=$i 2>/dev/null
done
(cd /mnt/rf && sha256sum f*) > /tmp/rf.sums
must sync
# written after the sync: the suspend's own sync takes them
must dd if=/dev/urandom of=/mnt/rf/late bs=64k count=4 2>/dev/null
if [ -n "$DF" ]; then
	TEXT=$(cat /sys/module/vbblk/sections/.text)
	CORE=$(cat /sys/module/vbblk/coresize)
	arm() { echo "$TEXT $CORE pct 100" > $DF || fail "cannot arm drv_fail"; }
	disarm() { o=$(cat $DF); echo 0 > $DF; }
else
	arm() {
		echo vbblk_init_vqs > $FF/inject &&
			printf '%#x\n' -12 > $FF/vbblk_init_vqs/retval &&
			echo 100 > $FF/probability && echo 0 > $FF/interval &&
			echo -1 > $FF/times && echo 0 > $FF/space &&
			echo 0 > $FF/verbose ||
			fail "cannot arm fail_function on vbblk_init_vqs"
	}
	disarm() { o="fail_function: vbblk_init_vqs"; echo > $FF/inject; }
fi

# bounded NAME CMD...: run CMD in the background, its output and exit code
# in /tmp/NAME.out; fail the test if it has not ended after 60 s
bounded() {
	_n=$1
	shift
	( "$@" > /tmp/$_n.out 2>&1; echo "rc=$?" >> /tmp/$_n.out ) &
	_p=$!
	_i=0
	while kill -0 $_p 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -le $((600 * VBSCALE)) ] ||
			fail "$_n: not done after $((60 * VBSCALE)) s after the failed restore: $*"
		sleep 0.1
	done
	cat /tmp/$_n.out
}
# refused NAME CMD...: the same, and CMD must fail
refused() {
	bounded "$@"
	grep -q '^rc=0$' /tmp/$1.out && fail "$1 succeeded on a disk without rings: $*"
	log "ok: $1 refused"
}
rc_io() { grep -q 'Input/output error' /tmp/$1.out || fail "$1: no EIO"; }
# dead_io NAME CMD...: I/O on the dead disk $d fails with EIO; where the
# kernel sets a dead disk's size to 0 (6.6+), it moves nothing instead
dead_io() {
	bounded "$@"
	if [ "$(sysblk $d size)" = 0 ]; then
		grep -q '^rc=0$' /tmp/$1.out && ! grep -q '^0+0 records out' /tmp/$1.out &&
			fail "$1 moved data on a dead disk of size 0: $*"
		log "ok: $1 moved nothing (the dead disk's size is 0)"
	else
		grep -q '^rc=0$' /tmp/$1.out && fail "$1 succeeded on a disk without rings: $*"
		rc_io $1
		log "ok: $1 refused"
	fi
}

# 9pnet_virtio cannot resume: let go of the host share
umount /host || fail "cannot unmount the host share"
echo devices > /sys/power/pm_test || fail "pm_test=devices"
echo 0 > /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || true
n=$(dmesg | wc -l)
arm
bounded suspend sh -c 'echo freeze > /sys/power/state'
disarm
dmesg | tail -n +$((n + 1)) | grep -E 'vbblk|restore|resume' || true
dmesg | tail -n +$((n + 1)) | grep -q 'failed to resume.*error -12' ||
	fail "the restore did not fail ($o)"
log "restore failed as arranged ($o)"
# the dead disk's errors are the point (init checks dmesg for any)
touch /tmp/.allow_io_errors

refused cache_type sh -c "echo 'write through' > /sys/block/$d/cache_type"
expect_eq "cache_type after the refused switch" "$(sysblk $d cache_type)" "write back"
dead_io dread dd if=/dev/$d of=/dev/null bs=4096 count=1 iflag=direct
dead_io dwrite dd if=/dev/zero of=/dev/$d bs=4096 count=1 seek=8 oflag=direct
dead_io fsync dd if=/dev/zero of=/dev/$d bs=4096 count=4 seek=16 conv=fsync
refused serial cat /sys/block/$d/serial
# VPD 80 is the device's (GET_ID); standard INQUIRY data is the driver's
refused sg_vpd80 sg_inq -p 0x80 /dev/$d
refused uring vbuio -m randread -q 1 -s 1 -c 1 -n 1 -z 1048576 /dev/vbblk/$d
refused ext4_fsync dd if=/dev/zero of=/mnt/rf/new bs=4096 count=4 conv=fsync
bounded ext4_umount umount /mnt/rf
grep -q " /mnt/rf " /proc/mounts && fail "ext4 still mounted on the dead disk"
log "ok: ext4 on the dead disk unmounted"

n=$(dmesg | wc -l)
bounded suspend2 sh -c 'echo freeze > /sys/power/state'
dmesg | tail -n +$((n + 1)) | grep -E 'vbblk|restore|resume' || true
dead_io dread2 dd if=/dev/$d of=/dev/null bs=4096 count=1 iflag=direct

# dirty pages for the unbind to write back (a suspend would sync them):
# with an opener kept, dd's close is not the last, which would too
exec 3< /dev/$d
bounded dirty dd if=/dev/zero of=/dev/$d bs=4096 count=4 seek=32

bounded unbind sh -c "echo $vdev > $DRV/unbind"
grep -q '^rc=0$' /tmp/unbind.out || fail "unbind failed"
wait_gone $d 10 || fail "$d still there after unbind"
exec 3<&-
log "ok: unbind done"
drv_unload
log "ok: rmmod done"

drv_load
d=$(disk_by_serial RF-1 20) || fail "no disk after reloading the driver"
must vbtool check /dev/$d 0 1M 7
e=$(disk_by_serial RF-2 20) || fail "no ext4 disk after reloading the driver"
rc=0
e2fsck -fy /dev/$e > /tmp/fsck.out 2>&1 || rc=$?
cat /tmp/fsck.out
[ $rc -le 1 ] || fail "e2fsck -fy: exit $rc"
must mount -t ext4 /dev/$e /mnt/rf
(cd /mnt/rf && sha256sum -c /tmp/rf.sums) || fail "ext4 files synced before the failed resume differ"
must umount /mnt/rf
log "restore_fail ok"
