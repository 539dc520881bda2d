# cache_cut: one boot driven by powercut.py beside it run_cache_switch().
# The disk is tests/nbdkit/volcache.c with keep=0: a volatile write cache
# that loses every unflushed sector when QEMU is killed. Writes completed
# in write-back mode, never flushed, then cache_type set to write through:
# after that the block layer sends no flush for them, so the switch itself
# must make them durable. The host cuts the power and compares.
. /tests/lib.sh
drv_load
d=$(disk_by_serial CC-1)
expect_eq "initial cache_type" "$(sysblk $d cache_type)" "write back"
must dd if=/dev/urandom of=/tmp/pat bs=1M count=1 2>/dev/null
# O_DIRECT, no fsync: completed, still in the device's cache
must dd if=/tmp/pat of=/dev/$d bs=64k oflag=direct conv=notrunc 2>/dev/null
echo "write through" > /sys/block/$d/cache_type || fail "cannot write cache_type"
expect_eq "cache_type" "$(sysblk $d cache_type)" "write through"
log "PATTERN $(sha256sum /tmp/pat | cut -d' ' -f1)"
hostcmd cut > /dev/null || fail "host did not take the cut"
sleep 60
fail "QEMU was not killed"
