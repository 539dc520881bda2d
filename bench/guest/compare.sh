# compare: fio against one disk under each driver configuration, interleaved
# in one boot, the order rotated every round (A B C, B C A, C A B: a Latin
# square once ROUNDS is the number of configs), so no configuration always
# runs first or after the same neighbour. Writes fio JSON and counters to
# /host/results/. Settings come from /host/config.sh (written by
# bench/compare): ROUNDS, RUNTIME, CONFIGS, WORKLOADS, KINSN, PROFILE,
# SETTLE_MS, KWIN_MS, NWIN_MS, NUMJOBS, SCHED, PIN.
#
# The load runs unpinned unless PIN=1 (the jobs' cpus_allowed, vbuio -C):
# users do not pin, and a load that moves between CPUs costs each driver
# remote wakeups and completions, which the NWIN_MS window counts as IPIs
# (/proc/interrupts RES and CAL) and the load's migrations.
#
# One timed fio run per round, config and workload. While it runs:
#   1. (KINSN=1) `vbmark window` waits for I/O to flow, then brackets KWIN_MS
#      of steady state with two kinsn plugin markers and reports the KiB
#      submitted in between: the host turns that into guest kernel
#      instructions per I/O, with fio's start-up and exit outside the window;
#   2. for NWIN_MS, the host counts the disk's notifies in QEMU's trace
#      (virtio_queue_notify) and /proc/interrupts counts virtio interrupts.
# Device requests and flushes (QMP query-blockstats) cover the whole run.
# A workload with a bench/jobs/NAME.vbuio file instead of NAME.fio runs
# vbuio with its options: on a vbblk config against the passthrough node
# (/dev/vbblk/<disk>, its I/O counted by uring_cmds: no bio carries it), on
# the others against the block device, the same loop.
. /tests/lib.sh
. /host/config.sh
R=/host/results
mkdir -p $R
jobs=/tests/jobs

load_cfg() { # load_cfg CONFIG [driver params]
	_c=$1; shift
	case $_c in
	stock) modprobe virtio_blk "$@" ;;
	request) insmod "$VBBLK_KO" mode=request "$@" ;;
	bio-nobatch) insmod "$VBBLK_KO" mode=bio batch=0 "$@" ;;
	bio) insmod "$VBBLK_KO" mode=bio batch=1 "$@" ;;
	bio-direct) insmod "$VBBLK_KO" mode=bio batch=1 indirect=0 "$@" ;;
	bio-pairs|bio-single) insmod "$VBBLK_KO" mode=bio batch=1 rings=${_c#bio-} "$@" ;;
	request-pairs|request-single) insmod "$VBBLK_KO" mode=request rings=${_c#request-} "$@" ;;
	# the module of bench/compare's BASE commit, for before/after runs
	bio-base) insmod "${VBBLK_KO%/*}/vbblk-base.ko" mode=bio batch=1 "$@" ;;
	request-base) insmod "${VBBLK_KO%/*}/vbblk-base.ko" mode=request "$@" ;;
	nullb-bio) modprobe null_blk queue_mode=0 gb=4 nr_devices=1 ;;
	nullb-mq) modprobe null_blk queue_mode=2 gb=4 nr_devices=1 "$@" ;;
	*) fail "unknown config $_c" ;;
	esac || fail "cannot load config $_c $*"
}
unload_cfg() {
	case $1 in
	stock) rmmod virtio_blk ;;
	nullb-*) rmmod null_blk ;;
	*) rmmod vbblk ;;
	esac || fail "unload $1"
}
cfg_disk() {
	case $1 in
	nullb-*) _i=0; while [ ! -b /dev/nullb0 ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
		echo nullb0 ;;
	*) disk_by_serial BENCH-1 ;;
	esac
}

cfg_unload() {
	unload_cfg $cfg
	case $cfg in nullb-*) ;; *) wait_gone $d || fail "$d did not go away" ;; esac
}

# QMP query-blockstats of the bench disk: "requests flushes"
devops() {
	case $cfg in nullb-*) echo "0 0"; return ;; esac
	hostcmd blockstats bench | awk -F= '/^(rd|wr)_operations=/ { n += $2 }
		/^flush_operations=/ { f = $2 } END { print n + 0, f + 0 }'
}

# notifies: QEMU traces virtio_queue_notify; the host counts the bench disk's
# lines between "nwin start" and "nwin stop" (a guest kprobe would cost
# instructions, and toggling one under I/O is not safe under TCG)
notifies() {
	case $cfg in nullb-*) echo "notifies=0 requests=0"; return ;; esac
	hostcmd nwin "$1" | tr '\n' ' '
}

