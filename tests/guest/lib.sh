# Common helpers for the guest test scripts (busybox sh). Source it first:
#   . /tests/lib.sh
# DRIVER is vbblk or virtio_blk (from the kernel command line).
set -e
DRIVER=${DRIVER:-vbblk}
KVER=$(uname -r)
# the device side (tests/lib/vm.py SIDES): main, iothread or vhost-user
VBSIDE=$(sed -n 's/.*vbside=\([^ ]*\).*/\1/p' /proc/cmdline)
VBSIDE=${VBSIDE:-main}
# how much slower than Debian's this kernel is (tests/run: vbscale=, from the
# timeout scale of a kernel of scripts/build-kernel.sh): the deadlines of
# disk_by_serial and wait_gone stretch by it
VBSCALE=$(sed -n 's/.*vbscale=\([0-9]*\).*/\1/p' /proc/cmdline)
VBSCALE=${VBSCALE:-1}
VBBLK_KO=/lib/modules/$KVER/extra/vbblk.ko

# busybox-static's sh runs its own applets before searching PATH; use the real
# util-linux / kmod tools where the initramfs has them.
for _t in /usr/sbin/blkdiscard /usr/sbin/blockdev /usr/bin/fallocate /usr/sbin/modprobe \
	  /usr/sbin/insmod /usr/sbin/rmmod /usr/sbin/lsmod; do
	[ -x "$_t" ] && eval "${_t##*/}() { $_t \"\$@\"; }"
done

log() { echo "[$VBTEST] $*"; }
fail() { echo "[$VBTEST] FAIL: $*"; exit 1; }
# skip WHY: the test cannot run here (not a pass); tests/guest/init reports SKIP
skip() { echo "[$VBTEST] SKIP: $*"; exit 77; }
# run CMD...: run a command, fail the test with a message if it fails
must() { "$@" || fail "command failed (rc=$?): $*"; }
# cmd_res WANT PATH KEY=VALUE...: one passthrough command (vbuio cmd) must
# complete with res=WANT
cmd_res() {
	_want=$1; shift
	_out=$(vbuio cmd "$@") || fail "vbuio cmd $* failed: $_out"
	_res=$(echo "$_out" | sed -n 's/^res=//p')
	[ "$_res" = "$_want" ] || fail "vbuio cmd $*: res=$_res, expected $_want"
	log "ok: $* -> $_res"
}
# mustfail CMD...: the command must fail
mustfail() { if "$@"; then fail "command unexpectedly succeeded: $*"; fi; }

# drv_load [params...]: load the driver under test
drv_load() {
	if [ "$DRIVER" = vbblk ]; then
		[ -f "$VBBLK_KO" ] || fail "vbblk.ko not in initramfs"
		# dependencies (virtio, virtio_ring) are already loaded by virtio_pci
		# VBPARAMS (tests/run: VBBLK_PARAMS=...) come first, test params override
		insmod "$VBBLK_KO" $VBPARAMS "$@" || fail "insmod vbblk $VBPARAMS $* failed"
		# VBDEBUGFS (tests/run: VBBLK_DEBUGFS=...): knobs of a VBBLK_DEBUG=y build
		for _k in $VBDEBUGFS; do
			grep -q " /sys/kernel/debug " /proc/mounts ||
				mount -t debugfs none /sys/kernel/debug
			[ -e "/sys/kernel/debug/vbblk/${_k%%=*}" ] ||
				fail "no debugfs knob vbblk/${_k%%=*}: vbblk.ko not built with VBBLK_DEBUG=y"
			echo "${_k#*=}" > "/sys/kernel/debug/vbblk/${_k%%=*}" ||
				fail "could not set debugfs vbblk/$_k"
		done
	else
		modprobe virtio_blk "$@" || fail "modprobe virtio_blk $* failed"
	fi
}

drv_unload() {
	rmmod "$DRIVER" || fail "rmmod $DRIVER failed"
}

