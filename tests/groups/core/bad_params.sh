# bad_params (vbblk only): invalid parameters fail insmod with a "vbblk:"
# dmesg line and leave nothing registered; good parameters work.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || { log "vbblk-specific, nothing to do for $DRIVER"; exit 0; }
[ -f "$VBBLK_KO" ] || fail "vbblk.ko missing"

# expect_rejected PARAMS...: insmod must fail cleanly
expect_rejected() {
	n=$(dmesg | wc -l)
	if insmod "$VBBLK_KO" "$@" 2>/tmp/insmod.err; then
		fail "insmod vbblk $* succeeded (must fail)"
	fi
	msg=$(dmesg | tail -n +$((n + 1)) | grep 'vbblk:' | grep -v 'taints kernel' | head -n 1)
	[ -n "$msg" ] || { dmesg | tail -n +$((n + 1)); fail "insmod vbblk $* failed but no 'vbblk:' line in dmesg"; }
	log "ok: '$*' rejected: ${msg#*] }"
	check_nothing_left "$*"
}

check_nothing_left() {
	if lsmod | grep -q '^vbblk '; then fail "vbblk listed in lsmod after failed insmod $1"; fi
	[ ! -e /sys/bus/virtio/drivers/vbblk ] || fail "/sys/bus/virtio/drivers/vbblk exists after failed insmod $1"
	[ ! -e /sys/module/vbblk ] || fail "/sys/module/vbblk exists after failed insmod $1"
	if ls /sys/block | grep -q '^vd'; then fail "a vd disk appeared after failed insmod $1"; fi
}

# expect_works PARAMS...: insmod succeeds, the disk appears and does I/O
expect_works() {
	insmod "$VBBLK_KO" "$@" || fail "insmod vbblk $* failed"
	d=$(disk_by_serial BP-1 10) || fail "no disk after insmod vbblk $*"
	sleep 0.2
	q=$(hwq_count $d)
	log "insmod '$*': $d, mode=$(cat /sys/module/vbblk/parameters/mode 2>/dev/null), hw queues: $q"
	[ -d /sys/bus/virtio/drivers/vbblk ] || fail "/sys/bus/virtio/drivers/vbblk missing"
	case "$* $q" in *num_queues=1\ *[0-9]) expect_eq "hw queues with num_queues=1" "$q" 1 ;; esac
	# the ring's indirect descriptors (feature bit 28): indirect=0 and
	# rings=direct turn them off; rings=auto keeps them where the disk's 4
	# virtqueues pair its queues, not with 3 of them poll queues (4 queues)
	ind=1
	case " $* " in *\ indirect=0\ *|*\ rings=direct\ *|*\ poll_queues=64\ *) ind=0 ;; esac
	expect_eq "indirect descriptors with '$*'" "$(cut -c29 /sys/block/$d/device/features)" $ind
	vbtool fill /dev/$d 0 1M 5 || fail "write failed with '$*'"
	vbtool check /dev/$d 0 1M 5 || fail "read-back failed with '$*'"
	rmmod vbblk || fail "rmmod vbblk failed"
	wait_gone $d || fail "$d still present after rmmod"
	check_nothing_left "(rmmod after '$*')"
}

for p in mode=foo mode= num_queues=0 num_queues=100000 num_queues=257 num_queues=-1 \
	 queue_depth=0 queue_depth=100000 queue_depth=1025 queue_depth=abc; do
	expect_rejected $p
done

for p in batch_max_bios=0 batch_max_bios=257 batch_max_kb=0 batch_max_kb=4097 batch=maybe \
	 poll_queues=65 poll_queues=-1 poll_queues=abc indirect=maybe indirect=2 rings=foo \
	 rings= rings=pair; do
	expect_rejected $p
done

# mode=bio is the default and must load and work.
expect_works mode=bio
expect_works mode=bio num_queues=1 queue_depth=16
expect_works mode=bio batch=0 batch_max_bios=1 batch_max_kb=4
expect_works
expect_works mode=request
expect_works mode=request num_queues=1 queue_depth=16
expect_works num_queues=256 queue_depth=1024
expect_works num_queues=1 queue_depth=1
# more poll queues than the device has: capped, one interrupt-driven queue left
expect_works mode=bio poll_queues=64
expect_works mode=request poll_queues=64
# without indirect descriptors every descriptor sits in the ring: I/O still works
expect_works mode=bio indirect=0
expect_works mode=request indirect=0 queue_depth=16
# each ring policy, and what the probe says it chose
for r in pairs single direct; do
	expect_works mode=bio rings=$r
	dmesg | grep "vbblk.*: bio mode, " | tail -n 1 | grep -q "($(case $r in
		pairs) echo 'pairs: two virtqueues per queue' ;; single) echo 'indirect tables: rings=single' ;;
		direct) echo 'direct rings: rings=direct' ;; esac))" || fail "rings=$r: the probe said otherwise"
done
log "bad_params ok"
