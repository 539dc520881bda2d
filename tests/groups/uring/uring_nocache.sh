#!/bin/sh
# Passthrough FLUSH on a device without a volatile cache completes at once
# with 0, on a plain ring and on an IOPOLL ring, with and without poll
# queues, many times in a row and between polled reads. (On 6.1 the old
# code answered it inline with 0, so io_uring both posted it and queued
# it for polling on the same list node: io_do_iopoll spun for ever.)
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
for pq in 0 1; do
	drv_load poll_queues=$pq
	d=$(disk_by_serial NC-1)
	ct=$(cat /sys/block/$d/cache_type)
	[ "$ct" = "write through" ] || fail "cache_type is '$ct': the device has a cache"
	cmd_res 0 /dev/vbblk/$d op=flush n=64
	cmd_res 4096 /dev/vbblk/$d op=read len=4096 poll=1 n=4
	cmd_res 0 /dev/vbblk/$d op=flush poll=1 n=64
	cmd_res 4096 /dev/vbblk/$d op=read len=4096 poll=1 n=4
	cmd_res 0 /dev/vbblk/$d op=flush poll=1
	drv_unload
	log "ok: poll_queues=$pq"
done
