# poll: poll_queues=1 gives the disk a virtqueue reaped by polling; polled
# I/O (io_uring hipri, QD1 and QD8) is verified and completes without
# interrupts; interrupt-driven I/O still works beside it; unload is clean.
# vbblk's poll queue has a vector with its signals suppressed (so that a
# vhost-user backend gets a call eventfd for it): at most a few interrupts
# there. More polled I/O in one submission than the poll queue has commands
# completes (queue_depth=4, 32 per io_uring_enter). On vhost-user the
# harness also fails the test if the daemon logged
# a vu_panic (a dropped connection, which makes polled I/O crawl).
# (6.1 no longer polls synchronous RWF_HIPRI I/O, so pvsync2 is not used.)
. /tests/lib.sh
drv_load poll_queues=1
d=$(disk_by_serial POLL-1)
[ "$(sysblk $d queue/io_poll)" = 1 ] || fail "queue/io_poll is not 1 with poll_queues=1"
# vbblk: two interrupt-driven queues (one per CPU) and the poll queue (stock
# virtio_blk takes its poll queue out of the CPU count)
nv=$(vq_count $d)
log "interrupt-driven queues: $nv, blk-mq queues: $(hwq_count $d)"
if [ "$DRIVER" = vbblk ]; then
	[ "$nv" = 2 ] || fail "expected 2 interrupt-driven queues, found $nv"
	if [ -d /sys/block/$d/mq ]; then
		[ "$(hwq_count $d)" = 3 ] || fail "expected 3 blk-mq queues, found $(hwq_count $d)"
	fi
fi

for qd in 1 8; do
	i0=$(disk_irqs $d); p0=$(disk_irqs $d poll)
	run_fio --name=poll-qd$qd --filename=/dev/$d --ioengine=io_uring --hipri=1 --direct=1 \
		--rw=randwrite --bs=4k --iodepth=$qd --size=16M --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --randrepeat=0
	i1=$(disk_irqs $d); p1=$(disk_irqs $d poll)
	ios=8192 # 4096 writes and 4096 verify reads
	log "io_uring hipri QD$qd: $((i1 - i0)) interrupts for $ios polled I/Os, $((p1 - p0)) on the poll queue"
	[ $((i1 - i0)) -lt $((ios / 10)) ] || fail "hipri I/O at QD$qd raised $((i1 - i0)) interrupts"
	[ $((p1 - p0)) -lt $((ios / 100)) ] || fail "poll queue raised $((p1 - p0)) interrupts for $ios I/Os"
done
# vbblk request mode ends what io_uring polls in its completion batch, as
# upstream virtio_blk does: most of the 16384 polled I/Os above
if [ -d /sys/block/$d/vbblk ] && [ -d /sys/block/$d/mq ]; then
	b=$(cat /sys/block/$d/vbblk/poll_batched)
	log "poll_batched=$b"
	[ "$b" -ge 8192 ] || fail "request mode: $b polled requests ended in a completion batch"
fi

# interrupt-driven I/O beside the poll queue, both queues busy at once
i0=$(disk_irqs $d)
fio --name=irq --filename=/dev/$d --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
	--iodepth=16 --offset=32M --size=16M --verify=crc32c --do_verify=1 --verify_fatal=1 \
	> /tmp/irq.out 2>&1 &
irqpid=$!
run_fio --name=mixpoll --filename=/dev/$d --ioengine=io_uring --hipri=1 --direct=1 \
	--rw=randrw --bs=4k --iodepth=16 --size=16M --verify=crc32c --do_verify=1 --verify_fatal=1
wait $irqpid || { cat /tmp/irq.out; fail "interrupt-driven fio beside polled I/O failed"; }
[ $(($(disk_irqs $d) - i0)) -gt 1000 ] || fail "interrupt-driven I/O raised almost no interrupts"

# polled I/O in flight when the queue is frozen by unload would hang remove
drv_unload
wait_gone $d || fail "$d did not go away"

# more polled I/O in one io_uring_enter than the poll queue lends commands
# completes and verifies (io_uring tries each bio with REQ_NOWAIT first and
# retries one that got EAGAIN from a worker, so this does not reach the
# submitter that polls for a free command under its own plug)
drv_load poll_queues=1 queue_depth=4
d=$(disk_by_serial POLL-1)
run_fio --name=pollfull --filename=/dev/$d --ioengine=io_uring --hipri=1 --direct=1 \
	--rw=randwrite --bs=4k --iodepth=32 --iodepth_batch_submit=32 --size=8M \
	--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0
drv_unload
wait_gone $d || fail "$d did not go away"
log "poll ok"
