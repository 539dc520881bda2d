# modes_qos: what each mode keeps and gives up of the block layer's
# controls, as README.md and docs/parameters.md ("What each mode gives up")
# state them; one statement per check. The disk is bio-based in bio mode,
# blk-mq in request mode and under stock virtio_blk (DRIVER=virtio_blk).
# Bounds are orders of magnitude (a 200-IOPS limit against thousands
# unlimited), never tight timings: TCG and a shared host move IOPS.
#  - trace events: block_bio_queue in both; block_bio_complete for a
#    bio-based disk; request events (block_rq_issue/complete) only blk-mq
#  - I/O schedulers (bfq.ko from the host): bio-based: `echo bfq` and
#    `echo mq-deadline` succeed, the scheduler stays none (6.12, 7.2: the
#    file is not there); blk-mq: both are taken
#  - polling: poll_queues=1 gives queue/io_poll 1 and io_uring hipri reads
#  - io.max riops=200 holds in every mode (blk-throttle, in submit_bio)
#  - iocost with a 200-IOPS linear model at a fixed vrate: holds a blk-mq
#    disk near 200 IOPS; on a bio-based one no effect (rq-qos), or refused
#    with EOPNOTSUPP (6.12, 7.2)
#  - cgroup statements need cgroup v2 (Debian's kernels; the guest-sized
#    debug kernels have none: noted, not checked)
#  - io.latency: accepted where the kernel has it (Debian's 6.1 does not:
#    CONFIG_BLK_CGROUP_IOLATENCY is off)
#  - blktrace: the tool sees the same events (skipped without the tool)
. /tests/lib.sh
drv_load poll_queues=1
d=$(disk_by_serial QOS-1)
dev=$(cat /sys/block/$d/dev)
if [ -d /sys/block/$d/mq ]; then
	mq=1 kind=$([ "$DRIVER" = vbblk ] && echo request || echo stock)
else
	mq=0 kind=bio
fi
log "disk $d ($dev): $kind ($([ $mq = 1 ] && echo blk-mq || echo bio-based))"
SECS=${QOS_SECS:-3}
# lo..hi bounds: unlimited must be fast enough to tell a 200-IOPS limit
UNLIMITED_MIN=1500 LIMITED_MAX=600

# iops [FIO ARGS]: 4k random reads at QD 16 for SECS s, whole IOPS
iops() {
	fio --name=qos --filename=/dev/$d --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=16 --time_based --runtime=$SECS \
		--size=256m "$@" > /tmp/fio.out 2>&1 || { cat /tmp/fio.out >&2; return 1; }
	awk 'match($0, /IOPS=[0-9.]+k?/) { v = substr($0, RSTART + 5, RLENGTH - 5)
		if (v ~ /k$/) v = v * 1000; print int(v); exit }' /tmp/fio.out
}

# --- trace events (what blktrace reads) ---------------------------------
T=/sys/kernel/tracing
grep -q " $T " /proc/mounts || mount -t tracefs nodev $T 2>/dev/null || skip "no tracefs"
echo 4096 > $T/buffer_size_kb
echo > $T/trace
for e in block_bio_queue block_bio_complete block_rq_issue block_rq_complete; do
	echo 1 > $T/events/block/$e/enable
done
echo 1 > $T/tracing_on
fio --name=tr --filename=/dev/$d --rw=randread --bs=4k --direct=1 --ioengine=psync \
	--size=16m --number_ios=64 > /tmp/fio.out 2>&1 || { cat /tmp/fio.out; fail "traced reads"; }
echo 0 > $T/tracing_on
echo 0 > $T/events/block/enable
# events of this disk: "block_xxx: MAJ,MIN ..."
ev() { grep -c " $1: ${dev%:*},${dev#*:} " $T/trace || true; }
bq=$(ev block_bio_queue) bc=$(ev block_bio_complete)
ri=$(ev block_rq_issue) rc=$(ev block_rq_complete)
log "trace events for 64 reads: bio_queue=$bq bio_complete=$bc rq_issue=$ri rq_complete=$rc"
[ "$bq" -ge 64 ] || fail "block_bio_queue: $bq events for 64 reads"
if [ $mq = 0 ]; then
	[ "$bc" -ge 64 ] || fail "bio-based: block_bio_complete: $bc events for 64 reads"
	[ "$ri" = 0 ] && [ "$rc" = 0 ] || fail "bio-based: request events ($ri issue, $rc complete)"
else
	[ "$ri" -ge 64 ] && [ "$rc" -ge 64 ] ||
		fail "blk-mq: request events $ri issue, $rc complete for 64 reads"
fi
log "ok: trace events as stated for $kind"
if command -v blktrace >/dev/null; then
	blktrace -d /dev/$d -w 5 -o /tmp/bt > /tmp/bt.out 2>&1 &
	sleep 1
	must dd if=/dev/$d of=/dev/null bs=4k count=16 iflag=direct 2>/dev/null
	wait
	log "blktrace: $(cat /tmp/bt.out | tail -n 1)"
else
	log "blktrace: not run, the tool is not in the guest (the trace events above are what it reads)"
fi

# --- I/O schedulers -------------------------------------------------------
S=/sys/block/$d/queue/scheduler
# bfq is a module in Debian's kernels: the host hands over the guest's
bfq=0
if m=$(hostcmd bfq_module "$KVER") && insmod /host/$m; then
	bfq=1
else
	log "bfq: no module for $KVER (mq-deadline, built in, stands for it)"
