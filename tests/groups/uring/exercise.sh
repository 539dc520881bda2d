#!/bin/sh
# The exerciser (tests/tools/vbexer.c): operations drawn from a seed over
# the node, the block device and events from a second process, each result
# checked against a model. The host drew this boot's device shape and the
# module's parameters from the same seed (tests/groups/uring/cases.py) and
# left them in /host/exer.env. A failure prints the seed, the operation and,
# for one that does not stall the kernel, a shrunk list of operations.
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
. /host/exer.env
log "seed $EXER_SEED; device: $EXER_SHAPE; parameters: $EXER_PARAMS"
case ",$EXER_EVENTS," in
*,suspend,*)
	[ -w /sys/power/pm_test ] || fail "kernel has no /sys/power/pm_test (CONFIG_PM_DEBUG)"
	echo 5 > /sys/module/suspend/parameters/pm_test_delay 2>/dev/null || true
	# 9pnet_virtio has no freeze/restore: let go of the host share first
	umount /host || fail "cannot unmount the host share"
	;;
esac
# bad sectors (-B): the kernel logs each failed I/O; the model checks them
case " $EXER_FLAGS " in
*" -B "*) touch /tmp/.allow_io_errors ;;
esac
# 6.11-6.13's io_uring reads a passthrough command's SQE when it issues it,
# so one issued late (a link after the first, behind a drain) reads what
# user space wrote into its slot since (docs/passthrough.md): on those,
# such commands go by io-wq, whose SQE io_uring copies at once
case "$(uname -r)" in
6.1[123].*) EXER_FLAGS="$EXER_FLAGS -x late" ;;
esac
# a replay on a module older than rings= (issue 49): the seed's other
# draws, without it
if ! grep -q 'parm=rings:' "$VBBLK_KO"; then
	EXER_PARAMS=$(echo "$EXER_PARAMS" | sed 's/ *rings=[a-z]*//')
fi
drv_load $EXER_PARAMS
d=$(disk_by_serial EXER-1)
log "$d: cache_type $(cat /sys/block/$d/cache_type)," \
	"lbs $(cat /sys/block/$d/queue/logical_block_size)," \
	"ro $(cat /sys/block/$d/ro), poll $(cat /sys/block/$d/queue/io_poll)," \
	"discard $(cat /sys/block/$d/queue/discard_max_hw_bytes)," \
	"wzeroes $(cat /sys/block/$d/queue/write_zeroes_max_bytes)"
# EXER_TRACE=1: io_uring's events and new tasks, the trace's end on a failure
tr=/sys/kernel/tracing
if [ -n "$EXER_TRACE" ]; then
	[ -d $tr/events ] || mount -t tracefs nodev $tr
	echo 8192 > $tr/buffer_size_kb
	echo 1 > $tr/events/io_uring/enable
	echo 1 > $tr/events/task/task_newtask/enable
	echo 1 > $tr/tracing_on
fi
if ! vbexer -s "$EXER_SEED" -n "$EXER_OPS" -t "$((EXER_SECS * VBSCALE))" \
	-w "$((60 * VBSCALE))" -E "$EXER_EVENTS" $EXER_FLAGS "$d"; then
	if [ -n "$EXER_TRACE" ]; then
		echo 0 > $tr/tracing_on
		grep -v task_work_run $tr/trace | tail -n 400
	fi
	fail "the exerciser found a result the model does not allow (above);" \
		"replay: EXER_SEED=$EXER_SEED EXER_OPS=$EXER_OPS tests/run" \
		"'exercise[$(cat /sys/module/vbblk/parameters/mode)]'"
fi
log "ok"
