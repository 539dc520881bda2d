# faultinject: allocation failures aimed at the driver's own allocations,
# never at the kernel code it calls: tests/kmod/vbfault.ko's drv_fail fails
# the N-th kmalloc/kvmalloc/alloc_percpu call made from vbblk's code, or
# each with a probability.
#   probe    bind with vbblk's N-th allocation failing, for every N the
#            probe makes: the bind fails with an errno and leaves the device
#            bindable, or succeeds and the disk verifies
#   GET_ID   the serial attribute, the same way
#   SG_IO    INQUIRY, READ(10), WRITE(10), UNMAP through tests/tools/vbfail,
#            the same way; afterwards a WRITE through SG_IO reads back
#            through the block device
#   kernel   on kernels with failslab and fail_page_alloc (KERNEL=debug):
#            the same SG_IOs, plus a READ and a WRITE of 64 KiB from a
#            misaligned buffer (bounced through pages the block layer
#            allocates), with the N-th slab or page allocation of the ioctl
#            failing (fail-nth), for every N it makes: each ends in an
#            error or in a success that moved the right data, and the next
#            SG_IO works
#   I/O      4096 verified O_DIRECT writes in plugged batches of 8, with 20 %
#            of vbblk's allocations failing and, on kernels with failslab
#            (KERNEL=debug), 20 % of every slab allocation the writer's
#            task makes (plug callbacks, indirect descriptor tables, sg
#            tables, the block layer's own) and 20 % of its kernel page
#            allocations: no write may fail, every write reads back
#   resize   the disk grows during those writes, then again with every
#            allocation of vbblk's failing: the new size shows, and writes
#            past the old end, under injection, read back
#   freeze   suspend/resume (pm_test=devices) with vbblk's N-th allocation
#            failing, for every N: the disk verifies after each, or, where
#            the restore failed, after a rebind
# No splat, no leak (kmemleak after the test where the kernel has it).
. /tests/lib.sh
insmod /lib/modules/$KVER/extra/vbfault.ko || fail "insmod vbfault"
DF=/sys/kernel/debug/vbfault/drv_fail
case $(cat $DF) in SKIP*) skip "vbfault: $(cat $DF)" ;; esac

drv_load queue_depth=16
d=$(disk_by_serial FI-1)
must vbtool fill /dev/$d 0 1M 7
vdev=$(basename "$(readlink -f /sys/block/$d/device)")
DRV=/sys/bus/virtio/drivers/$DRIVER
# vbblk's code: its module's core starts with .text
TEXT=$(cat /sys/module/vbblk/sections/.text)
CORE=$(cat /sys/module/vbblk/coresize)
arm() { echo "$TEXT $CORE $*" > $DF || fail "cannot arm drv_fail: $*"; }
disarm() { echo 0 > $DF; }
seen() { cat $DF | sed 's/.*seen=\([0-9]*\).*/\1/'; }
failed() { cat $DF | sed 's/.*failed=\([0-9]*\).*/\1/'; }

# points N: all up to 150, else the first 100 and 50 spread over the rest
points() {
	if [ "$1" -le 150 ]; then
		seq 1 "$1"
	else
		seq 1 100
		seq 101 $((($1 - 100) / 50 + 1)) "$1"
	fi
}

bound() { [ -e "$DRV/$vdev" ]; }

# --- probe
echo "$vdev" > $DRV/unbind
wait_gone $d 10 || fail "$d still there after unbind"
arm nth 1000000
echo "$vdev" > $DRV/bind || fail "bind without injection failed"
k=$(seen)
disarm
d=$(disk_by_serial FI-1 10) || fail "no disk after a plain bind"
echo "$vdev" > $DRV/unbind
wait_gone $d 10 || fail "$d still there after unbind"
log "probe: $k allocations of vbblk's own"
[ "$k" -gt 0 ] || fail "drv_fail saw no allocation of vbblk's during a probe"
nok=0 nerr=0
for n in $(points "$k"); do
	arm nth "$n"
	rc=0
	echo "$vdev" 2>/dev/null > $DRV/bind || rc=$?
	f=$(failed)
	disarm
	[ "$f" = 1 ] || fail "probe: allocation $n of $k did not fail ($(cat $DF))"
	if bound; then
		d=$(disk_by_serial FI-1 10) || fail "probe with allocation $n failing: bound, no disk"
		vbtool check /dev/$d 0 1M 7 || fail "probe with allocation $n failing: data check"
		echo "$vdev" > $DRV/unbind
		wait_gone $d 10 || fail "$d still there after unbind (n=$n)"
		nok=$((nok + 1))
	else
		[ $rc != 0 ] || fail "bind with allocation $n failing said success but nothing is bound"
		nerr=$((nerr + 1))
	fi
done
log "probe: $nerr failed cleanly, $nok succeeded anyway"
echo "$vdev" > $DRV/bind
d=$(disk_by_serial FI-1 10) || fail "no disk after the probe loop"
must vbtool check /dev/$d 0 1M 7

# --- GET_ID
arm nth 1000000
cat /sys/block/$d/serial > /dev/null
k=$(seen)
disarm
for n in $(points "$k"); do
	arm nth "$n"
	cat /sys/block/$d/serial > /dev/null 2>&1 || true
	disarm
done
expect_eq "serial after $k failing GET_IDs" "$(cat /sys/block/$d/serial)" FI-1
log "GET_ID: $k allocations"

