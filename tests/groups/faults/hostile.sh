# hostile: bad block ioctls, garbage in every writable sysfs attribute and
# module parameter of ours, and devices configured at QEMU's extremes.
. /tests/lib.sh
drv_load
h=$(disk_by_serial HOST-1)

# ---- ioctls with bad pointers, lengths and ranges ----
must vbtool hostile /dev/$h
# BLKRRPART while the disk is claimed by a mounted filesystem
must mkfs.ext4 -q -F /dev/$h
mkdir -p /mnt/h && must mount -t ext4 /dev/$h /mnt/h
mustfail blockdev --rereadpt /dev/$h
log "ok: BLKRRPART refused while mounted"
must umount /mnt/h

# ---- garbage into sysfs and parameters: refused, value unchanged ----
garbage() { # FILE VALUE...: each write fails and the file keeps its value
	_f=$1
	shift
	_before=$(cat "$_f")
	for _v in "$@"; do
		if printf '%s' "$_v" > "$_f" 2>/dev/null; then
			fail "$_f accepted '$_v'"
		fi
	done
	expect_eq "$_f after garbage" "$(cat "$_f")" "$_before"
}
if [ "$DRIVER" = vbblk ]; then
	P=/sys/module/vbblk/parameters
	garbage $P/batch_max_bios 0 257 -1 abc 99999999999999999999 " "
	garbage $P/batch maybe 2 -1 yes2 " "
	for s in /sys/block/$h/vbblk/*; do
		if echo 1 > "$s" 2>/dev/null; then fail "$s is writable"; fi
	done
	log "ok: stats files are read-only"
fi
garbage /sys/block/$h/cache_type "write sometimes" " " "$(head -c 3000 /dev/zero | tr '\000' x)"
if echo "bogus" > /sys/block/$h/serial 2>/dev/null; then fail "serial is writable"; fi

# ---- devices at QEMU's configuration extremes: probe, then verified I/O ----
for s in EXT-Q4 EXT-Q1024 EXT-SEGOFF EXT-NQ8 EXT-4K32K EXT-DG; do
	x=$(disk_by_serial $s)
	log "$s: $x: $(sysblk $x queue/logical_block_size)/$(sysblk $x queue/physical_block_size) bytes, max_segments $(sysblk $x queue/max_segments), discard_granularity $(sysblk $x queue/discard_granularity), $(vq_count $x) queues"
	run_fio --name=v --filename=/dev/$x --rw=randwrite --bsrange=4k-256k --size=8m --direct=1 \
		--ioengine=libaio --iodepth=32 --verify=crc32c --verify_fatal=1
	if [ "$(sysblk $x queue/discard_max_bytes)" != 0 ]; then
		must blkdiscard -o 0 -l 4M /dev/$x
	fi
done
expect_eq "num-queues=8 on 2 CPUs" "$(vq_count $(disk_by_serial EXT-NQ8))" 2
g=$(sysblk $(disk_by_serial EXT-DG) queue/discard_granularity)
expect_eq "discard_granularity 12288 rounded to a power of 2" "$g" 8192

drv_unload
log "hostile ok"