# hwq_count vdX: number of blk-mq hardware queues, or "none" for a bio-based disk
hwq_count() {
	if [ -d "/sys/block/$1/mq" ]; then ls -d /sys/block/$1/mq/* 2>/dev/null | wc -l; else echo none; fi
}

# vq_count vdX: request virtqueues the driver set up, from the interrupt names
# (virtioN-req.K, one MSI-X vector each), for bio- and blk-mq-based disks alike
vq_count() {
	_v=$(basename "$(readlink -f /sys/block/$1/device)")
	grep -c " $_v-req\." /proc/interrupts
}

# disk_irqs vdX [KIND]: interrupts taken by the disk's request virtqueues
# (virtioN-req.K vectors, and reqbig.K of vbblk's paired indirect rings;
# KIND=poll: vbblk's poll queues, virtioN-poll.K and pollbig.K), summed over
# all CPUs; 0 for a non-virtio disk
disk_irqs() {
	[ -e "/sys/block/$1/device" ] || { echo 0; return; }
	_v=$(basename "$(readlink -f /sys/block/$1/device)")
	awk -v dev="$_v" -v kind="${2:-req}" '$0 ~ " "dev"-"kind"(big)?\\." { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i }
		END { print n + 0 }' /proc/interrupts
}

drv_loaded() { [ -d "/sys/module/$DRIVER" ]; }

# disk_by_serial SERIAL [TIMEOUT_S]: echo the vdX name of the disk with that serial
# (a vhost-user disk has no serial of its own: /host/disks.map gives its PCI
# address instead, or that of the root port it sits behind)
disk_by_serial() {
	_s=$1 _t=$((${2:-20} * VBSCALE))
	_i=0
	_pci=$(awk -v s="$_s" '$1 == s { print $2 }' /host/disks.map 2>/dev/null)
	while [ $_i -lt $((_t * 10)) ]; do
		if [ -n "$_pci" ]; then
			for _b in /sys/bus/pci/devices/$_pci/virtio*/block/vd* \
				/sys/bus/pci/devices/$_pci/0000:*/virtio*/block/vd*; do
				[ -e "$_b" ] || continue
				_d=${_b##*/}
				if [ -b "/dev/$_d" ]; then echo "$_d"; return 0; fi
			done
		else
			for _f in /sys/block/vd*/serial; do
				[ -r "$_f" ] || continue
				if [ "$(cat "$_f" 2>/dev/null)" = "$_s" ]; then
					_d=${_f#/sys/block/}
					_d=${_d%/serial}
					if [ -b "/dev/$_d" ]; then echo "$_d"; return 0; fi
				fi
			done
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "[$VBTEST] FAIL: no disk with serial '$_s' after ${_t}s" >&2
	for _f in /sys/block/*/serial; do
		[ -e "$_f" ] && echo "$_f: $(cat "$_f" 2>&1)" >&2
	done
	ls /sys/block >&2
	ls -l /dev/vd* >&2	# a regular file there keeps devtmpfs from making the node
	return 1
}

# wait_gone vdX [TIMEOUT_S]
wait_gone() {
	_i=0
	while [ -e "/sys/block/$1" ] && [ $_i -lt $((${2:-10} * 10 * VBSCALE)) ]; do
		sleep 0.1; _i=$((_i + 1))
	done
	[ ! -e "/sys/block/$1" ]
}

sysblk() { cat "/sys/block/$1/$2"; }

# hold_start vdX K [waits]: `vbuio cmd ... poll=1 hold=K` on /dev/vbblk/vdX in
# the background (pid in $ph, output in /tmp/hold.out): K polled READs left
# unreaped and one more from io-wq. Returns once all K+1 are submitted and,
# with "waits", once that last one waits for a free command.
hold_start() {
	vbuio cmd /dev/vbblk/$1 op=read len=4096 poll=1 hold=$2 > /tmp/hold.out 2>&1 &
	ph=$!
	_i=0
	until grep -q "^held=$(($2 + 1))\$" /tmp/hold.out &&
		{ [ "$3" != waits ] || [ "$(sysblk $1 vbblk/ring_full_waits)" -gt 0 ]; }; do
		_i=$((_i + 1))
		[ $_i -le $((100 * VBSCALE)) ] || { cat /tmp/hold.out;
			fail "hold=$2 on $1: not all submitted${3:+, or none waits for a free command}"; }
		sleep 0.1
	done
}

# hold_reap: the hold_start'ed vbuio reaps its ring and prints resN= for each
hold_reap() {
	kill -USR1 $ph
	wait $ph || { cat /tmp/hold.out; fail "the held commands' ring failed"; }
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
	log "ok: $1 = $2"
}

# hostcmd ACTION ARGS...: ask the host test driver to do something (QMP etc.).
# Prints the answer body; returns non-zero if the host reported an error.
hostcmd() {
	# the sequence number lives in a file: hostcmd usually runs in a $(...) subshell
	_n=$(cat /tmp/.hostcmd.seq 2>/dev/null || echo 0)
	_n=$((_n + 1))
	echo $_n > /tmp/.hostcmd.seq
	_id=$(printf '%05d' $_n)
	echo "$*" > /host/req/$_id.tmp
	mv /host/req/$_id.tmp /host/req/$_id.req
	_i=0
	while [ ! -e /host/req/$_id.resp ]; do
		sleep 0.1
		_i=$((_i + 1))
		[ $_i -lt 600 ] || { echo "[$VBTEST] FAIL: host did not answer '$*'" >&2; return 1; }
	done
	_st=$(head -n 1 /host/req/$_id.resp)
	tail -n +2 /host/req/$_id.resp
	[ "$_st" = OK ] || { echo "[$VBTEST] host: $_st" >&2; return 1; }
}

# throttle QDEV IOPS: limit a virtio-blk disk (by its QEMU device id) to IOPS
# requests/s through QMP, 0 to lift it. Makes the device, not the TCG guest,
# the bottleneck, so that requests queue up in the device.
throttle() {
	_r=$(hostcmd qmp block_set_io_throttle "{\"id\": \"/machine/peripheral/$1/virtio-backend\", \"bps\": 0, \"bps_rd\": 0, \"bps_wr\": 0, \"iops\": $2, \"iops_rd\": 0, \"iops_wr\": 0}") ||
		fail "throttle $1 $2"
	case "$_r" in *error*) fail "throttle $1 $2: $_r" ;; esac
}

# fio wrapper: show output, fail with message on non-zero exit
run_fio() {
	log "fio $*"
	fio "$@" > /tmp/fio.out 2>&1 || { cat /tmp/fio.out; fail "fio failed: $*"; }
	grep -E 'err=|IOPS|verify' /tmp/fio.out | head -n 40 || true
	if grep -q 'verify: bad' /tmp/fio.out; then cat /tmp/fio.out; fail "fio reported verify errors"; fi
}

devsum() { # devsum DEV [MiB]: sha256 of the first MiB of the device (default all)
	if [ -n "$2" ]; then
		dd if="/dev/$1" bs=1M count="$2" iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1
	else
		dd if="/dev/$1" bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1
	fi
}
