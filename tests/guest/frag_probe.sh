# frag_probe: probe on a guest whose free memory is all single pages
# (tests/tools/fragment.c), with queue_depth=1024 on four 1024-entry
# virtqueues, so that any allocation the driver makes larger than a page
# cannot come from the page allocator: kvmalloc() then falls back to
# vmalloc. Nothing the device reads or writes may live there (the device
# is given physical addresses: virt_to_page() of a vmalloc address is
# another page). Verified I/O on every queue must then succeed, and the
# console stays clean (vbblk warns if a command header is vmalloc'ed).
. /tests/lib.sh
order_free() { # free blocks of order >= $1, all zones
	awk -v o=$1 '{ for (i = 5 + o; i <= NF; i++) n += $i } END { print n + 0 }' /proc/buddyinfo
}
echo 0 > /proc/sys/vm/compact_unevictable_allowed || fail "no vm.compact_unevictable_allowed"
echo 3 > /proc/sys/vm/drop_caches
fragment 4 > /tmp/frag.out 2>&1 &
fpid=$!
i=0
while ! grep -q fragmented /tmp/frag.out; do
	kill -0 $fpid 2>/dev/null || { cat /tmp/frag.out; fail "fragment failed"; }
	sleep 0.5; i=$((i + 1)); [ $i -lt 120 ] || fail "fragment did not finish"
done
log "$(cat /tmp/frag.out); free blocks of order >= 3: $(order_free 3), >= 6: $(order_free 6)"
cat /proc/buddyinfo
if [ "$DRIVER" = vbblk ]; then drv_load queue_depth=1024; else drv_load; fi
d=$(disk_by_serial FRAG-1)
log "$d probed; vmalloc areas of the driver: $(grep -c "\[$DRIVER\]" /proc/vmallocinfo)"
grep "\[$DRIVER\]" /proc/vmallocinfo | head -n 8
kill $fpid
wait $fpid 2>/dev/null || true
expect_eq "$d virtqueues" "$(vq_count $d)" 2
run_fio --name=frag --filename=/dev/$d --direct=1 --ioengine=libaio --rw=randrw \
	--bsrange=4k-256k --iodepth=64 --numjobs=2 --size=32m --offset_increment=32m \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting
log "frag probe ok"
