#!/bin/sh
# vbblk-bind.sh - move one virtio block device between the stock virtio_blk
# driver and vbblk without rebooting (sysfs unbind/bind).  Runs in the guest
# (busybox sh compatible).
#
#   vbblk-bind.sh [-f] DISK DRIVER
#     DISK    vdX (current block device name), virtioN (device on the virtio
#             bus) or serial=XYZ (matched against /sys/block/vd*/serial)
#     DRIVER  vbblk or virtio_blk
#     -f      move even if the disk (or a partition) is mounted
#
# Prints the new block device name (e.g. "vdc") on success.
# Environment: VBBLK_KO=/path/to/vbblk.ko is insmod'ed if modprobe can't find vbblk.
VBUS=/sys/bus/virtio
prog=${0##*/}

err() { echo "$prog: error: $*" >&2; exit 1; }
usage() {
	echo "usage: $prog [-f] DISK DRIVER" >&2
	echo "  DISK: vdX | virtioN | serial=XYZ    DRIVER: vbblk | virtio_blk" >&2
	exit 2
}

force=
[ "$1" = -f ] && { force=1; shift; }
[ $# -eq 2 ] || usage
disk=$1 target=$2

case "$target" in
vbblk|virtio_blk) ;;
*) echo "$prog: error: unknown driver '$target' (expected vbblk or virtio_blk)" >&2; usage ;;
esac
[ -d "$VBUS/devices" ] || err "$VBUS/devices not found (is virtio loaded? is sysfs mounted?)"

# --- resolve DISK to a virtio device name (virtioN) ---
dev=
case "$disk" in
serial=*)
	want=${disk#serial=}
	[ -n "$want" ] || err "empty serial"
	for f in /sys/block/vd*/serial; do
		[ -r "$f" ] || continue
		if [ "$(cat "$f" 2>/dev/null)" = "$want" ]; then
			b=${f%/serial}
			[ -z "$dev" ] || err "more than one disk has serial '$want'"
			dev=$(basename "$(readlink -f "$b/device")")
		fi
	done
	[ -n "$dev" ] || err "no virtio disk with serial '$want' (only disks bound to a driver can be found by serial)"
	;;
virtio[0-9]*)
	dev=$disk
	;;
/dev/vd*|vd*)
	name=${disk#/dev/}
	[ -e "/sys/block/$name" ] || err "no block device '$name' in /sys/block"
	[ -e "/sys/block/$name/device" ] || err "'$name' is not a whole virtio disk"
	dev=$(basename "$(readlink -f "/sys/block/$name/device")")
	;;
*)
	echo "$prog: error: cannot parse DISK '$disk'" >&2; usage ;;
esac

ddir=$VBUS/devices/$dev
[ -e "$ddir" ] || err "no virtio device '$dev' in $VBUS/devices"
# virtio device id 2 = block
devid=$(cat "$ddir/device" 2>/dev/null)
case "$devid" in
0x0002|2) ;;
*) err "'$dev' is not a virtio block device (device id $devid)" ;;
esac

blkname() { # print the block device(s) under the virtio device
	for b in "$ddir"/block/*; do [ -e "$b" ] && basename "$b"; done
}

cur=
[ -L "$ddir/driver" ] && cur=$(basename "$(readlink -f "$ddir/driver")")

if [ "$cur" = "$target" ]; then
	n=$(blkname)
	[ -n "$n" ] || err "$dev is bound to $target but has no block device"
	echo "$n"
	exit 0
fi

# refuse to pull a mounted disk away unless forced
if [ -n "$cur" ] && [ -z "$force" ]; then
	for n in $(blkname); do
		if grep -qE "^/dev/$n(p?[0-9]+)? " /proc/mounts; then
			err "/dev/$n (or a partition) is mounted; unmount it first or use -f"
		fi
	done
fi

# make sure the target driver is registered before unbinding
if [ ! -d "$VBUS/drivers/$target" ]; then
	if ! modprobe "$target" 2>/dev/null; then
		if [ "$target" = vbblk ] && [ -n "$VBBLK_KO" ] && [ -f "$VBBLK_KO" ]; then
			insmod "$VBBLK_KO" || err "insmod $VBBLK_KO failed (see dmesg)"
		else
			err "driver $target is not loaded and 'modprobe $target' failed (module not installed? run depmod, or set VBBLK_KO=/path/vbblk.ko)"
		fi
	fi
	[ -d "$VBUS/drivers/$target" ] || err "module $target loaded but $VBUS/drivers/$target does not exist"
fi
# loading the module may already have probed an unbound device
cur2=
[ -L "$ddir/driver" ] && cur2=$(basename "$(readlink -f "$ddir/driver")")

if [ "$cur2" != "$target" ]; then
	if [ -n "$cur2" ]; then
		echo "$dev" > "$VBUS/drivers/$cur2/unbind" || err "unbinding $dev from $cur2 failed"
	fi
	if ! echo "$dev" > "$VBUS/drivers/$target/bind"; then
		msg="binding $dev to $target failed (see dmesg)"
		if [ -n "$cur2" ]; then
			echo "$dev" > "$VBUS/drivers/$cur2/bind" 2>/dev/null &&
				msg="$msg; rebound to $cur2" || msg="$msg; rebinding to $cur2 failed too"
		fi
		err "$msg"
	fi
fi

# wait for the new disk
i=0
while [ $i -lt 100 ]; do
	n=$(blkname)
	if [ -n "$n" ] && [ -b "/dev/$n" ]; then
		echo "$n"
		exit 0
	fi
	sleep 0.1
	i=$((i + 1))
done
err "$dev is bound to $target but no block device appeared within 10s"
