# indirect_fail: a command that only indirect descriptors can carry (a
# 256 KiB write of 64 separate pages, 66 descriptors, on a 16-entry ring
# whose device still says seg_max 126) meets a failed GFP_ATOMIC
# allocation of its indirect table: tests/kmod/vbfault.ko fails the next 3
# tables of more than 16 descriptors. With nothing else in flight no
# completion will come to retry it, yet the failure is transient: the
# write must wait and succeed, not fail with EIO (bio mode), nor stay
# parked after a re-add that fails with an empty ring, nor sit behind a
# stopped hardware queue (request mode). Three single writes, then twice
# four at once; each must read back, and the switch must have injected
# exactly 3 failures. A write not done after 30 s is stranded: the test
# says so (and restarts a stopped blk-mq queue through debugfs so the
# guest ends cleanly) long before the hung task detector (60 s). The stock
# driver strands it too (BLK_STS_DEV_RESOURCE with its queue stopped):
# SKIP there. SKIP where vbfault cannot probe the allocation. vbblk runs
# rings=single: on one virtqueue its default is direct rings, no tables.
. /tests/lib.sh
ko=/lib/modules/$KVER/extra/vbfault.ko
[ -f $ko ] || fail "vbfault.ko not in initramfs"
insmod $ko || fail "insmod vbfault.ko"
ctl=/sys/kernel/debug/vbfault/indirect_fail
st=$(cat $ctl) || fail "no $ctl (debugfs not mounted?)"
case $st in SKIP*) skip "vbfault: $st" ;; esac

# one virtqueue: rings=auto would turn indirect descriptors off (direct
# rings); rings=single keeps the per-command tables this test fails
if [ "$DRIVER" = vbblk ]; then drv_load rings=single; else drv_load; fi
d=$(disk_by_serial INDIR-1)
bio_mode=0 path=blk-mq
if [ "$DRIVER" = vbblk ] && [ ! -d /sys/block/$d/mq ]; then bio_mode=1 path=bio; fi
segs=$(sysblk $d queue/max_segments)
kb=$(sysblk $d queue/max_sectors_kb)
log "$d ($path): max_segments $segs, max_sectors_kb $kb"
# 64 pages in one command, more descriptors than the ring has
[ "$segs" -ge 64 ] && [ "$kb" -ge 256 ] ||
	fail "$d takes no 256 KiB command of 64 segments: nothing needs indirect descriptors"

injected() { sed -n 's/.* failed=\([0-9]*\).*/\1/p' $ctl; }
parked() { if [ $bio_mode = 1 ]; then sysblk $d vbblk/parked; else echo 0; fi; }

# alive PIDS: true while one of them runs
alive() {
	for _a in "$@"; do kill -0 $_a 2>/dev/null && return 0; done
	return 1
}

# stranded WHAT PIDS: the writes did not end; free a stopped blk-mq queue
# so that they do, then judge
stranded() {
	_why="$1 not done after 30s: stranded ($(cat $ctl); $path)"
	shift
	if [ -d /sys/block/$d/mq ]; then
		log "hctx0 state: $(cat /sys/kernel/debug/block/$d/hctx0/state 2>/dev/null)"
		# each failure left may stop it again
		_j=0
		while alive "$@" && [ $_j -lt 10 ]; do
			echo start > /sys/kernel/debug/block/$d/state 2>/dev/null || true
			sleep 1
			_j=$((_j + 1))
		done
		alive "$@" || _why="$_why; the queue restarted through debugfs let them end"
	fi
	[ "$DRIVER" = vbblk ] || skip "stock $DRIVER strands it too: $_why"
	fail "$_why"
}

# round NAME OFFSET...: arm 3 failures, write 256 KiB at each offset (MiB)
# at once, each with its own seed; all must succeed within 30 s
round() {
	_name=$1
	shift
	_f0=$(injected) _p0=$(parked) _pids= _offs="$*"
	echo "3 17" > $ctl || fail "cannot arm $ctl"
	for _o in "$@"; do
		vbtool scatter /dev/$d ${_o}M 256K $_o > /tmp/w.$_o 2>&1 &
		_pids="$_pids $!"
	done
	_i=0
	while alive $_pids; do
		[ $_i -lt 300 ] || stranded "$_name" $_pids
		sleep 0.1
		_i=$((_i + 1))
	done
	set -- $_pids
	for _o in $_offs; do
		wait $1 || fail "$_name: the write at ${_o}M failed ($path): $(cat /tmp/w.$_o)"
		shift
	done
	_n=$(($(injected) - _f0))
	_pk=$(($(parked) - _p0)) _what=
	[ $bio_mode = 0 ] || _what=", $_pk parked"
	log "$_name: done in ~$((_i / 10)).$((_i % 10))s, $_n failures injected$_what; $(cat $ctl)"
	expect_eq "$_name: failures injected" $_n 3
	case $(cat $ctl) in on*left=[1-9]*) fail "$_name: failures left: $(cat $ctl)" ;; esac
	if [ $bio_mode = 1 ] && [ $_pk -lt 1 ]; then
		fail "$_name: nothing parked: the empty ring's refusal was not seen"
	fi
	for _o in $_offs; do
		vbtool check /dev/$d ${_o}M 256K $_o || fail "$_name: data at ${_o}M differs"
	done
}

round single1 1
round single2 2
round single3 3
round four1 8 9 10 11
round four2 12 13 14 15
echo 0 > $ctl
log "indirect table failures survived: $(cat $ctl)"