# --- SG_IO
for op in inquiry read write unmap; do
	arm nth 1000000
	o=$(vbfail sgio /dev/$d $op)
	k=$(seen)
	disarm
	case $o in "rc=0") ;; *) fail "SG_IO $op without injection: $o" ;; esac
	e=0
	for n in $(points "$k"); do
		arm nth "$n"
		o=$(vbfail sgio /dev/$d $op)
		disarm
		case $o in "rc=0") ;; *) e=$((e + 1)) ;; esac
	done
	log "SG_IO $op: $k allocations, $e failed cleanly"
done
o=$(vbfail sgio /dev/$d write)
[ "$o" = rc=0 ] || fail "SG_IO WRITE without injection: $o"
expect_eq "SG_IO WRITE read back" "$(dd if=/dev/$d bs=4096 skip=1024 count=1 iflag=direct 2>/dev/null |
	od -An -tx1 -v | tr -s ' \n' '\n\n' | sort -u | tr -d '\n')" 5a
must vbtool check /dev/$d 0 1M 7

# --- SG_IO, every allocation the kernel makes for it failing in turn
FS=/sys/kernel/debug/failslab
FP=/sys/kernel/debug/fail_page_alloc
for a in $FS $FP; do
	[ -d $a ] || continue
	echo N > $a/ignore-gfp-wait	# GFP_KERNEL can fail too
	echo 0 > $a/verbose		# no stack dump per failure
done
if [ -d $FS ] && [ -d $FP ]; then
	for op in inquiry read write unmap bread bwrite; do
		n=0 e=0
		while :; do
			n=$((n + 1))
			[ $n -le 2000 ] || fail "SG_IO $op: allocation $n still fails"
			o=$(vbfail sgio /dev/$d $op $n)
			case $o in
			"rc=0 injected=0") break ;;
			"rc=0 injected=1") ;;
			"rc="*" injected=1") e=$((e + 1)) ;;
			*) fail "SG_IO $op with allocation $n failing: $o" ;;
			esac
		done
		o=$(vbfail sgio /dev/$d $op)
		[ "$o" = rc=0 ] || fail "SG_IO $op after its failures: $o"
		log "SG_IO $op, kernel allocations: $((n - 1)), $e failed cleanly"
	done
	o=$(vbfail sgio /dev/$d write)
	[ "$o" = rc=0 ] || fail "SG_IO WRITE after the kernel's failures: $o"
else
	log "SG_IO, kernel allocations: this kernel has no failslab and fail_page_alloc"
fi

# --- I/O
for a in $FS $FP; do
	[ -d $a ] || continue
	echo Y > $a/task-filter
	echo 20 > $a/probability
	echo 1 > $a/interval
	echo -1 > $a/times
done
arm pct 20
vbfail aio /dev/$d 8M 4096 11 > /tmp/aio.out 2>&1 &
aio=$!
# the disk grows while those writes fail and retry
hostcmd resize fi 80M > /dev/null || { disarm; fail "host block_resize failed"; }
rc=0
wait $aio || rc=$?
o=$(cat /tmp/aio.out)
[ $rc = 0 ] || { disarm; echo "$o"; fail "writes under injection"; }
log "$o; drv_fail: $(cat $DF); failslab on the writer: $([ -d $FS ] && echo yes || echo no)" \
	"fail_page_alloc: $([ -d $FP ] && echo yes || echo no)"
disarm
for a in $FS $FP; do [ -d $a ] && echo 0 > $a/probability; done
must vbtool check /dev/$d 0 1M 7

# --- resize: the config-change work makes no allocation of vbblk's own
# (the uevent is the kernel's): with every one of them failing, the disk
# still grows
arm pct 100
hostcmd resize fi 96M > /dev/null || { disarm; fail "host block_resize failed"; }
i=0
while [ "$(sysblk $d size)" != $((96 << 11)) ]; do
	i=$((i + 1))
	[ $i -lt $((300 * VBSCALE)) ] || { disarm; fail "size still $(sysblk $d size) after the resize"; }
	sleep 0.1
done
log "resize: $(seen) allocations of vbblk's while the disk grew to 96M"
disarm
# the grown end takes writes under injection too
arm pct 20
o=$(vbfail aio /dev/$d 88M 2048 13 2>&1) || { disarm; echo "$o"; fail "writes past the old end"; }
disarm
log "past the old end: $o"
must vbtool check /dev/$d 0 1M 7

# --- freeze/restore (9pnet_virtio cannot resume: let go of the host share)
echo devices > /sys/power/pm_test || fail "pm_test=devices"
echo 0 > /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || true
umount /host || fail "cannot unmount the host share"
arm nth 1000000
echo freeze > /sys/power/state || fail "suspend without injection failed"
k=$(seen)
disarm
log "freeze: $k allocations"
nre=0
for n in $(points "$k"); do
	arm nth "$n"
	echo freeze 2>/dev/null > /sys/power/state || true
	disarm
	if ! vbtool check /dev/$d 0 1M 7 2>/dev/null; then
		# a restore that could not allocate leaves the device failed:
		# rebinding it must bring back the data
		echo "$vdev" > $DRV/unbind
		wait_gone $d 10 || fail "$d still there after unbind (freeze n=$n)"
		echo "$vdev" > $DRV/bind
		d=$(disk_by_serial FI-1 10) || fail "no disk after rebind (freeze n=$n)"
		vbtool check /dev/$d 0 1M 7 || fail "data lost after failed restore (freeze n=$n)"
		nre=$((nre + 1))
	fi
done
log "freeze: $(points "$k" | wc -l) points tried, $nre needed a rebind"
run_fio --name=after --filename=/dev/$d --direct=1 --ioengine=libaio --iodepth=8 \
	--rw=randwrite --bs=4k --size=4m --verify=crc32c
log "faultinject ok"