pgpg() { awk '/^pgpg(in|out) / { s += $2 } END { print s + 0 }' /proc/vmstat; }
# KiB moved so far: VBMARK_COUNTER's (the passthrough node), else pgpg
iokib() {
	[ -n "$VBMARK_COUNTER" ] || { pgpg; return; }
	echo $(( $(cat "${VBMARK_COUNTER%:*}") * ${VBMARK_COUNTER##*:} ))
}
# bio mode's bios and the plug callbacks they made blk_check_plugged()
# allocate, over the whole run: "bios callbacks" (0 0 for other drivers)
plugcbs() {
	_s=/sys/block/$d/vbblk
	if [ -r $_s/plug_callbacks ]; then echo "$(cat $_s/bios) $(cat $_s/plug_callbacks)"
	else echo "0 0"; fi
}
# workload $1's job (bench/jobs), without PIN=both's @cpu0
job() { echo "${1%@cpu0}"; }
# whether workload $1 runs pinned: PIN=1, or PIN=both's @cpu0 twin
pinned() { [ "$PIN" = 1 ] || [ "$1" != "$(job $1)" ]; }
# the job file of workload $1: unpinned unless pinned(); with NUMJOBS > 1,
# NUMJOBS jobs (pinned: one per CPU)
jobfile() {
	_w=$(job $1)
	[ "${NUMJOBS:-1}" -gt 1 ] || ! pinned $1 || { echo $jobs/$_w.fio; return; }
	_j=/tmp/$1-x$NUMJOBS.fio
	grep -v -e '^cpus_allowed' -e '^numjobs' -e '^group_reporting' $jobs/$_w.fio > $_j
	[ "${NUMJOBS:-1}" -gt 1 ] && printf 'numjobs=%s\ngroup_reporting=1\n' "$NUMJOBS" >> $_j
	[ "${NUMJOBS:-1}" -gt 1 ] && pinned $1 &&
		printf 'cpus_allowed_policy=split\ncpus_allowed=0-%s\n' $((NUMJOBS - 1)) >> $_j
	echo $_j
}
# vbuio's options of workload $1, without its CPU (-C) unless pinned()
vbuio_args() {
	_a=$(grep -v '^#' $jobs/$(job $1).vbuio)
	pinned $1 && { echo "$_a"; return; }
	echo "$_a" | sed 's/ *-C [0-9]*//'
}
# IPIs so far, every CPU: rescheduling (a remote wakeup) and function call
# (a remote completion) interrupts
ipis() { awk '/^ *(RES|CAL):/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i }
	END { print n + 0 }' /proc/interrupts; }
# migrations so far of each of the load's threads (fio's, vbuio's): "tid:n ..."
migrations() {
	# a thread may end meanwhile: its file is gone, and that is no error
	for _f in $(for _p in $(pidof fio vbuio); do echo /proc/$_p/task/*/sched; done); do
		_t=${_f%/sched}
		awk -v t="${_t##*/}" '/^se.nr_migrations/ { printf "%s:%s ", t, $3 }' $_f 2>/dev/null ||
			true
	done
}
# migrations between two migrations() of the threads that lived through both
migrated() {
	echo "$1 / $2" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "/") { b = 1; continue }
		split($i, x, ":"); if (!b) m0[x[1]] = x[2]; else if (x[1] in m0) n += x[2] - m0[x[1]] }
		print n + 0 }'
}
ms_sleep() { sleep "$(awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }')"; }

# A cell whose I/O stopped: what the guest and the device each hold, so a
# lost interrupt (the device used more than the guest reaped) can be told
# from a stuck device (requests in use) or a stuck submitter (sysrq w).
stuck() {
	log "stuck: $cfg $wl on $d: inflight $(cat /sys/block/$d/inflight)"
	grep -E 'virtio|vbblk' /proc/interrupts | while read -r _l; do log "irq: $_l"; done
	for _q in 0 1 2 3 4 5 6 7 8; do
		_s=$(hostcmd qmp x-query-virtio-queue-status \
			"{\"path\": \"/machine/peripheral/bench/virtio-backend\", \"queue\": $_q}")
		case "$_s" in *error*|'') break ;; esac
		log "vq $_q: $_s"
	done
	# a CPU whose timer stopped ticking, and where fio is
	log "timer ticks: $(grep LOC: /proc/interrupts)"
	sleep 1
	log "1 s later:   $(grep LOC: /proc/interrupts)"
	for _p in $(pidof fio); do
		log "fio $_p: $(grep State: /proc/$_p/status), cpu $(cut -d' ' -f39 /proc/$_p/stat), wchan $(cat /proc/$_p/wchan)"
		cat /proc/$_p/stack 2>/dev/null | while read -r _l; do log "  $_l"; done
	done
	echo w > /proc/sysrq-trigger
	echo l > /proc/sysrq-trigger
	sleep 1
}

