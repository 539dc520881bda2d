# batching: how bios become device requests in bio mode, counted on the
# device side (QMP query-blockstats) and by the driver (/sys/block/vdX/vbblk).
#  1. 4k sequential O_DIRECT writes and reads submitted 16 at a time reach
#     the device as 1 request per 16 bios; the data verifies. A plug the
#     scheduler cuts (a move to the other CPU's batch, or a sleep that
#     flushes the plug, inside one io_submit()) costs one more request:
#     up to 8 extra are allowed, so broken batching (4096) still fails.
#  2. 4k random reads are not merged.
#  3. A lone bio on an idle queue is never held: QD1 sequential reads give
#     exactly one request per bio, all sent at once (or, since 6.10, where
#     submit_bio() plugs every bio itself, at that plug's flush before
#     submit_bio() returns).
#  4. The same sequential stream refilled one I/O at a time (QD32) merges
#     while requests are in flight (the ratio is printed, and must be < 1).
#  5. When the device is the bottleneck (QMP I/O throttling), that same
#     QD32 stream reaches it as at most 1 request per 4 bios. A held
#     batch grows only by what the guest sends while the device works, so
#     the limit is 500 IOPS or an eighth of the rate the guest reached in
#     4, whichever is less (a debug kernel under TCG sent 502/s here).
#  6. batch=0: one request per bio, and a plug of 16 bios costs one notify.
#  7. max_sectors_kb lowered to 16 at run time: batches of 4 KiB bios hold
#     at most 4 (it was read once, at probe).
#  8. Setting batch=0 while a stream batch is held sends it at once
#     (dispatch_drain), rather than leaving it to the hold policy.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || fail "batching is a vbblk bio-mode test"
drv_load
d=$(disk_by_serial BATCH-1)
[ -d /sys/block/$d/vbblk ] || fail "no /sys/block/$d/vbblk"
[ ! -d /sys/block/$d/mq ] || fail "$d is a blk-mq disk: not in bio mode"

dev() { hostcmd blockstats batch | sed -n "s/^$1=//p"; }
st() { cat /sys/block/$d/vbblk/$1; }
reasons="direct noncontig limit plug completion flush"
snap() {
	R0=$(dev rd_operations); W0=$(dev wr_operations); B0=$(st bios); Q0=$(st requests); N0=$(st notifies); D0=$(st dispatch_direct)
	for r in $reasons; do eval "S_$r=$(st dispatch_$r)"; done
}
why() { for r in $reasons; do eval "printf '%s=%s ' $r \$(($(st dispatch_$r) - S_$r))"; done; }
delta() { # sets DR DW DB DQ DN DD
	DR=$(($(dev rd_operations) - R0)); DW=$(($(dev wr_operations) - W0))
	DB=$(($(st bios) - B0)); DQ=$(($(st requests) - Q0))
	DN=$(($(st notifies) - N0)); DD=$(($(st dispatch_direct) - D0))
	log "$1: bios=$DB requests=$DQ device rd=$DR wr=$DW notifies=$DN"
	log "  dispatched by: $(why)"
}

# fio_iops: the IOPS the last run_fio reported, as a whole number
fio_iops() {
	awk 'match($0, /IOPS=[0-9.]+k?/) { v = substr($0, RSTART + 5, RLENGTH - 5)
		if (v ~ /k$/) v = v * 1000; print int(v); exit }' /tmp/fio.out
}

common="--filename=/dev/$d --direct=1 --bs=4k --size=16m --group_reporting --name=batch"
bsub="--ioengine=libaio --iodepth=32 --iodepth_batch_submit=16 --iodepth_low=16 --iodepth_batch_complete_min=16"

# 1. batch submit: writes, reads, then verify the data
snap
run_fio $common $bsub --rw=write --verify=crc32c --do_verify=0
delta "seq write, batches of 16"
[ "$DB" -eq 4096 ] || fail "expected 4096 bios, got $DB"
[ "$DW" -le $((256 + 8)) ] || fail "seq write: $DW device writes for 4096 bios (want 256, + up to 8 cut plugs)"
[ "$DQ" -eq "$DW" ] || fail "driver counted $DQ requests, device saw $DW writes"
snap
run_fio $common $bsub --rw=read
delta "seq read, batches of 16"
[ "$DR" -le $((256 + 8)) ] || fail "seq read: $DR device reads for 4096 bios (want 256, + up to 8 cut plugs)"
[ "$DQ" -eq "$DR" ] || fail "driver counted $DQ requests, device saw $DR reads"
run_fio $common --ioengine=libaio --iodepth=32 --rw=write --verify=crc32c --verify_only=1

