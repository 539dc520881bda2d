# coexist (vbblk only): virtio_blk drives disk 1 while vbblk drives disk 2;
# disk 2 is moved with vbblk-bind.sh and back, data intact.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || { log "vbblk-specific, nothing to do for $DRIVER"; exit 0; }
export VBBLK_KO
drvof() { basename "$(readlink -f /sys/block/$1/device/driver)"; }

# bad input to the helper is rejected
mustfail vbblk-bind.sh
mustfail vbblk-bind.sh vdz vbblk
mustfail vbblk-bind.sh serial=NO-SUCH-DISK vbblk
mustfail vbblk-bind.sh virtio99 vbblk
mustfail vbblk-bind.sh vda nvme

modprobe virtio_blk || fail "modprobe virtio_blk"
d1=$(disk_by_serial CO-1)
d2=$(disk_by_serial CO-2)
expect_eq "$d1 driver" "$(drvof $d1)" virtio_blk
expect_eq "$d2 driver" "$(drvof $d2)" virtio_blk
mustfail vbblk-bind.sh serial=CO-2 foo
vdev2=$(basename "$(readlink -f /sys/block/$d2/device)")

n2=$(vbblk-bind.sh serial=CO-2 vbblk) || fail "vbblk-bind.sh serial=CO-2 vbblk failed"
log "CO-2 moved to vbblk: $d2 -> $n2"
lsmod | grep -q '^vbblk ' || fail "vbblk not loaded by vbblk-bind.sh"
[ "$n2" != "$d1" ] || fail "name collision: both disks are $d1"
[ -e /sys/block/$d1 ] || fail "/sys/block/$d1 vanished"
[ -e /sys/block/$n2 ] || fail "/sys/block/$n2 missing"
expect_eq "$n2 serial" "$(sysblk $n2 serial)" CO-2
expect_eq "$n2 driver" "$(drvof $n2)" vbblk
expect_eq "$d1 driver" "$(drvof $d1)" virtio_blk
expect_eq "vbblk-bind.sh is idempotent" "$(vbblk-bind.sh $n2 vbblk)" "$n2"

cat > /tmp/co.fio <<EOT
[global]
ioengine=libaio
direct=1
rw=randwrite
bsrange=4k-128k
iodepth=16
size=32m
verify=crc32c
verify_fatal=1
randrepeat=1
[stock-$d1]
filename=/dev/$d1
[vbblk-$n2]
filename=/dev/$n2
EOT
run_fio /tmp/co.fio
s1=$(devsum $d1 32)
s2=$(devsum $n2 32)

# move it back (by virtio device name this time)
b2=$(vbblk-bind.sh $vdev2 virtio_blk) || fail "vbblk-bind.sh $vdev2 virtio_blk failed"
log "CO-2 moved back to virtio_blk: $n2 -> $b2"
expect_eq "$b2 driver" "$(drvof $b2)" virtio_blk
expect_eq "$b2 serial" "$(sysblk $b2 serial)" CO-2
[ "$b2" != "$d1" ] || fail "name collision after moving back"
expect_eq "CO-2 data after moving back" "$(devsum $b2 32)" "$s2"
expect_eq "CO-1 data" "$(devsum $d1 32)" "$s1"
sed -i 's/^randrepeat=1/randrepeat=1\nverify_only=1/' /tmp/co.fio
sed -i "s#^filename=/dev/$n2#filename=/dev/$b2#" /tmp/co.fio
run_fio /tmp/co.fio

# moving a mounted disk is refused without -f
modprobe ext4
must mkfs.ext4 -q -F /dev/$d1
mkdir -p /mnt/t
must mount -t ext4 /dev/$d1 /mnt/t
mustfail vbblk-bind.sh $d1 vbblk
expect_eq "$d1 driver (mounted, refused)" "$(drvof $d1)" virtio_blk
must umount /mnt/t
n1=$(vbblk-bind.sh $d1 vbblk) || fail "moving unmounted CO-1 to vbblk failed"
expect_eq "$n1 driver" "$(drvof $n1)" vbblk
must fsck.ext4 -n -f /dev/$n1

log "coexist ok"
