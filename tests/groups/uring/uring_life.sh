# uring_life: the passthrough node's memory safety and lifetime, what a
# second ring, a second poller, a removal or a stale command can do:
#  - GET_ID after a DISCARD on the same CPU (the same command, reused):
#    the bytes after the serial's NUL are zero, not the DISCARD's range
#  - two IOPOLL rings on one poll queue, then one beside a polled reader
#    of the block device (fio hipri): each reaps the other's commands, only
#    a command's own ring ends it (on 6.14+ io_uring's caches corrupt
#    otherwise: the debug kernel's KASAN sees it); every read completes
#  - a descriptor opened read-write and held across an unbind: every
#    command gets ENODEV (not EROFS read from a freed struct vbblk)
#  - unbind under an IOPOLL load at QD 32: the drain reaps the poll queue,
#    so it neither waits for remove_timeout nor fails with EIO what the
#    device completed; the load sees ENODEV only
#  - polled reads, then rmmod at once: nothing of the module is left to run
#  - unbind while every command of a queue's pool is a completed polled one
#    nobody reaps and one more from io-wq waits for a free one: the waiter
#    holds no gate, unbind ends, the waiter gets ENODEV
#  - 300 polled commands nobody reaps on that pool: spares are bounded,
#    those beyond get ENOMEM, the rest complete when the ring is reaped
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
drv_load poll_queues=1
d1=$(disk_by_serial LIFE-1)
d2=$(disk_by_serial LIFE-2)
secs=${VBURING_SECS:-20}

