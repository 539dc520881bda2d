# install / dkms (host tests): vbblk as a user installs it, loaded by name.
#   vbinst=user: the image holds what `make install` and `make install-conf`
#     put there, and systemd-udevd. Recipe A of /etc/modprobe.d/vbblk.conf
#     (root disk on virtio_blk, listed serials moved to vbblk by the udev rule),
#     then recipe B (virtio_blk blacklisted, udev loads vbblk for every disk).
#   vbinst=dkms: the image holds the module DKMS built and installed.
#   vbinst=deb: the module DKMS built from the Debian package and the files
#     the package installed (no udevd: the udev helper is run by hand).
# vbversion=V: the version modinfo must report.
. /tests/lib.sh
KVER=$(uname -r)
export PATH=/usr/local/sbin:$PATH   # where make install-conf puts the helpers
inst= want=
for w in $(cat /proc/cmdline); do
	case "$w" in
	vbinst=*) inst=${w#vbinst=} ;;
	vbversion=*) want=${w#vbversion=} ;;
	esac
done
[ -n "$want" ] || fail "no vbversion= on the kernel command line"
modinfo() { /usr/sbin/modinfo "$@"; }
drvof() { basename "$(readlink -f "/sys/block/$1/device/driver")"; }

# verify DEV: a short crc32c-verified write/read pass
verify() {
	must fio --name=v --filename="$1" --direct=1 --ioengine=libaio --iodepth=16 \
		--rw=randwrite --bsrange=4k-64k --size=16m --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --output=/tmp/fio.out
}

# modinfo finds the module by name where the installer put it
check_modinfo() { # DIR
	f=$(modinfo -F filename vbblk) || fail "modinfo vbblk: not found by name"
	expect_eq "module file" "$f" "/lib/modules/$KVER/$1/vbblk.ko"
	expect_eq "modinfo version" "$(modinfo -F version vbblk)" "$want"
	[ ! -e "/lib/modules/$KVER/extra/vbblk.ko" ] || fail "a test copy in extra/ would shadow the install"
}

if [ "$inst" = dkms ]; then
	check_modinfo updates/dkms
	must modprobe vbblk $VBPARAMS
	d=$(disk_by_serial INST-1) || fail "no disk"
	expect_eq "$d driver" "$(drvof "$d")" vbblk
	expect_eq "module version in sysfs" "$(cat /sys/module/vbblk/version)" "$want"
	verify "/dev/$d"
	must modprobe -r vbblk
	log "PASS: DKMS-built module loads by name, drives a disk, unloads"
	exit 0
fi
if [ "$inst" = deb ]; then
	check_modinfo updates/dkms
	# recipe A as the package sets it up: the softdep loads vbblk with the
	# options line, and the helper the udev rule runs moves the listed disk
	echo INST-1 >> /etc/vbblk/disks
	sed -i 's/^options vbblk .*/options vbblk mode=request/' /etc/modprobe.d/vbblk.conf
	must modprobe virtio_blk
	lsmod | grep -q '^vbblk ' || fail "the package's softdep did not load vbblk after virtio_blk"
	expect_eq "mode from modprobe.d" "$(cat /sys/module/vbblk/parameters/mode)" request
	d=$(disk_by_serial INST-1) || fail "no disk"
	expect_eq "$d driver before the helper" "$(drvof "$d")" virtio_blk
	must /lib/udev/vbblk-udev "$d"
	d=$(disk_by_serial INST-1) || fail "no disk after the helper"
	expect_eq "$d driver" "$(drvof "$d")" vbblk
	dmesg | grep -q "vbblk-udev: .* (serial INST-1) moved to vbblk as $d" ||
		fail "no vbblk-udev line for INST-1 in dmesg"
	expect_eq "module version in sysfs" "$(cat /sys/module/vbblk/version)" "$want"
	verify "/dev/$d"
	must /usr/sbin/vbblk-bind serial=INST-1 virtio_blk >/dev/null
	must modprobe -r vbblk
	log "PASS: the package's module, softdep, options and helpers drive a disk"
	exit 0
fi
[ "$inst" = user ] || fail "unknown vbinst=$inst"

check_modinfo updates
for f in /etc/modprobe.d/vbblk.conf /etc/udev/rules.d/60-vbblk.rules /etc/vbblk/disks \
	 /usr/local/sbin/vbblk-bind /usr/local/lib/udev/vbblk-udev; do
	[ -e "$f" ] || fail "make install-conf did not install $f"
done
if lsmod | grep -q '^virtio_blk '; then fail "virtio_blk loaded before udev ran"; fi

udev_start() {
	# udev's rules name the disk group: give it its Debian number
	grep -q '^disk:' /etc/group || echo 'disk:x:6:' >> /etc/group
	/lib/systemd/systemd-udevd --daemon --resolve-names=early || fail "systemd-udevd did not start"
	must udevadm trigger --type=subsystems --action=add
	must udevadm trigger --type=devices --action=add
	must udevadm settle --timeout=120
}
udev_stop() {
	must udevadm control --exit
}

# ---- recipe A: the root disk stays on virtio_blk ---------------------------
# the list as an administrator writes it: a comment, blanks, a trailing comment
cat >> /etc/vbblk/disks <<'EOT'
# scratch disks for fio
   INST-1	# bench disk
INST-1X
EOT
sed -i 's/^options vbblk .*/options vbblk mode=request/' /etc/modprobe.d/vbblk.conf
udev_start
lsmod | grep -q '^virtio_blk ' || fail "udev did not load virtio_blk (modalias)"
lsmod | grep -q '^vbblk ' || fail "softdep did not load vbblk after virtio_blk"
expect_eq "mode from modprobe.d" "$(cat /sys/module/vbblk/parameters/mode)" request
root=$(disk_by_serial ROOT-1) || fail "no root disk"
d1=$(disk_by_serial INST-1) || fail "no INST-1 disk"
d2=$(disk_by_serial INST-2) || fail "no INST-2 disk"
expect_eq "root disk driver" "$(drvof "$root")" virtio_blk
expect_eq "listed disk driver" "$(drvof "$d1")" vbblk
expect_eq "unlisted disk driver" "$(drvof "$d2")" virtio_blk
[ -d "/sys/block/$d1/mq" ] || fail "$d1 is not blk-mq although mode=request"
dmesg | grep -q "vbblk-udev: .* (serial INST-1) moved to vbblk as $d1" ||
	fail "no vbblk-udev line for INST-1 in dmesg"
link=$(readlink -f /dev/disk/by-id/virtio-INST-1) || fail "no /dev/disk/by-id/virtio-INST-1"
expect_eq "by-id link" "$link" "/dev/$d1"
verify /dev/disk/by-id/virtio-INST-1
# the passthrough node: the disk's group and mode (the installed udev rule)
[ -c /dev/vbblk/$d1 ] || fail "no /dev/vbblk/$d1"
expect_eq "disk group" "$(stat -c %g /dev/$d1)" 6
expect_eq "passthrough node group" "$(stat -c %g /dev/vbblk/$d1)" 6
expect_eq "passthrough node mode" "$(stat -c %a /dev/vbblk/$d1)" 660
udev_stop

# the installed comparison helper, on the disk udev moved (back first: a mode
# switch reloads vbblk, which must hold no other disk)
must vbblk-bind serial=INST-1 virtio_blk >/dev/null
jobs=/usr/local/share/vbblk/jobs
mustfail vbblk-compare -r 1 -t 1 serial=INST-1 $jobs/randwrite-qd1.fio
must vbblk-compare -r 1 -t 2 serial=INST-1 $jobs/randread-qd1.fio > /tmp/cmp.out
cat /tmp/cmp.out
for c in stock request bio; do
	awk -v c=$c '$1 == "randread-qd1" && $2 == c && $3 > 0 { ok = 1 } END { exit !ok }' \
		/tmp/cmp.out || fail "vbblk-compare: no IOPS for $c"
done
awk '$2 == "stock" && $6 == "1.00" { ok = 1 } END { exit !ok }' /tmp/cmp.out ||
	fail "vbblk-compare: stock is not its own baseline"
for c in request bio; do
	awk -v c=$c '$2 == c && $7 > 0.5 && $7 < 1.5 { ok = 1 } END { exit !ok }' /tmp/cmp.out ||
		fail "vbblk-compare: no commands-per-I/O figure near 1 for $c (QD1 reads)"
done
expect_eq "disk back on its driver" "$(drvof "$(disk_by_serial INST-1)")" virtio_blk
must modprobe -r vbblk
must modprobe -r virtio_blk
log "recipe A: INST-1 on vbblk (request mode), ROOT-1 and INST-2 stay on virtio_blk"

# ---- recipe B: vbblk drives every virtio disk --------------------------------
sed -i -e 's/^softdep /#softdep /' -e 's/^#blacklist /blacklist /' -e 's/^#alias /alias /' \
	-e 's/^options vbblk .*/options vbblk mode=bio/' /etc/modprobe.d/vbblk.conf
udev_start
if lsmod | grep -q '^virtio_blk '; then fail "blacklisted virtio_blk was loaded"; fi
lsmod | grep -q '^vbblk ' || fail "udev did not load vbblk through the alias"
expect_eq "mode from modprobe.d" "$(cat /sys/module/vbblk/parameters/mode)" bio
for s in ROOT-1 INST-1 INST-2; do
	d=$(disk_by_serial $s) || fail "no $s disk"
	expect_eq "$s driver" "$(drvof "$d")" vbblk
	if [ -d "/sys/block/$d/mq" ]; then fail "$d is blk-mq although mode=bio"; fi
done
verify /dev/disk/by-id/virtio-INST-2
udev_stop
must modprobe -r vbblk
log "recipe B: every disk on vbblk (bio mode), virtio_blk never loaded"
log "PASS"
