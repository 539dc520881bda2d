# coexist_reload (vbblk only, opt-in): reloading the stock virtio_blk while
# vbblk owns disks must not make virtio_blk reuse a vdX name vbblk holds.
# Opt-in (not in the default run): with the "vdX like the stock driver"
# naming contract vbblk cannot stop a freshly loaded virtio_blk from starting
# at vda again, so this currently fails with a sysfs duplicate-name trace.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || { log "vbblk-specific, nothing to do for $DRIVER"; exit 0; }
export VBBLK_KO
drvof() { basename "$(readlink -f /sys/block/$1/device/driver)"; }
modprobe virtio_blk || fail "modprobe virtio_blk"
disk_by_serial CO-1 >/dev/null
d2=$(disk_by_serial CO-2)
d3=$(disk_by_serial CO-3)
must vbtool fill /dev/$d2 0 4M 2
n1=$(vbblk-bind.sh serial=CO-1 vbblk) || fail "moving CO-1 to vbblk failed"
n2=$(vbblk-bind.sh serial=CO-2 vbblk) || fail "moving CO-2 to vbblk failed"
log "vbblk owns CO-1=$n1 CO-2=$n2; reloading virtio_blk (owns CO-3=$d3)"
rmmod virtio_blk || fail "rmmod virtio_blk failed"
modprobe virtio_blk || fail "modprobe virtio_blk failed"
d3=$(disk_by_serial CO-3) || fail "CO-3 did not come back after reloading virtio_blk"
log "after reload: CO-3=$d3 (virtio_blk), CO-1=$n1 CO-2=$n2 (vbblk)"
[ "$d3" != "$n1" ] && [ "$d3" != "$n2" ] || fail "name collision: virtio_blk named CO-3 $d3, which vbblk uses"
expect_eq "$n1 serial" "$(sysblk $n1 serial)" CO-1
expect_eq "$n2 serial" "$(sysblk $n2 serial)" CO-2
expect_eq "$d3 driver" "$(drvof $d3)" virtio_blk
must vbtool fill /dev/$d3 0 1M 3
must vbtool check /dev/$d3 0 1M 3
must vbtool check /dev/$n2 0 4M 2
log "coexist_reload ok"