# 2. random reads: nothing to merge
snap
run_fio $common $bsub --rw=randread --randrepeat=1 --norandommap=0
delta "random read, batches of 16"
[ $((DR * 100)) -ge $((DB * 98)) ] || fail "random reads merged: $DR requests for $DB bios"

# 3. QD1: every bio goes out at once, one request each
snap
run_fio $common --ioengine=psync --rw=read --size=4m
delta "seq read QD1"
[ "$DR" -eq "$DB" ] || fail "QD1: $DR device reads for $DB bios (a lone bio was held)"
DP=$(($(st dispatch_plug) - S_plug))
[ $((DD + DP)) -eq "$DB" ] || fail "QD1: only $((DD + DP)) of $DB bios were sent at once"

# 4. QD32 refilled one at a time: merges while requests are in flight
snap
run_fio $common --ioengine=libaio --iodepth=32 --rw=write --verify=crc32c --do_verify=0
delta "seq write QD32, one at a time"
qd32_iops=$(fio_iops)
[ "$DW" -lt "$DB" ] || fail "QD32 stream: no merging ($DW requests for $DB bios)"
echo "qd32_stream_bios=$DB qd32_stream_requests=$DW" > /host/batching-ratio.txt
log "QD32 stream: $DB bios -> $DW requests (1 request per $((DB / DW)).$(((DB * 10 / DW) % 10)) bios)"
run_fio $common --ioengine=libaio --iodepth=32 --rw=write --verify=crc32c --verify_only=1

# 5. a busy device: throttled, the stream must merge
lim=$((qd32_iops / 8))
[ $lim -le 500 ] || lim=500
[ $lim -ge 20 ] || lim=20
throttle batch $lim
snap
run_fio $common --ioengine=libaio --iodepth=32 --rw=write --size=8m
delta "seq write QD32, one at a time, device throttled to $lim IOPS"
throttle batch 0
ms=$(grep -o '/[0-9]*msec)' /tmp/fio.out | head -n 1 | tr -dc 0-9)
echo "busy_stream_bios=$DB busy_stream_requests=$DW busy_iops=$lim" >> /host/batching-ratio.txt
log "busy device at $lim IOPS (the guest sent $qd32_iops/s unthrottled):" \
	"$DB bios -> $DW requests, $((DW * 1000 / (${ms:-0} + 1))) requests/s"
[ $((DW * 4)) -le "$DB" ] || fail "busy device: $DW requests for $DB bios (want <= 1 per 4)"

# 6. batching off: one request per bio; the plug still saves notifies
echo 0 > /sys/module/vbblk/parameters/batch
snap
run_fio $common $bsub --rw=write
delta "seq write, batches of 16, batch=0"
echo 1 > /sys/module/vbblk/parameters/batch
[ "$DW" -eq "$DB" ] || fail "batch=0: $DW requests for $DB bios"
[ $((DN * 8)) -le "$DW" ] || fail "batch=0: $DN notifies for $DW requests (plug should send ~1 per 16)"

# 7. max_sectors_kb lowered at run time: no batch outgrows it
msk=$(sysblk $d queue/max_sectors_kb)
echo 16 > /sys/block/$d/queue/max_sectors_kb || fail "cannot set max_sectors_kb"
snap
run_fio $common $bsub --rw=write
delta "seq write, batches of 16, max_sectors_kb=16"
echo $msk > /sys/block/$d/queue/max_sectors_kb
[ "$DW" -ge $((DB / 4)) ] || fail "max_sectors_kb=16: $DW requests for $DB bios of 4 KiB (a batch outgrew it)"

# 8. batch=0 while a stream batch is held (a QD32 stream on a device
#    throttled to 5 IOPS keeps one held for seconds): it is sent at once
throttle batch 5
fio $common --ioengine=libaio --iodepth=32 --rw=write --size=8m --time_based \
	--runtime=60 > /tmp/held.out 2>&1 &
fpid=$!
sent=0
for try in 1 2 3 4 5; do
	sleep 2
	dr0=$(st dispatch_drain)
	echo 0 > /sys/module/vbblk/parameters/batch
	sent=$(($(st dispatch_drain) - dr0))
	echo 1 > /sys/module/vbblk/parameters/batch
	log "batch=0 with a stream held (try $try): $sent held batch(es) sent"
	[ "$sent" -eq 0 ] || break
done
kill $fpid 2>/dev/null
throttle batch 0
wait $fpid 2>/dev/null || true
[ "$sent" -gt 0 ] || fail "setting batch=0 sent no held batch (5 tries, a stream held on a 5-IOPS device)"
log "batching ok"
