#!/bin/sh
# vbblk-udev KERNEL - run by 60-vbblk.rules for each disk virtio_blk drives
# that has a serial: moves it to vbblk when its serial is listed in
# /etc/vbblk/disks (one per line, '#' comments). Logs to the kernel log.
# Environment: VBBLK_DISKS (list), VBBLK_BIND (helper) override the defaults.
list=${VBBLK_DISKS:-/etc/vbblk/disks}
bind=${VBBLK_BIND:-@SBINDIR@/vbblk-bind}
name=$1

say() { echo "vbblk-udev: $*" > /dev/kmsg 2>/dev/null || echo "vbblk-udev: $*" >&2; }

[ -n "$name" ] || { echo "usage: vbblk-udev vdX" >&2; exit 2; }
[ -r "$list" ] || exit 0
serial=$(cat "/sys/block/$name/serial" 2>/dev/null)
[ -n "$serial" ] || exit 0

found=
while IFS= read -r line || [ -n "$line" ]; do
	line=${line%%#*}
	# trim surrounding blanks
	line=$(echo "$line" | sed 's/^[[:space:]]*//;s/[[:space:]]*$//')
	[ "$line" = "$serial" ] && { found=1; break; }
done < "$list"
[ -n "$found" ] || exit 0

if new=$("$bind" "$name" vbblk 2>&1); then
	say "$name (serial $serial) moved to vbblk as $new"
else
	say "moving $name (serial $serial) to vbblk failed: $new"
	exit 1
fi
