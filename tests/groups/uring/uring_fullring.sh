#!/bin/sh
# A full ring under passthrough writes, round after round: QD 128 of
# passthrough writes on a 16-entry ring beside QD 64 of block reads, then
# every byte checked through the block device. io_uring's non-blocking
# issue finds the ring full again and again; each write must land. (The
# old code returned EAGAIN there, and Debian's 6.12 issued the command
# again with its SQE slot as user space had refilled it: 4 KiB pieces
# that were never written, their writes reported done.)
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
drv_load poll_queues=1
d=$(disk_by_serial FULL-1)
rounds=12
n=0
while [ $n -lt $rounds ]; do
	seed=$((31 + n))
	fio --name=beside --filename=/dev/$d --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=64 --time_based --runtime=3 \
		> /tmp/beside.out 2>&1 &
	pf=$!
	must vbuio -m fill -q 128 -s 32 -c 16 -b 4096 -z 8388608 -x $seed /dev/vbblk/$d
	must vbuio -m randwrite -q 128 -s 16 -c 8 -n 2000 -z 8388608 -x $seed /dev/vbblk/$d
	wait $pf || { cat /tmp/beside.out; fail "fio beside the full ring failed"; }
	vbuio -m check -q 8 -b 65536 -z 8388608 -x $seed /dev/$d ||
		fail "round $n: writes lost or misplaced (above)"
	n=$((n + 1))
done
# FIFO: 2048 sequential writes from CPU 0, submitted in order, beside block
# reads on the same virtqueue; those that find the ring full wait in the
# driver's worker, and the host checks that the device got them in order
# (_fifo_check in cases.py: no later write overtakes a waiting one).
d0=$(cat /sys/block/$d/vbblk/uring_deferred)
fio --name=beside --filename=/dev/$d --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=64 --time_based --runtime=30 --cpus_allowed=0 \
	> /tmp/beside.out 2>&1 &
pf=$!
sleep 1
must vbuio -m write -q 128 -s 128 -c 16 -b 4096 -o 16384 -z 8388608 -n 2048 -C 0 \
	-x 77 /dev/vbblk/$d
kill $pf 2>/dev/null
wait $pf || true
d1=$(cat /sys/block/$d/vbblk/uring_deferred)
[ "$d1" -gt "$d0" ] || fail "no write of the FIFO step waited in the driver's worker"
log "FIFO step: $((d1 - d0)) of 2048 writes queued by the driver's worker"
waits=$(cat /sys/block/$d/vbblk/ring_full_waits)
deferred=$(cat /sys/block/$d/vbblk/uring_deferred)
[ "$waits" -gt 0 ] || fail "QD 128 on a 16-entry ring never found it full"
log "ok: $rounds rounds verified; ring full $waits times, $deferred commands queued by the driver's worker"
