# flush_share: concurrent flushes share device FLUSHes in bio mode as they
# do in request mode (blk-mq's flush machinery). 64 fio jobs each write
# 128 blocks of 4 KiB with an fsync after every write (raw disk, O_DIRECT)
# on a device where each write and flush takes 1 ms, as on real storage
# (QEMU null-co with latency-ns; a flush on a tmpfs image takes nothing, so
# few ever overlap); the same load runs on vbblk mode=request and mode=bio
# in one boot, and
# QMP flush_operations counts what reached the device. Bio mode may send
# no more device FLUSHes than request mode (plus 10 %, plus 32). The
# ordering half of the contract (each fsync ends after a FLUSH that started
# after its writes completed) is the flush and powercut tests'. In both
# modes the disk's stat counts each device FLUSH once, however many fsyncs
# shared it.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || { log "vbblk-specific (compares its two modes)"; exit 0; }
devflush() { hostcmd blockstats fs | sed -n 's/^flush_operations=//p'; }

# load MODE: run the fsync load under vbblk MODE; "FLUSHES IOPS" to /tmp/res.MODE
load() {
	insmod "$VBBLK_KO" mode=$1 || fail "insmod vbblk mode=$1"
	d=$(disk_by_serial FS-1)
	f0=$(devflush)
	s0=$(awk '{ print $16 }' /sys/block/$d/stat)
	fio --name=fs --filename=/dev/$d --ioengine=psync --direct=1 --rw=write --bs=4k \
		--size=512k --offset_increment=1m --numjobs=64 --fsync=1 --group_reporting \
		> /tmp/fio.$1 2>&1 || { cat /tmp/fio.$1; fail "fio failed in mode=$1"; }
	f1=$(devflush)
	iops=$(sed -n 's/.*write: IOPS=\([^,]*\),.*/\1/p' /tmp/fio.$1 | head -n 1)
	n=$([ -r /sys/block/$d/vbblk/flushes ] && cat /sys/block/$d/vbblk/flushes)
	log "mode=$1: $((f1 - f0)) device flushes (driver sent $n) for 8192 fsyncs, write IOPS $iops"
	expect_eq "mode=$1: flushes in $d's stat" \
		"$(($(awk '{ print $16 }' /sys/block/$d/stat) - s0))" "$((f1 - f0))"
	echo "$((f1 - f0)) $iops" > /tmp/res.$1
	rmmod vbblk || fail "rmmod vbblk"
}

load request
load bio
set -- $(cat /tmp/res.request)
rq=$1
set -- $(cat /tmp/res.bio)
bio=$1
bound=$((rq + rq / 10 + 32))
[ "$bio" -le "$bound" ] ||
	fail "bio mode sent $bio device flushes for the load, request mode $rq (bound $bound): flushes are not shared"
[ "$bio" -lt 8192 ] || fail "bio mode sent one device flush per fsync ($bio)"
log "flush sharing ok"
