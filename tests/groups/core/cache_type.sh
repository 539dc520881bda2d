# cache_type: toggle the volatile write cache through sysfs; the host confirms
# via QMP query-block; flushes reach the device only in write-back mode.
. /tests/lib.sh
drv_load
d=$(disk_by_serial WCE-1)
flushes() { hostcmd blockstats wce | sed -n 's/^flush_operations=//p'; }
hostwb() { hostcmd cache wce | sed -n 's/^writeback=//p'; }

expect_eq "initial cache_type" "$(sysblk $d cache_type)" "write back"
expect_eq "host writeback" "$(hostwb)" true
f0=$(flushes)
must vbtool fill /dev/$d 0 1M 1
must vbtool flush /dev/$d
f1=$(flushes)
[ "$f1" -gt "$f0" ] || fail "no flush reached the device in write-back mode ($f0 -> $f1)"

echo "write through" > /sys/block/$d/cache_type || fail "cannot write cache_type"
expect_eq "cache_type" "$(sysblk $d cache_type)" "write through"
expect_eq "host writeback" "$(hostwb)" false
f1=$(flushes)
must vbtool fill /dev/$d 1M 1M 2
must vbtool flush /dev/$d
must vbtool check /dev/$d 0 1M 1
must vbtool check /dev/$d 1M 1M 2
expect_eq "flushes in write-through mode" "$(flushes)" "$f1"

echo "write back" > /sys/block/$d/cache_type || fail "cannot write cache_type"
expect_eq "cache_type" "$(sysblk $d cache_type)" "write back"
expect_eq "host writeback" "$(hostwb)" true
mustfail sh -c "echo bogus > /sys/block/$d/cache_type"
expect_eq "cache_type after bogus write" "$(sysblk $d cache_type)" "write back"
# A switch and a limit store, each with its queue lock order: the block
# layer takes the limits, then freezes (max_sectors_kb from 6.13); a switch
# that freezes first is an inversion lockdep reports (debug-7.2).
msk=$(sysblk $d queue/max_sectors_kb)
echo 256 > /sys/block/$d/queue/max_sectors_kb || fail "cannot write max_sectors_kb"
echo "write through" > /sys/block/$d/cache_type || fail "cannot write cache_type"
echo "$msk" > /sys/block/$d/queue/max_sectors_kb || fail "cannot write max_sectors_kb"
echo "write back" > /sys/block/$d/cache_type || fail "cannot write cache_type"
must vbtool check /dev/$d 1M 1M 2
# reload in write-through mode; data must still be there (setting is just logged)
echo "write through" > /sys/block/$d/cache_type
drv_unload
drv_load
d=$(disk_by_serial WCE-1)
log "cache_type after reload: $(sysblk $d cache_type) (host writeback=$(hostwb))"
must vbtool check /dev/$d 1M 1M 2
log "cache_type ok"
