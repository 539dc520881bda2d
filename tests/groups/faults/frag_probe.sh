# frag_probe: probe while kvmalloc() gets no physically contiguous memory,
# as on a fragmented guest: tests/kmod/vbfault.ko fails the kmalloc of
# every kvmalloc() larger than a page while the driver loads
# (queue_depth=1024 on two 1024-entry virtqueues), so whatever the driver
# kvmalloc'ed at probe is vmalloc memory. Nothing the device reads or
# writes may be there: the device is given physical addresses, and
# virt_to_page() of a vmalloc address is another page. In bio mode
# vbblk_bio_cmds_init's arrays must be in /proc/vmallocinfo (the injection took
# effect); then verified I/O on every queue must succeed, and the console
# stays clean (vbblk warns if a command header is vmalloc'ed). A driver
# that gives the device vmalloc addresses hangs or fails its I/O: probe and
# fio have deadlines, so the test says which step, before the hung task
# detector (60 s) or its timeout. SKIP where vbfault cannot probe kvmalloc.
. /tests/lib.sh
# broken: the virtio disks QEMU stopped because of what they were given
# (virtio_error(): NEEDS_RESET in the device status)
broken() {
	for _v in /sys/bus/virtio/devices/virtio*; do
		[ "$(cat $_v/device)" = 0x0002 ] || continue
		_st=$(cat $_v/status)
		[ $((_st & 0x40)) = 0 ] ||
			echo "; ${_v##*/} status $_st: NEEDS_RESET, QEMU refused a request (see qemu.log)"
	done
}
# within SECS WHAT CMD...: run CMD (its failure ends the test), give up
# after SECS
within() {
	_s=$1 _w=$2
	shift 2
	"$@" &
	_p=$! _i=0
	while kill -0 $_p 2>/dev/null; do
		[ $_i -lt $((_s * 10)) ] || fail "$_w not done after ${_s}s$(broken)"
		sleep 0.1
		_i=$((_i + 1))
	done
	wait $_p || exit $?
}

ko=/lib/modules/$KVER/extra/vbfault.ko
[ -f $ko ] || fail "vbfault.ko not in initramfs"
insmod $ko || fail "insmod vbfault.ko"
ctl=/sys/kernel/debug/vbfault
st=$(cat $ctl/kvmalloc_fail) || fail "no $ctl (debugfs not mounted?)"
case $st in SKIP*) skip "vbfault: $st" ;; esac
# 1: every kvmalloc() that can fall back (more than a page) does
echo 1 > $ctl/kvmalloc_fail_min || fail "cannot switch vbfault on"
if [ "$DRIVER" = vbblk ]; then
	within 45 probe drv_load queue_depth=1024
else
	within 45 probe drv_load
fi
echo 0 > $ctl/kvmalloc_fail_min || fail "cannot switch vbfault off"
log "vbfault during probe: $(cat $ctl/kvmalloc_fail)"
d=$(disk_by_serial FRAG-1)
expect_eq "$d virtqueues" "$(vq_count $d)" 2
log "vmalloc areas of $DRIVER: $(grep -c "\[$DRIVER\]" /proc/vmallocinfo || true)"
grep "\[$DRIVER\]" /proc/vmallocinfo | head -n 8 || true
if [ "$DRIVER" = vbblk ] && [ ! -d /sys/block/$d/mq ]; then
	n=$(grep -c 'vbblk_bio_cmds_init.*\[vbblk\]' /proc/vmallocinfo || true)
	[ "$n" -ge 1 ] || fail "no vmalloc area from vbblk_bio_cmds_init: the injection did not take effect"
fi
within 120 "verified fio" run_fio --name=frag --filename=/dev/$d --direct=1 \
	--ioengine=libaio --rw=randrw --bsrange=4k-256k --iodepth=64 --numjobs=2 \
	--size=32m --offset_increment=32m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --group_reporting
log "frag probe ok"
