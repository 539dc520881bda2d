# biotest: crafted bios from the test module tests/kmod/vbbiotest.ko (its
# cases are described there), and beside each what the device saw: QMP
# query-blockstats deltas here; on the host, the order of flushes, reads and
# writes in QEMU's virtio-blk trace (tests/lib/flushcheck.py check_biotest),
# each case's bios sitting between two marker reads listed in
# /host/biotest.cases.
#   READ with PREFLUSH and/or FUA: no write reaches the device, a flush and
#     the read do, and the read returns the data written before (a driver
#     that sends it as a write overwrites the disk with the read buffer).
#   empty PREFLUSH: a flush only. WRITE with PREFLUSH|FUA: a write, at
#     least two flushes. A max_sectors bio: the device wrote and read
#     exactly its bytes. A zero-length write completes.
#   REQ_NOWAIT on a full ring (queue_depth=4, device throttled to 10 IOPS):
#     the device served exactly the bios that did not get EAGAIN; in bio
#     mode nowait_eagain counts the others.
#   A read submitted from softirq completes with its data; so do 16 reads
#     without REQ_NOWAIT submitted from one softirq onto that full ring
#     (bio mode: they may neither sleep there nor be lost).
#   16 polled reads under one plug with poll_queues=1, queue_depth=4 (bio
#     mode): the submitter that runs out of commands notifies its plug's
#     before it polls for one, or it polls forever.
# Every case runs; the failures are listed together at the end.
. /tests/lib.sh
drv_load queue_depth=4 poll_queues=1
d=$(disk_by_serial BIOTEST-1)
ko=/lib/modules/$KVER/extra/vbbiotest.ko
[ -f $ko ] || fail "vbbiotest.ko not in initramfs"
insmod $ko dev=/dev/$d || fail "insmod vbbiotest.ko dev=/dev/$d"
ctl=/sys/kernel/debug/vbbiotest
[ -w $ctl/run ] || fail "no $ctl/run (debugfs not mounted?)"
bio_mode=0 path=blk-mq
if [ "$DRIVER" = vbblk ] && [ ! -d /sys/block/$d/mq ]; then bio_mode=1 path=bio; fi
log "disk $d ($path), max_sectors_kb $(sysblk $d queue/max_sectors_kb)," \
	"write cache: $(sysblk $d queue/write_cache)"

cases=/host/biotest.cases
: > $cases
bads=
mark=0
bad() { log "BAD $CASE: $*"; bads="$bads; $CASE: $*"; }
snap() { hostcmd blockstats bt > /tmp/bs.$1 || fail "QMP blockstats"; }
dlt() { echo $(($(sed -n "s/^$1=//p" /tmp/bs.1) - $(sed -n "s/^$1=//p" /tmp/bs.0))); }
kv() { echo "$RES" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
none() { [ "$2" -eq 0 ] || bad "device $1: $2, expected none"; }
some() { [ "$2" -ge "${3:-1}" ] || bad "device $1: $2, expected at least ${3:-1}"; }
markread() {
	echo "mark $1" > $ctl/run 2>/dev/null || fail "marker read $1: $(cat $ctl/result)"
}

# bio CASE [CHECK]: run one case after a marker read; sets RES (the
# module's line), VERDICT and the device's deltas DRD DWR DFL (operations),
# DRB DWB (bytes). CHECK, a function, judges those unless the case skipped;
# what the device saw is reported before what the module says.
bio() {
	CASE=$1
	mark=$((mark + 1))
	markread $mark
	snap 0
	echo "$CASE" > $ctl/run 2>/dev/null || true
	RES=$(cat $ctl/result)
	snap 1
	VERDICT=$(echo "$RES" | cut -d' ' -f2)
	echo "$CASE $VERDICT $mark" >> $cases
	DRD=$(dlt rd_operations) DWR=$(dlt wr_operations) DFL=$(dlt flush_operations)
	DRB=$(dlt rd_bytes) DWB=$(dlt wr_bytes)
	log "$RES"
	log "  device: $DRD reads ($DRB bytes), $DWR writes ($DWB bytes), $DFL flushes"
	[ -z "$2" ] || [ "$VERDICT" = SKIP ] || $2
	case $VERDICT in
	PASS|SKIP) ;;
	*) bad "module: ${RES#* }" ;;
	esac
}

read_flushed() { none writes "$DWR"; some flushes "$DFL"; some reads "$DRD"; }
flush_only() { none writes "$DWR"; none reads "$DRD"; some flushes "$DFL"; }
write_flushed() { some writes "$DWR"; some flushes "$DFL" 2; }
max_bytes() {
	[ "$DWB" = "$(kv bytes)" ] || bad "device wrote $DWB bytes, the bio had $(kv bytes)"
	[ "$DRB" = "$(kv bytes)" ] || bad "device read $DRB bytes, the bio had $(kv bytes)"
}
st_eagain() { if [ $bio_mode = 1 ]; then cat /sys/block/$d/vbblk/nowait_eagain; else echo 0; fi; }
# EAGAIN'd bios never reach the device; in bio mode nowait_eagain counts them
nowait_served() {
	[ "$DRD" = "$(kv ok)" ] || bad "device reads: $DRD, $(kv ok) bios were served"
	[ $bio_mode = 0 ] || [ $(($(st_eagain) - e0)) = "$(kv eagain)" ] ||
		bad "nowait_eagain rose by $(($(st_eagain) - e0)), $(kv eagain) bios got EAGAIN"
}
some_read() { some reads "$DRD"; }

bio fill
for c in read_preflush read_fua read_preflush_fua; do
	bio $c read_flushed
done
bio empty_preflush flush_only
bio write_preflush_fua write_flushed
bio max_bio max_bytes
bio zero_write
throttle bt 10
e0=$(st_eagain)
bio nowait_full nowait_served
bio softirq_full some_read
throttle bt 0
bio softirq_read some_read
bio polled_plug some_read

markread $((mark + 1))
rmmod vbbiotest || fail "rmmod vbbiotest"
drv_unload
[ -z "$bads" ] || fail "${bads#; }"
log "all cases passed; the host checks the order in the device trace"