# CONFIGS rotated left by $1 places
rotated() {
	echo $CONFIGS | awk -v k="$1" '{ for (i = 0; i < NF; i++)
		printf "%s%s", $((i + k) % NF + 1), (i < NF - 1 ? " " : "\n") }'
}

# the kernel's symbols for the profile, first: a run that fails half way
# still has its profiles read (modules' symbols are taken per cell)
[ "$PROFILE" = 1 ] && grep -v '\[' /proc/kallsyms > $R/kallsyms

r=1
while [ $r -le "$ROUNDS" ]; do
	for cfg in $(rotated $((r - 1))); do
		loaded=
		for wl in $WORKLOADS; do
			# null_blk's bio mode has no NOWAIT, which polled I/O needs
			case $cfg-$wl in nullb-bio-*hipri*)
				echo "null_blk bio mode cannot poll" > $R/r$r-$cfg-$wl.skip; continue ;;
			esac
			# polled workloads need a poll queue: reload with one
			want=none; case $wl in *hipri*) want=poll_queues=1 ;; esac
			if [ "$want" != "$loaded" ]; then
				[ -n "$loaded" ] && cfg_unload
				if [ $want = none ]; then load_cfg $cfg; else load_cfg $cfg $want; fi
				loaded=$want
				d=$(cfg_disk $cfg)
				[ -b /dev/$d ] || fail "no disk for $cfg"
				# a one-queue blk-mq disk gets mq-deadline; SCHED
				# sets every config's scheduler (bio mode has none)
				_s=/sys/block/$d/queue/scheduler
				if [ -n "$SCHED" ] && [ -w $_s ] && grep -q . $_s; then
					echo "$SCHED" > $_s || fail "scheduler $SCHED on $d"
				fi
			fi
			out=$R/r$r-$cfg-$wl
			# the host prints progress and measures its own load
			hostcmd cell start "$r" "$cfg" "$wl" > /dev/null
			set -- $(devops); o0=$1 f0=$2
			set -- $(plugcbs); b0=$1 c0=$2
			unset VBMARK_COUNTER
			if [ -f $jobs/$(job $wl).vbuio ]; then
				[ "${NUMJOBS:-1}" = 1 ] || fail "$wl: vbuio workloads run one job"
				_a=$(vbuio_args $wl)
				_t=/dev/$d
				if [ -c /dev/vbblk/$d ]; then
					_t=/dev/vbblk/$d
					_bs=$(echo "$_a" | sed -n 's/.*-b \([0-9]*\).*/\1/p')
					export VBMARK_COUNTER=/sys/block/$d/vbblk/uring_cmds:$((${_bs:-4096} / 1024))
				fi
				# shellcheck disable=SC2086 # the options, word by word
				vbuio $_a -t "$RUNTIME" -J $out.json $_t > $out.err 2>&1 &
			else
				fio --output-format=json --output=$out.json --filename=/dev/$d \
					--time_based=1 --runtime="$RUNTIME" $(jobfile $wl) > $out.err 2>&1 &
			fi
			fpid=$!
			# wait for I/O to flow and settle, then (KINSN=1) the instruction window
			kw=0; [ "$KINSN" = 1 ] && kw=$KWIN_MS
			vbmark window "$SETTLE_MS" "$kw" $([ "$PROFILE" = 1 ] && echo prof) \
				> $out.window || { stuck; fail "vbmark window under $cfg $wl"; }
			[ "$KINSN" = 1 ] && echo "/host/results/r$r-$cfg-$wl" >> $R/marks.list
			notifies start > /dev/null; i0=$(disk_irqs $d); p0=$(iokib)
			x0=$(ipis); m0=$(migrations)
			ms_sleep "$NWIN_MS"
			x1=$(ipis); m1=$(migrations)
			i1=$(disk_irqs $d); p1=$(iokib); nw=$(notifies stop)
			wait $fpid || { cat $out.err; fail "fio $wl under $cfg"; }
			# module symbols for the profile (modules move between loads)
			[ "$PROFILE" = 1 ] && grep '\[' /proc/kallsyms > $out.modsyms
			hl=$(hostcmd cell stop | tr '\n' ' ')
			set -- $(plugcbs); pb=$(($1 - b0)) pc=$(($2 - c0))
			set -- $(devops)
			echo "dev_ops=$(($1 - o0)) flushes=$(($2 - f0)) irqs=$((i1 - i0)) $nw nwin_kib=$((p1 - p0)) bios=$pb plug_cbs=$pc ipis=$((x1 - x0)) migrations=$(migrated "$m0" "$m1") $hl" > $out.counts
			log "round $r $cfg $wl: $(cat $out.counts)"
		done
		cfg_unload
	done
	r=$((r + 1))
done
echo done > $R/complete