# GET_ID's buffer shares the command with DISCARD's range: a DISCARD of
# 0x5a8 sectors, then GET_ID on the same CPU takes the same command back.
cmd_res 0 /dev/vbblk/$d1 op=discard sector=0x12340 nr=0x5a8 cpu=0
hex=$(vbuio cmd /dev/vbblk/$d1 op=getid len=20 cpu=0 | sed -n 's/^idhex=//p')
serial=$(cat /sys/block/$d1/serial)
[ ${#hex} = 40 ] || fail "GET_ID: no 20 bytes: '$hex'"
n=${#serial}
tailhex=$(echo "$hex" | cut -c$((2 * n + 1))-)
expect_eq "GET_ID bytes from the serial's NUL on" "$tailhex" \
	"$(printf '%0*d' $((40 - 2 * n)) 0)"

# Two polled rings on the one poll queue (poll_queues=1), one per CPU.
el0=$(cat /sys/block/$d1/vbblk/uring_polled_elsewhere)
vbuio -m randread -p -q 8 -t $secs -C 0 /dev/vbblk/$d1 > /tmp/r0.out 2>&1 &
p0=$!
vbuio -m randread -p -q 8 -t $secs -C 1 /dev/vbblk/$d1 > /tmp/r1.out 2>&1 &
p1=$!
wait $p0 || { cat /tmp/r0.out; fail "polled ring 0 failed"; }
wait $p1 || { cat /tmp/r1.out; fail "polled ring 1 failed"; }
cat /tmp/r0.out /tmp/r1.out
el1=$(cat /sys/block/$d1/vbblk/uring_polled_elsewhere)
[ $((el1 - el0)) -gt 0 ] || fail "no command was reaped by the other ring: the race was not run"
log "ok: two polled rings, $((el1 - el0)) commands reaped by the other"

# One polled ring beside a polled reader of the block device.
fio --name=hipri --filename=/dev/$d1 --rw=randread --bs=4k --direct=1 \
	--ioengine=io_uring --hipri --iodepth=8 --time_based --runtime=$secs \
	--cpus_allowed=1 > /tmp/hipri.out 2>&1 &
pf=$!
must vbuio -m randread -p -q 8 -t $secs -C 0 /dev/vbblk/$d1
wait $pf || { cat /tmp/hipri.out; fail "fio hipri beside the polled ring failed"; }
el2=$(cat /sys/block/$d1/vbblk/uring_polled_elsewhere)
log "ok: polled ring beside fio hipri, $((el2 - el1)) commands reaped elsewhere"
# a VBBLK_DEBUG=y build counts polled commands ended outside their ring's poll
f=/sys/kernel/debug/vbblk/uring_polled_foreign
[ -r $f ] && expect_eq "polled commands ended outside their own ring's poll" "$(cat $f)" 0

# A read-write descriptor held across an unbind, nobody else holding the
# disk: its struct vbblk must outlive the node's users.
vdev=$(basename "$(readlink -f /sys/block/$d2/device)")
must vbuio -m fill -q 8 -b 65536 -z 8388608 -x 51 /dev/vbblk/$d2
exec 5<>/dev/vbblk/$d2
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/unbind || fail "unbind failed"
wait_gone $d2 || fail "$d2 still there after unbind"
cmd_res -19 fd:5 op=write len=4096
cmd_res -19 fd:5 op=discard nr=8
cmd_res -19 fd:5 op=wzeroes nr=8
cmd_res -19 fd:5 op=read len=4096
cmd_res -19 fd:5 op=flush
cmd_res -19 fd:5 op=getid len=20
exec 5<&-
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/bind || fail "bind failed"
d2=$(disk_by_serial LIFE-2)

# Unbind under an IOPOLL load: nothing but the load's own ring reaps the
# poll queue, and its task cannot enter once the gate is shut.
n0=$(dmesg | wc -l)
vbuio -m randread -p -q 32 -t 120 /dev/vbblk/$d2 > /tmp/load.out 2>&1 &
pl=$!
sleep 3
t0=$(date +%s)
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/unbind || fail "unbind failed"
t1=$(date +%s)
wait_gone $d2 || fail "$d2 still there after unbind"
wait $pl && fail "the load did not see the disk go"
cat /tmp/load.out
dmesg | tail -n +$((n0 + 1)) | grep -q 'remove_timeout' &&
	fail "unbind gave up on a healthy device: $(dmesg | grep remove_timeout | tail -n 1)"
grep -q "ios=" /tmp/load.out || fail "the load did not finish"
eio=$(sed -n 's/.* eio=\([0-9]*\).*/\1/p' /tmp/load.out)
enodev=$(sed -n 's/.* enodev=\([0-9]*\).*/\1/p' /tmp/load.out)
expect_eq "EIO seen by the polled load across unbind" "$eio" 0
[ "${enodev:-0}" -gt 0 ] || fail "the load saw no ENODEV"
# a hang detector, not a timing: remove_timeout is 120 s
[ $((t1 - t0)) -lt 60 ] || fail "unbind under a polled load took $((t1 - t0)) s"
log "ok: unbind under an IOPOLL load in $((t1 - t0)) s, the load saw $enodev ENODEV, no EIO"
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/bind || fail "bind failed"
d2=$(disk_by_serial LIFE-2)
must vbuio -m check -q 8 -b 65536 -z 8388608 -x 51 /dev/vbblk/$d2

# Polled reads into fresh pages, the ring closed, the module gone at once.
must vbuio -m randread -p -q 16 -b 65536 -n 2000 /dev/vbblk/$d1
drv_unload

# A pool of 4 commands per queue, all polled commands the device completed
# and nobody reaps (their ring's owner sleeps), and one more issued from
# io-wq that waits for a free one: unbind must not wait on that waiter,
# which would hold the gate until the owner polls (issue 48, M1).
drv_load poll_queues=1 queue_depth=4
d2=$(disk_by_serial LIFE-2)
hold_start $d2 4 waits
( echo "$vdev" > /sys/bus/virtio/drivers/vbblk/unbind; echo "rc=$?" > /tmp/unbind.rc ) &
i=0
until [ -e /tmp/unbind.rc ]; do
	i=$((i + 1))
	# a hang detector, not a timing
	[ $i -le $((600 * VBSCALE)) ] ||
		fail "unbind waits on a submitter waiting for a free command"
	sleep 0.1
done
expect_eq "unbind with a full pool of unreaped polled commands" "$(cat /tmp/unbind.rc)" rc=0
wait_gone $d2 || fail "$d2 still there after unbind"
kill -9 $ph
wait $ph || true
echo "$vdev" > /sys/bus/virtio/drivers/vbblk/bind || fail "bind failed"
d2=$(disk_by_serial LIFE-2)
must vbuio -m check -q 8 -b 65536 -z 8388608 -x 51 /dev/vbblk/$d2

# 300 polled READs nobody reaps, issued without blocking, on a pool of 4:
# spare commands beyond the pool are bounded (4 pools' worth, at least
# 256, per queue), so 40 get ENOMEM at once (issue 48, L1); the rest and
# the one from io-wq complete once the ring is reaped.
hold_start $d2 300
hold_reap
expect_eq "commands beyond the pool and its spares: ENOMEM" \
	"$(grep -c '^res[0-9]*=-12$' /tmp/hold.out)" 40
expect_eq "commands that completed" "$(grep -c '^res[0-9]*=4096$' /tmp/hold.out)" 261
drv_unload
log "uring_life ok"
