# uring: the io_uring passthrough character device, /dev/vbblk/<disk>.
#  - GET_ID gives the serial
#  - vbuio fills an area through one path and checks it through the other:
#    passthrough -> block device and back, plain, registered (fixed),
#    vectored and polled buffers, on a 1- and a 2-queue disk
#  - polled commands (an IOPOLL ring) raise no interrupt on the request queues,
#    and polled reads into a buffer read before give its pages back in the
#    poller (no workqueue hop: no context switch of the load per read)
#  - FLUSH, DISCARD and WRITE ZEROES reach the device (QMP counters); the
#    zeroes read back as zeroes; in the device's trace each FLUSH comes
#    after the writes completed before it (the host checks, markers 1-3)
#  - a 16-entry ring under QD 128 beside block I/O: commands wait, none fails
#  - hostile commands end with the errno include/uapi/linux/vbblk.h gives,
#    on a 512-byte and a 4K-block disk
#  - a read-only disk and a read-only descriptor refuse writes; an
#    unprivileged user opens the node only as its mode allows, reads
#    through a read-only open, writes nothing, gets no real-time ioprio
#  - rmmod is refused while the node is open
#  - unbind and QMP device_del with commands in flight end them all; the
#    load exits
# On the iothread and vhost-user sides: the data, polling, full-ring and
# unbind parts (what the device side can change).
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
drv_load poll_queues=1
d1=$(disk_by_serial URING-1)
d2=$(disk_by_serial URING-2)
d3=$(disk_by_serial URING-3)
dro= d4= d4k=
if [ "$VBSIDE" = main ]; then
	dro=$(disk_by_serial URING-RO)
	d4=$(disk_by_serial URING-4)
	d4k=$(disk_by_serial URING-4K)
fi
for d in $d1 $d2 $dro $d3 $d4 $d4k; do
	[ -c /dev/vbblk/$d ] || fail "no character device /dev/vbblk/$d"
done
log "nodes: $(ls /dev/vbblk | tr '\n' ' ')"
stat0=$(cat /sys/block/$d2/vbblk/uring_cmds)

expect_eq "GET_ID = serial" "$(vbuio cmd /dev/vbblk/$d1 op=getid len=20 | sed -n "s/^id=//p")" "$(cat /sys/block/$d1/serial)"

# Data through one path, checked through the other. Areas (sectors) do not
# overlap, so every check sees only its own fill.
area=0
round() { # round DISK SEED FILL-PATH-KIND CHECK-PATH-KIND FILL-OPTS CHECK-OPTS
	_d=$1 _x=$2
	_f=/dev/vbblk/$_d _c=/dev/$_d
	[ "$3" = block ] && _f=/dev/$_d
	[ "$4" = passthrough ] && _c=/dev/vbblk/$_d
	must vbuio -m fill -q 8 -b 16384 -o $area -z 4194304 -x $_x $5 $_f
	must vbuio -m check -q 8 -b 4096 -o $area -z 4194304 -x $_x $6 $_c
	area=$((area + 8192))
}
for d in $d1 $d2; do
	area=0
	round $d 11 passthrough block "" ""
	round $d 12 block passthrough "" ""
	round $d 13 passthrough block "-f" ""
	round $d 14 block passthrough "" "-f -q 32"
	round $d 15 passthrough passthrough "-v -q 4" "-v"
	round $d 16 passthrough block "-p" ""
	round $d 17 block passthrough "" "-p -f -q 16"
	# 128 KiB commands: more pages than a command keeps inline
	round $d 18 passthrough block "-b 131072 -q 4" ""
done
# random writes over a filled area, both paths at once, then a check
must vbuio -m fill -q 8 -b 65536 -o $area -z 8388608 -x 21 /dev/$d2
vbuio -m randwrite -q 16 -s 4 -c 2 -n 4000 -o $area -z 8388608 -x 21 /dev/vbblk/$d2 > /tmp/a.out 2>&1 &
pa=$!
must vbuio -m randwrite -q 16 -n 4000 -o $area -z 8388608 -x 21 /dev/$d2
wait $pa || { cat /tmp/a.out; fail "passthrough randwrite failed"; }
must vbuio -m check -q 8 -b 65536 -o $area -z 8388608 -x 21 /dev/vbblk/$d2
stat1=$(cat /sys/block/$d2/vbblk/uring_cmds)
[ $((stat1 - stat0)) -ge 4000 ] || fail "uring_cmds moved by $((stat1 - stat0)), expected >= 4000"
log "ok: uring_cmds +$((stat1 - stat0))"

