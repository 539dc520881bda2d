# restore_fail: a resume whose restore cannot make the virtqueues again.
# tests/kmod/vbfault.ko's drv_fail fails every allocation of vbblk's own
# for one suspend/resume (pm_test=devices), so all of restore's tries fail
# and the device is left without rings. From then on whatever would use
# them must end with an error, within a bound, never wait for ever or use
# a deleted virtqueue:
#   cache_type  write back -> write through (its FLUSH) fails, stays write back
#   I/O         O_DIRECT reads and writes, an fsync'ed write fail with EIO
#   GET_ID      the serial attribute fails
#   SG_IO       an INQUIRY of VPD page 80 (the serial) fails
#   uring       a passthrough command fails (or the node is gone)
#   suspend     a second suspend/resume is harmless, the disk stays failed
#   unbind      completes, with dirty pages of the dead disk in the cache
#   rmmod       works; reloaded, the driver binds the device again and the
#               data written before the failed resume reads back
# Each step runs in the background and must end within 60 s.
. /tests/lib.sh
[ -w /sys/power/pm_test ] || fail "kernel has no /sys/power/pm_test (CONFIG_PM_DEBUG)"
insmod /lib/modules/$KVER/extra/vbfault.ko || fail "insmod vbfault"
DF=/sys/kernel/debug/vbfault/drv_fail
case $(cat $DF) in SKIP*) skip "vbfault: $(cat $DF)" ;; esac

drv_load
d=$(disk_by_serial RF-1)
vdev=$(basename "$(readlink -f /sys/block/$d/device)")
DRV=/sys/bus/virtio/drivers/$DRIVER
expect_eq "cache_type before" "$(sysblk $d cache_type)" "write back"
must vbtool fill /dev/$d 0 1M 7
TEXT=$(cat /sys/module/vbblk/sections/.text)
CORE=$(cat /sys/module/vbblk/coresize)

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

# 9pnet_virtio cannot resume: let go of the host share
umount /host || fail "cannot unmount the host share"
echo devices > /sys/power/pm_test || fail "pm_test=devices"
echo 0 > /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || true
n=$(dmesg | wc -l)
echo "$TEXT $CORE pct 100" > $DF || fail "cannot arm drv_fail"
echo freeze > /sys/power/state || true
o=$(cat $DF)
echo 0 > $DF
dmesg | tail -n +$((n + 1)) | grep -E 'vbblk|restore|resume' || true
dmesg | tail -n +$((n + 1)) | grep -q 'failed to resume.*error -12' ||
	fail "the restore did not fail ($o)"
log "restore failed as arranged ($o)"
# the dead disk's errors are the point (init checks dmesg for any)
touch /tmp/.allow_io_errors

refused cache_type sh -c "echo 'write through' > /sys/block/$d/cache_type"
expect_eq "cache_type after the refused switch" "$(sysblk $d cache_type)" "write back"
refused dread dd if=/dev/$d of=/dev/null bs=4096 count=1 iflag=direct
rc_io dread
refused dwrite dd if=/dev/zero of=/dev/$d bs=4096 count=1 seek=8 oflag=direct
rc_io dwrite
refused fsync dd if=/dev/zero of=/dev/$d bs=4096 count=4 seek=16 conv=fsync
rc_io fsync
refused serial cat /sys/block/$d/serial
# VPD 80 is the device's (GET_ID); standard INQUIRY data is the driver's
refused sg_vpd80 sg_inq -p 0x80 /dev/$d
refused uring vbuio -m randread -q 1 -s 1 -c 1 -n 1 -z 1048576 /dev/vbblk/$d

n=$(dmesg | wc -l)
bounded suspend2 sh -c 'echo freeze > /sys/power/state'
dmesg | tail -n +$((n + 1)) | grep -E 'vbblk|restore|resume' || true
refused dread2 dd if=/dev/$d of=/dev/null bs=4096 count=1 iflag=direct
rc_io dread2

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
log "restore_fail ok"
