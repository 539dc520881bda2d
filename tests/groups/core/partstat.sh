# partstat: I/O to a partition is accounted to that partition
# (/sys/block/vdX/vdXN/stat, what iostat -p reads) and to the whole disk,
# and to no other partition: 2000 reads of 4 KiB at QD1 on partition 1 and
# 1000 writes on partition 2 move each partition's counters by exactly that
# (requests and sectors), as with the stock driver.
# Device FLUSHes (fsyncs and O_DSYNC writes on partition 1 of the write-back
# disk) move the whole disk's flush fields (16: flushes, 17: their ms) by
# exactly the FLUSHes the device got (QMP flush_operations; under vbblk also
# its flushes counter). Bio mode accounts each to the partition of the bio
# that sent it (and so to the whole disk); blk-mq accounts a flush request
# to the whole disk only (block/blk-flush.c).
. /tests/lib.sh
drv_load
d=$(disk_by_serial PART-1)

# an MBR with two adjacent Linux partitions of 16 MiB: 2048+32768, 34816+32768
le32() {
	printf "\\$(printf %03o $(($1 & 255)))\\$(printf %03o $((($1 >> 8) & 255)))"
	printf "\\$(printf %03o $((($1 >> 16) & 255)))\\$(printf %03o $((($1 >> 24) & 255)))"
}
entry() { printf '\000\000\000\000\203\000\000\000'; le32 $1; le32 $2; }
{
	dd if=/dev/zero bs=446 count=1 2>/dev/null
	entry 2048 32768
	entry 34816 32768
	dd if=/dev/zero bs=32 count=1 2>/dev/null
	printf '\125\252'
} > /tmp/mbr
expect_eq "MBR size" "$(wc -c < /tmp/mbr)" 512
must dd if=/tmp/mbr of=/dev/$d bs=512 count=1 conv=notrunc,fsync 2>/dev/null
must blockdev --rereadpt /dev/$d
i=0
while [ ! -b /dev/${d}2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -b /dev/${d}1 ] && [ -b /dev/${d}2 ] || fail "partitions did not appear: $(ls /sys/block/$d)"

# stat FIELD of a block device's stat file: 1 reads, 3 read sectors,
# 5 writes, 7 write sectors (Documentation/block/stat.rst)
st() {
	if [ "$1" = "$d" ]; then f=/sys/block/$d/stat; else f=/sys/block/$d/$1/stat; fi
	awk -v n=$2 '{ print $n }' $f
}
snap() { for p in $d ${d}1 ${d}2; do echo "$p $(st $p 1) $(st $p 3) $(st $p 5) $(st $p 7)"; done; }
delta() { # delta DEV FIELD BEFORE-SNAPSHOT-FILE
	_b=$(awk -v p=$1 -v n=$2 '$1 == p { print $(n == 1 ? 2 : n == 3 ? 3 : n == 5 ? 4 : 5) }' $3)
	echo $(($(st $1 $2) - _b))
}

snap > /tmp/s0
must dd if=/dev/${d}1 of=/dev/null bs=4k count=2000 iflag=direct 2>/dev/null
expect_eq "${d}1 reads" "$(delta ${d}1 1 /tmp/s0)" 2000
expect_eq "${d}1 read sectors" "$(delta ${d}1 3 /tmp/s0)" 16000
expect_eq "${d}2 reads" "$(delta ${d}2 1 /tmp/s0)" 0
expect_eq "$d reads (whole disk)" "$(delta $d 1 /tmp/s0)" 2000
expect_eq "$d read sectors (whole disk)" "$(delta $d 3 /tmp/s0)" 16000

snap > /tmp/s1
must dd if=/dev/zero of=/dev/${d}2 bs=4k count=1000 oflag=direct conv=notrunc 2>/dev/null
expect_eq "${d}2 writes" "$(delta ${d}2 5 /tmp/s1)" 1000
expect_eq "${d}2 write sectors" "$(delta ${d}2 7 /tmp/s1)" 8000
expect_eq "${d}1 writes" "$(delta ${d}1 5 /tmp/s1)" 0
expect_eq "$d writes (whole disk)" "$(delta $d 5 /tmp/s1)" 1000
log "partition statistics ok"

[ "$(awk '{ print NF }' /sys/block/$d/stat)" -ge 17 ] ||
	skip "no flush fields in /sys/block/$d/stat"
devflush() { hostcmd blockstats part | sed -n 's/^flush_operations=//p'; }
drvflush() { if [ -r /sys/block/$d/vbblk/flushes ]; then cat /sys/block/$d/vbblk/flushes; else echo 0; fi; }
fst() { echo "$(st $1 16) $(st $1 17)"; }
set -- $(fst $d); w0=$1 wt0=$2
set -- $(fst ${d}1); p0=$1
set -- $(fst ${d}2); q0=$1
dev0=$(devflush); drv0=$(drvflush)
# --invalidate=0: no BLKFLSBUF of the disk before the job
run_fio --name=fsync --filename=/dev/${d}1 --rw=write --bs=4k --size=1m --ioengine=psync \
	--direct=1 --fsync=1 --invalidate=0
run_fio --name=dsync --filename=/dev/${d}1 --rw=write --bs=4k --size=256k --offset=1m \
	--ioengine=psync --direct=1 --sync=dsync --invalidate=0
dev=$(($(devflush) - dev0)); drv=$(($(drvflush) - drv0))
set -- $(fst $d); w=$(($1 - w0)) wt=$(($2 - wt0))
set -- $(fst ${d}1); p=$(($1 - p0))
set -- $(fst ${d}2); q=$(($1 - q0))
log "device FLUSHes $dev (driver: $drv); flush stat moved: $d $w ($wt ms), ${d}1 $p, ${d}2 $q"
[ "$dev" -ge 256 ] || fail "only $dev FLUSHes reached the device for 256 fsyncs"
[ "$DRIVER" != vbblk ] || expect_eq "driver flushes vs device" "$drv" "$dev"
expect_eq "$d flushes (whole disk)" "$w" "$dev"
# the time of hundreds of FLUSHes, whatever each took, adds up to a millisecond
[ "$wt" -gt 0 ] || fail "$d flush time did not move over $w flushes"
expect_eq "${d}2 flushes" "$q" 0
if [ "$(hwq_count $d)" = none ]; then
	expect_eq "${d}1 flushes" "$p" "$dev"
elif [ "$p" != 0 ] && [ "$p" != "$dev" ]; then
	fail "${d}1 flushes: got $p, expected 0 (blk-mq counts on the whole disk) or $dev"
fi
log "flush statistics ok"
