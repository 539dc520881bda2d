# powercut: one boot of the power-cut cycle (driven by powercut.py beside it).
# The disk is an NBD export of tests/nbdkit/volcache.c: a volatile write
# cache that loses what was not flushed when QEMU is killed.
#
# /host/pc.state says what this boot does:
#   LAST_D LAST_F LAST_E LAST_X WRITER
#     the last acknowledged record per stream (-1: none), checked first (a
#     first boot, with all -1, makes the filesystem instead); then the one
#     WRITER runs until the cut. One writer per boot, so that no stream's
#     flush covers for another's missing one. /host/pc.final: check only.
# Streams, 512-byte records (a sector: written whole or not at all):
#   dsync    raw device at 32M, O_DIRECT|O_DSYNC (flush after each write)
#   fdatasyn raw device at 48M, buffered + fdatasync
#   fsync    ext4 (first 32M) file log, appending + fsync (journal commits)
#   extdsync ext4 file dio, preallocated and written: O_DIRECT|O_DSYNC
#            overwrites, which ext4 sends as FUA writes with no flush
. /tests/lib.sh
drv_load
d=$(disk_by_serial PC-1)
RAW_SLOTS=32768		# 16M
FILE_SLOTS=8192		# 4M
mkdir -p /mnt/pc
set -- $(cat /host/pc.state)
if [ "$1 $2 $3 $4" = "-1 -1 -1 -1" ] && [ ! -e /host/pc.final ]; then
	must mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/$d 32M
	must mount -t ext4 /dev/$d /mnt/pc
	must dd if=/dev/zero of=/mnt/pc/dio bs=1M count=4 conv=fsync 2>/dev/null
	must umount /mnt/pc
else
	# replay the journal, then the filesystem must be clean
	must mount -t ext4 /dev/$d /mnt/pc
	must umount /mnt/pc
	fsck.ext4 -n -f /dev/$d > /tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; fail "fsck -n after journal replay is not clean"; }
	log "fsck -n clean after journal replay"
	must mount -t ext4 /dev/$d /mnt/pc
	pcrec verify /dev/$d $((32 << 20)) $RAW_SLOTS dsync "$1" || fail "O_DSYNC records lost"
	pcrec verify /dev/$d $((48 << 20)) $RAW_SLOTS fdatasyn "$2" || fail "fdatasync records lost"
	if [ "$3" -ge 0 ]; then
		pcrec verify /mnt/pc/log 0 $FILE_SLOTS fsync "$3" || fail "ext4 fsync records lost"
	fi
	pcrec verify /mnt/pc/dio 0 $FILE_SLOTS extdsync "$4" || fail "ext4 O_DSYNC records lost"
	must umount /mnt/pc
	log "PC-VERIFIED $1 $2 $3 $4"
fi
if [ -e /host/pc.final ]; then
	log "final check done"
	exit 0
fi

must mount -t ext4 /dev/$d /mnt/pc
case $5 in
dsync)		pcrec dsync /dev/$d $((32 << 20)) $RAW_SLOTS dsync $(($1 + 1)) & ;;
fdatasyn)	pcrec fdatasync /dev/$d $((48 << 20)) $RAW_SLOTS fdatasyn $(($2 + 1)) & ;;
fsync)		pcrec fsync /mnt/pc/log 0 $FILE_SLOTS fsync $(($3 + 1)) & ;;
extdsync)	pcrec dsync /mnt/pc/dio 0 $FILE_SLOTS extdsync $(($4 + 1)) & ;;
*)		fail "unknown writer '$5'" ;;
esac
log "PC-WORKLOAD-STARTED $5"
hostcmd powercut > /dev/null
# the host kills QEMU while the writers run; they never stop by themselves
wait
fail "the writers stopped before the power cut"