fi
[ ! -e $S ] || log "scheduler: $(cat $S)"
if [ $mq = 0 ] && [ ! -e $S ]; then
	# 6.12 and 7.2 show the file on blk-mq queues only
	[ -e /sys/block/$d/queue/nr_requests ] &&
		fail "bio-based: no queue/scheduler, but queue/nr_requests is there"
	log "ok: bio-based: no queue/scheduler file (this kernel shows it for blk-mq only)"
elif [ $mq = 0 ]; then
	expect_eq "bio-based: scheduler" "$(cat $S)" none
	for s in bfq mq-deadline; do
		echo $s > $S || fail "bio-based: echo $s > queue/scheduler failed (stated: succeeds)"
		expect_eq "bio-based: scheduler after echo $s" "$(cat $S)" none
	done
else
	echo mq-deadline > $S || fail "blk-mq: echo mq-deadline > queue/scheduler failed"
	grep -q '\[mq-deadline\]' $S || fail "blk-mq: mq-deadline not taken: $(cat $S)"
	if [ $bfq = 1 ]; then
		echo bfq > $S || fail "blk-mq: echo bfq > queue/scheduler failed"
		grep -q '\[bfq\]' $S || fail "blk-mq: bfq not taken: $(cat $S)"
		log "ok: bfq taken: $(cat $S)"
	fi
	echo none > $S
	log "ok: blk-mq: schedulers taken"
fi

# --- polling --------------------------------------------------------------
expect_eq "queue/io_poll with poll_queues=1" "$(cat /sys/block/$d/queue/io_poll)" 1
fio --name=hipri --filename=/dev/$d --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
	--hipri --iodepth=4 --size=16m --number_ios=500 > /tmp/fio.out 2>&1 ||
	{ cat /tmp/fio.out; fail "io_uring hipri reads failed"; }
log "ok: polled reads: $(grep -o 'IOPS=[^,]*' /tmp/fio.out | head -n 1)"

# --- cgroup v2: io.max, iocost, io.latency --------------------------------
C=/sys/fs/cgroup
if ! grep -qw cgroup2 /proc/filesystems; then
	# the guest-sized kernels (debug, debug-7.2) build no cgroups
	log "cgroup v2: not in this kernel: io.max, iocost and io.latency not checked"
	echo "kind=$kind no-cgroup2" > /host/modes_qos.txt
	drv_unload
	exit 0
fi
grep -q " $C cgroup2 " /proc/mounts || must mount -t cgroup2 none $C
grep -qw io $C/cgroup.controllers || fail "cgroup2 without the io controller"
echo +io > $C/cgroup.subtree_control
mkdir -p $C/qos
echo $$ > $C/qos/cgroup.procs

base=$(iops) || fail "unlimited reads failed"
log "unlimited: $base IOPS"
[ "$base" -ge $UNLIMITED_MIN ] ||
	fail "unlimited: $base IOPS, too slow to tell a 200-IOPS limit (< $UNLIMITED_MIN)"

# io.max: blk-throttle, before the driver: holds in every mode
echo "$dev riops=200" > $C/qos/io.max || fail "io.max not accepted"
lim=$(iops) || fail "reads under io.max failed"
echo "$dev riops=max" > $C/qos/io.max
log "io.max riops=200: $lim IOPS"
[ "$lim" -le 300 ] && [ "$lim" -ge 100 ] || fail "io.max riops=200 did not hold: $lim IOPS"
log "ok: io.max holds ($kind)"

# iocost: a 200-IOPS model (4k at 1 GB/s adds ~2 %), vrate fixed at 100 %
model="$dev ctrl=user model=linear rbps=1000000000 rseqiops=200 rrandiops=200 wbps=1000000000 wseqiops=200 wrandiops=200"
if err=$( { echo "$model" > $C/io.cost.model; } 2>&1 ); then
	echo "$dev enable=1 ctrl=user rpct=0 rlat=250000 wpct=0 wlat=250000 min=100.00 max=100.00" \
		> $C/io.cost.qos || fail "io.cost.qos not accepted"
	log "io.cost.qos: $(grep "^$dev " $C/io.cost.qos)"
	cost=$(iops) || fail "reads under iocost failed"
	echo "$dev enable=0" > $C/io.cost.qos
	log "iocost 200-IOPS model: $cost IOPS"
	if [ $mq = 0 ]; then
		[ "$cost" -ge $UNLIMITED_MIN ] ||
			fail "bio-based: iocost had an effect ($cost IOPS; stated: none)"
		log "ok: bio-based: iocost accepted, no effect"
	else
		[ "$cost" -le $LIMITED_MAX ] || fail "blk-mq: iocost did not hold: $cost IOPS"
		log "ok: blk-mq: iocost holds"
	fi
elif [ $mq = 0 ] && [ "${err#*not supported}" != "$err" ]; then
	# 6.12 and 7.2 refuse iocost on a bio-based disk (EOPNOTSUPP); 6.1 takes it
	log "ok: bio-based: iocost refused: $err"
	cost=refused
else
	fail "io.cost.model not accepted: $err"
fi

# io.latency: rq-qos as well; only accepted or absent is checked
if [ -e $C/qos/io.latency ]; then
	echo "$dev target=10000" > $C/qos/io.latency || fail "io.latency not accepted"
	log "ok: io.latency accepted: $(cat $C/qos/io.latency)"
	echo "$dev target=0" > $C/qos/io.latency
else
	log "io.latency: not in this kernel (CONFIG_BLK_CGROUP_IOLATENCY off)"
fi
echo $$ > $C/cgroup.procs
echo "kind=$kind unlimited=$base io_max_200=$lim iocost_200=$cost" > /host/modes_qos.txt
drv_unload