# polled: reaped by io_uring's poll loop, no interrupt on the request queues
i0=$(disk_irqs $d2)
must vbuio -m randread -p -q 8 -n 4000 /dev/vbblk/$d2
i1=$(disk_irqs $d2)
[ $((i1 - i0)) -le 40 ] || fail "4000 polled commands raised $((i1 - i0)) interrupts"
log "ok: 4000 polled commands, $((i1 - i0)) interrupts"
# Polled reads into a buffer read into before: its pages are dirty already
# and go back in the poller, with no workqueue hop (a context switch of
# the load per read, 4000 here). The bound leaves room for a slow kernel:
# on debug-7.2 runs of the same code gave 86 to 536.
must vbuio -m randread -p -q 1 -n 4000 -J /tmp/poll.json /dev/vbblk/$d2
ctx=$(sed -n 's/.*"ctx": \([0-9]*\),.*/\1/p' /tmp/poll.json)
[ -n "$ctx" ] || fail "no ctx in vbuio's JSON: $(cat /tmp/poll.json)"
[ "$ctx" -le 1000 ] || fail "4000 polled reads: $ctx context switches of the load"
log "ok: 4000 polled reads, $ctx context switches of the load"

# (main loop only: QMP counters and the backing file are the main loop's)
if [ "$VBSIDE" = main ]; then
	# FLUSH, DISCARD, WRITE ZEROES (with and without unmap), seen by the device:
	# its flush counter, and the backing file's allocation (QEMU 7.2 does not
	# count discards in query-blockstats)
	f0=$(hostcmd blockstats uring2 | sed -n 's/^flush_operations=//p')
	a0=$(hostcmd alloc uring2)
	cmd_res 0 /dev/vbblk/$d2 op=flush
	cmd_res 0 /dev/vbblk/$d2 op=flush
	cmd_res 0 /dev/vbblk/$d2 op=discard sector=0 nr=4096
	f1=$(hostcmd blockstats uring2 | sed -n 's/^flush_operations=//p')
	a1=$(hostcmd alloc uring2)
	[ $((f1 - f0)) -ge 2 ] || fail "2 FLUSH commands, the device saw $((f1 - f0))"
	[ "$a1" -le $((a0 - (1 << 20))) ] || fail "discarding 2 MiB: backing allocation $a0 -> $a1"
	log "ok: the device saw $((f1 - f0)) flushes; discard freed $(( (a0 - a1) >> 10 )) KiB"
	cmd_res 65536 /dev/vbblk/$d2 op=write sector=4096 len=65536
	cmd_res 0 /dev/vbblk/$d2 op=wzeroes sector=4096 nr=128
	cmd_res 0 /dev/vbblk/$d2 op=wzeroes sector=4224 nr=8 flags=2
	# busybox dd falls back to the page cache when O_DIRECT refuses its
	# buffer: drop the disk's cache first
	blockdev --flushbufs /dev/$d2
	dd if=/dev/$d2 of=/tmp/wz bs=512 skip=4096 count=136 2>/dev/null
	expect_eq "bytes read after WRITE ZEROES" "$(wc -c < /tmp/wz)" 69632
	expect_eq "non-zero bytes after WRITE ZEROES" "$(tr -d '\000' < /tmp/wz | wc -c)" 0
	cmd_res -95 /dev/vbblk/$d1 op=discard sector=0 nr=8

	# FLUSH order in the device's trace (checked on the host): marker
	# reads of one sector at 100000+N cut it in phases
	mark() {
		fio --name=mark --filename=/dev/$d2 --rw=read --bs=512 --size=512 \
			--offset=$(((100000 + $1) * 512)) --direct=1 --invalidate=0 \
			--ioengine=psync --output=/dev/null || fail "marker read $1"
	}
	mark 1
	i=0
	while [ $i -lt 8 ]; do
		cmd_res 4096 /dev/vbblk/$d2 op=write sector=$((8192 + i * 8)) len=4096
		cmd_res 0 /dev/vbblk/$d2 op=flush
		i=$((i + 1))
	done
	mark 2
	must vbuio -m write -q 8 -n 64 -o 9216 -z 262144 /dev/vbblk/$d2
	cmd_res 0 /dev/vbblk/$d2 op=flush
	mark 3
