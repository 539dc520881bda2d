# trace: every vbblk tracepoint fires in a run that exercises it. Batched
# O_DIRECT writes (bio_queue, batch_hold, batch_release, cmd_queue, notify,
# cmd_complete), an fsync and O_DSYNC writes on a write-back disk
# (flush_stage), 16 batched reads over a bad sector (retry). Request mode
# has no bio path: its events are cmd_queue, notify, cmd_complete and
# retry, and the bio path's never fire. Every command traced as queued is
# traced as completed, and they are as many as the driver's requests.
. /tests/lib.sh
drv_load
touch /tmp/.allow_io_errors
d=$(disk_by_serial TRACE-1)
e=$(disk_by_serial TRACE-EINJ)

T=/sys/kernel/tracing
grep -q " $T " /proc/mounts || mount -t tracefs nodev $T 2>/dev/null ||
	skip "no tracefs in this kernel"
[ -d $T/events/vbblk ] || fail "no events/vbblk in tracefs: the driver's tracepoints are missing"
echo 8192 > $T/buffer_size_kb
echo > $T/trace
req0=$(( $(cat /sys/block/$d/vbblk/requests) + $(cat /sys/block/$e/vbblk/requests) ))
echo 1 > $T/events/vbblk/enable
echo 1 > $T/tracing_on

# 16 x 4 KiB submitted together, under one plug
fio --name=w --filename=/dev/$d --rw=write --bs=4k --size=64k --direct=1 --ioengine=libaio \
	--iodepth=16 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 > /tmp/fio.out 2>&1 ||
	{ cat /tmp/fio.out; fail "batched writes failed"; }
# fsync (an empty PREFLUSH) and O_DSYNC writes (FUA) on the write-back disk
must dd if=/dev/zero of=/dev/$d bs=4k count=4 conv=fsync 2>/dev/null
fio --name=dsync --filename=/dev/$d --rw=write --bs=4k --size=16k --offset=256k --direct=1 \
	--ioengine=psync --sync=dsync > /tmp/fio.out 2>&1 || { cat /tmp/fio.out; fail "O_DSYNC writes failed"; }
# 8 concurrent flush loops (4 of fsync after each write, 4 of O_DSYNC
# writes): flush stages that find a FLUSH running wait for the next, their
# event fired as each one queues
fio --name=fs --filename=/dev/$d --rw=write --bs=4k --size=64k --offset=1m --offset_increment=64k \
	--numjobs=4 --direct=1 --ioengine=psync --fsync=1 --invalidate=0 \
	--name=ds --filename=/dev/$d --rw=write --bs=4k --size=64k --offset=2m --offset_increment=64k \
	--numjobs=4 --direct=1 --ioengine=psync --sync=dsync --invalidate=0 > /tmp/fio.out 2>&1 ||
	{ cat /tmp/fio.out; fail "concurrent flush loops failed"; }
# blkdebug fails reads of sector 8200: a batch over it is retried bio by bio
fio --name=r --filename=/dev/$e --rw=read --bs=4k --offset=$(((4 << 20) - 28672)) --size=64k \
	--direct=1 --ioengine=libaio --iodepth=16 --iodepth_batch_submit=16 \
	--iodepth_batch_complete_min=16 --continue_on_error=all > /tmp/fio.out 2>&1
sync

echo 0 > $T/tracing_on
echo 0 > $T/events/vbblk/enable
req1=$(( $(cat /sys/block/$d/vbblk/requests) + $(cat /sys/block/$e/vbblk/requests) ))
cat $T/trace > /tmp/trace.txt
grep -q "LOST" /tmp/trace.txt && fail "the trace buffer overflowed"
n() { grep -c " vbblk_$1: " /tmp/trace.txt || true; }
for ev in bio_queue batch_hold batch_release cmd_queue notify cmd_complete flush_stage retry; do
	log "vbblk_$ev: $(n $ev) events"
done
grep -m 3 -E "vbblk_(batch_release|cmd_queue|cmd_complete|retry|flush_stage): " /tmp/trace.txt || true

case " $VBPARAMS " in *" mode=request "*) mode=request ;; *) mode=bio ;; esac
if [ $mode = bio ]; then
	want="bio_queue batch_hold batch_release cmd_queue notify cmd_complete flush_stage retry"
	none=""
else
	want="cmd_queue notify cmd_complete retry"
	none="bio_queue batch_hold batch_release flush_stage"
fi
for ev in $want; do
	[ "$(n $ev)" -gt 0 ] || fail "vbblk_$ev never fired"
done
for ev in $none; do
	[ "$(n $ev)" = 0 ] || fail "vbblk_$ev fired $(n $ev) times in $mode mode"
done
log "ok: $want fired${none:+, $none did not}"

expect_eq "commands completed as traced" "$(n cmd_complete)" "$(n cmd_queue)"
expect_eq "commands traced = the driver's requests" "$(n cmd_queue)" "$((req1 - req0))"
# the failed read came back with status 1 (IOERR), and was retried
grep -q " vbblk_cmd_complete: .* IN .* status=1" /tmp/trace.txt ||
	fail "no failed read among the completions"
if [ $mode = bio ]; then
	grep -q " vbblk_batch_hold: .* bios=1 .*plugged" /tmp/trace.txt ||
		fail "no plugged batch held"
	grep -q " vbblk_batch_release: .* reason=plug" /tmp/trace.txt ||
		fail "no batch released at unplug"
	grep -E " vbblk_batch_release: .* bios=([2-9]|1[0-6]) " /tmp/trace.txt >/dev/null ||
		fail "no batch of several bios released"
	grep -q " vbblk_flush_stage: .*leads a FLUSH" /tmp/trace.txt ||
		fail "no flush stage led a FLUSH"
	grep -q " vbblk_cmd_queue: .* FLUSH " /tmp/trace.txt || fail "no FLUSH queued"
	# one preflush stage per PREFLUSH bio and one postflush stage per FUA
	# write, each with its own bio's sector and size: an event that read
	# a command another CPU had ended and reused would repeat another's
	awk '/ vbblk_bio_queue: / && / preflush/ { print "preflush", $0 }
		/ vbblk_bio_queue: / && / fua/ && $0 !~ / \+ 0/ {
			for (i = 1; i < NF; i++) if ($(i + 1) == "+") print "postflush", $i, $(i + 2) * 512 }
		/ vbblk_flush_stage: / {
			for (i = 1; i < NF; i++) if ($i == "of") {
				b = $(i + 2); sub(/^bytes=/, "", b); sub(/:$/, "", b)
				if ($(i - 1) == "postflush") print "postflush", $(i + 1), b
				else print "preflush-stage" } }' /tmp/trace.txt > /tmp/fl.txt
	pre=$(grep -c "^preflush " /tmp/fl.txt || true)
	expect_eq "preflush stages = PREFLUSH bios" "$(grep -c "^preflush-stage" /tmp/fl.txt || true)" "$pre"
	grep "^postflush" /tmp/fl.txt | sort | uniq -c > /tmp/fl.sum
	awk '$1 != 2 { bad = 1; print "unmatched:", $0 } END { exit bad }' /tmp/fl.sum ||
		fail "postflush stages and FUA writes differ (sector, bytes)"
	log "ok: $pre preflush and $(wc -l < /tmp/fl.sum) postflush stages match their bios;" \
		"$(grep -c " vbblk_flush_stage: .*shares the next FLUSH" /tmp/trace.txt || true) shared a FLUSH"
fi
log "ok: the events' fields match the I/O that ran"
drv_unload