fi

# a full ring: 16 entries, QD 128 of passthrough beside QD 64 of block reads
w0=$(cat /sys/block/$d3/vbblk/ring_full_waits)
fio --name=beside --filename=/dev/$d3 --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=64 --time_based --runtime=4 > /tmp/beside.out 2>&1 &
pf=$!
must vbuio -m fill -q 128 -s 32 -c 16 -b 4096 -z 8388608 -x 31 /dev/vbblk/$d3
must vbuio -m randwrite -q 128 -s 16 -c 8 -n 4000 -z 8388608 -x 31 /dev/vbblk/$d3
wait $pf || { cat /tmp/beside.out; fail "fio beside the full ring failed"; }
must vbuio -m check -q 8 -b 65536 -z 8388608 -x 31 /dev/$d3
w1=$(cat /sys/block/$d3/vbblk/ring_full_waits)
[ $((w1 - w0)) -gt 0 ] || fail "QD 128 on a 16-entry ring never waited"
log "ok: full ring, $((w1 - w0)) waits, data verified"

# (main loop only: these never reach the device)
if [ "$VBSIDE" = main ]; then
	# hostile commands
	cap=$(cat /sys/block/$d1/size)
	maxhw=$(( $(cat /sys/block/$d1/queue/max_hw_sectors_kb) * 1024 ))
	maxseg=$(cat /sys/block/$d1/queue/max_segments)
	p=/dev/vbblk/$d1
	cmd_res -22 $p op=99
	cmd_res -22 $p op=read len=4096 rsvd=1
	cmd_res -22 $p op=read len=4096 flags=0x80
	cmd_res -22 $p op=read len=0
	cmd_res -22 $p op=read len=100
	cmd_res -22 $p op=read len=4096 nr=1
	cmd_res -22 $p op=flush len=4096
	cmd_res -22 $p op=getid len=10
	cmd_res -22 $p op=discard nr=0
	cmd_res -22 $p op=read len=4096 ioprio=0xe000
	cmd_res -22 $p op=read len=4096 sqe64=1
	cmd_res -25 $p op=read len=4096 cmdop=1
	cmd_res -34 $p op=read len=4096 sector=$cap
	cmd_res -34 $p op=read len=8192 sector=$((cap - 8))
	cmd_res -34 /dev/vbblk/$d2 op=discard sector=$cap nr=8
	# a 4K-block disk: sectors and lengths in whole blocks, or EINVAL
	p4k=/dev/vbblk/$d4k
	expect_eq "$d4k logical block" "$(cat /sys/block/$d4k/queue/logical_block_size)" 4096
	cap4k=$(cat /sys/block/$d4k/size)
	cmd_res -22 $p4k op=read len=512
	cmd_res -22 $p4k op=read len=6144
	cmd_res -22 $p4k op=read len=4096 sector=1
	cmd_res -22 $p4k op=write len=4096 sector=4
	cmd_res -22 $p4k op=discard sector=4 nr=8
	cmd_res -22 $p4k op=discard sector=8 nr=4
	cmd_res -34 $p4k op=read len=4096 sector=$cap4k
	cmd_res -34 $p4k op=read len=8192 sector=$((cap4k - 8))
	cmd_res 4096 $p4k op=read len=4096 sector=8
	cmd_res 8192 $p4k op=read len=8192 sector=$((cap4k - 16))
	cmd_res 4096 $p4k op=write len=4096 sector=16
	cmd_res 0 $p4k op=discard sector=8 nr=8
	cmd_res -14 $p op=read len=4096 addr=null
	cmd_res -14 $p op=read len=4096 addr=bad
	cmd_res -14 $p op=write len=4096 addr=kernel
	# a range that wraps: 7.2's pinning says EOVERFLOW, the node EFAULT
	cmd_res -14 $p op=read len=8192 addr=wrap
	cmd_res -22 $p op=read len=4096 addr=unaligned
	# the device would write into a read-only mapping: the pages are not given
	cmd_res -14 $p op=read len=4096 addr=ro
	# mapped, then not: what was taken is given back (few pages, and more
	# than a command keeps inline)
	cmd_res -14 $p op=read len=8192 addr=hole
	cmd_res -14 $p op=write len=65536 addr=hole
	if [ $(( (maxseg + 1) * 4096 )) -le $maxhw ]; then
		cmd_res -22 $p op=read len=$(( (maxseg + 1) * 4096 ))
	fi
	[ $((maxhw + 4096)) -le 1048576 ] && cmd_res -22 $p op=read len=$((maxhw + 4096))
	cmd_res 4096 $p op=read len=4096 vec=1
	cmd_res 4096 $p op=read len=4096 fixed=1
	# a read-only descriptor, a read-only disk
	cmd_res -9 $p op=write len=4096 rdonly=1
	cmd_res -9 $p op=discard nr=8 rdonly=1
	cmd_res 4096 $p op=read len=4096 rdonly=1
	cmd_res -30 /dev/vbblk/$dro op=write len=4096
	cmd_res 4096 /dev/vbblk/$dro op=read len=4096

	# an unprivileged user: the node's permissions decide the open, as the
	# disk's do; a read-only open reads but writes nothing; no RT ioprio
	nobody() { /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	mustfail nobody vbuio cmd $p op=read len=4096 rdonly=1
	chgrp 65534 $p && chmod 0640 $p || fail "chgrp/chmod $p"
	mustfail nobody vbuio cmd $p op=read len=4096
	out=$(nobody vbuio cmd $p op=read len=4096 rdonly=1 | sed -n 's/^res=//p')
	expect_eq "unprivileged read through a read-only open" "$out" 4096
	out=$(nobody vbuio cmd $p op=write len=4096 rdonly=1 | sed -n 's/^res=//p')
	expect_eq "unprivileged write through a read-only open" "$out" -9
	out=$(nobody vbuio cmd $p op=read len=4096 rdonly=1 ioprio=0x2000 | sed -n 's/^res=//p')
	expect_eq "unprivileged real-time ioprio" "$out" -1
	chgrp 0 $p && chmod 0600 $p

	# rmmod while the node is held open is refused; the disks keep working
	exec 3</dev/vbblk/$d1
	mustfail rmmod vbblk
	exec 3<&-
	cmd_res 4096 $p op=read len=4096
fi

# unbind with passthrough commands in flight: every one ends, the load exits
vdev=$(basename "$(readlink -f /sys/block/$d2/device)")
vbuio -m randread -q 32 -t 30 /dev/vbblk/$d2 > /tmp/load.out 2>&1 &
pl=$!
exec 4</dev/vbblk/$d2
sleep 2
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/unbind || fail "unbind failed"
wait_gone $d2 || fail "$d2 still there after unbind"
wait $pl && fail "the load did not see the disk go"
cat /tmp/load.out
grep -q "ios=" /tmp/load.out || fail "the load did not finish"
[ ! -e /dev/vbblk/$d2 ] || fail "/dev/vbblk/$d2 still there"
# a descriptor held across the unbind gets ENODEV
cmd_res -19 fd:4 op=read len=4096
exec 4<&-
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/bind || fail "bind failed"
d2=$(disk_by_serial URING-2)
must vbuio -m check -q 8 -b 65536 -o $area -z 8388608 -x 21 /dev/vbblk/$d2

# (main loop only: hot-unplug is PCI, the same whatever serves the disk)
if [ "$VBSIDE" = main ]; then
	# hot-unplug (QMP device_del) with passthrough commands in flight
	vbuio -m randwrite -q 32 -t 30 /dev/vbblk/$d4 > /tmp/load4.out 2>&1 &
	pl=$!
	sleep 2
	hostcmd device_del uring4 > /dev/null || fail "device_del failed"
	wait_gone $d4 60 || fail "$d4 still there after device_del"
	wait $pl && fail "the load did not see the disk go"
	cat /tmp/load4.out
	grep -q "ios=" /tmp/load4.out || fail "the load did not finish"
	[ ! -e /dev/vbblk/$d4 ] || fail "/dev/vbblk/$d4 still there"
fi
drv_unload
log "uring ok"
