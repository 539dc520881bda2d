# uring_example: the passthrough example, examples/vbblk-uring.c
# (/usr/bin/vbblk-uring in the guest), run as its README tells an
# application developer to, with poll_queues=1:
#  - on a read-write 2-queue disk (one of them polled): one line per step
#    (GET_ID, registered buffer, WRITE, FLUSH, polled READ, verify) as
#    expected, exit 0; uring_cmds counts its 4 commands; its FLUSH is the
#    driver's one FLUSH (flushes) and reached the device (QMP); the pattern
#    reads back through the block device (and the host checks the backing
#    file); a second run at another sector and size passes too
#  - on a read-only disk it stops at the WRITE with EROFS and exits 1
. /tests/lib.sh
[ "$DRIVER" = vbblk ] || skip "vbblk only"
command -v vbblk-uring >/dev/null || fail "no vbblk-uring in the initramfs"
drv_load poll_queues=1
d=$(disk_by_serial UEX-1)
dro=$(disk_by_serial UEX-RO)
[ -c /dev/vbblk/$d ] || fail "no character device /dev/vbblk/$d"

# pattern SECTOR KIB: what vbblk-uring writes there (its fill_pattern())
pattern() {
	awk -v s0=$1 -v n=$(($2 * 2)) 'BEGIN {
		for (s = s0; s < s0 + n; s++)
			for (l = 0; l < 8; l++)
				printf "%-63s\n", sprintf("vbblk-uring sector %-10d line %d", s, l)
	}'
}
# check_data SECTOR KIB: the block device holds the pattern there
check_data() {
	blockdev --flushbufs /dev/$d
	got=$(dd if=/dev/$d bs=512 skip=$1 count=$(($2 * 2)) 2>/dev/null | sha256sum)
	want=$(pattern $1 $2 | sha256sum)
	expect_eq "sha256 of sectors $1+$(($2 * 2)) through /dev/$d" "${got%% *}" "${want%% *}"
}

c0=$(cat /sys/block/$d/vbblk/uring_cmds)
s0=$(cat /sys/block/$d/vbblk/flushes)
f0=$(hostcmd blockstats uex1 | sed -n 's/^flush_operations=//p')
vbblk-uring /dev/vbblk/$d > /tmp/ex.out 2> /tmp/ex.err || {
	cat /tmp/ex.out /tmp/ex.err; fail "vbblk-uring /dev/vbblk/$d: exit $?"
}
cat /tmp/ex.out
cat > /tmp/ex.want <<EOT
node: /dev/vbblk/$d
get_id: UEX-1
register: 1 buffer, 65536 bytes
write: sector 2048, 65536 bytes, registered buffer
flush: done
read: sector 2048, 65536 bytes, polled ring, registered buffer
verify: 65536 bytes as written
ok
EOT
cmp -s /tmp/ex.out /tmp/ex.want || { diff /tmp/ex.want /tmp/ex.out; fail "vbblk-uring's output differs"; }
[ ! -s /tmp/ex.err ] || fail "vbblk-uring wrote to stderr: $(cat /tmp/ex.err)"
c1=$(cat /sys/block/$d/vbblk/uring_cmds)
s1=$(cat /sys/block/$d/vbblk/flushes)
f1=$(hostcmd blockstats uex1 | sed -n 's/^flush_operations=//p')
expect_eq "uring_cmds for GET_ID, WRITE, FLUSH, READ" $((c1 - c0)) 4
expect_eq "driver FLUSHes" $((s1 - s0)) 1
[ $((f1 - f0)) -ge 1 ] || fail "the example's FLUSH: the device saw $((f1 - f0)) flushes"
log "ok: the device saw $((f1 - f0)) flush"
check_data 2048 64

# another place and size (the host checks this area)
must vbblk-uring -s 40000 -k 128 /dev/vbblk/$d > /tmp/ex2.out
grep -qx "verify: 131072 bytes as written" /tmp/ex2.out || fail "second run: $(cat /tmp/ex2.out)"
check_data 40000 128

# where it must fail: a read-only disk refuses the WRITE (EROFS), and the
# example says so and exits 1
rc=0
vbblk-uring /dev/vbblk/$dro > /tmp/ro.out 2> /tmp/ro.err || rc=$?
cat /tmp/ro.out /tmp/ro.err
expect_eq "exit status on a read-only disk" $rc 1
grep -qx "vbblk-uring: write: Read-only file system (res -30)" /tmp/ro.err ||
	fail "read-only disk: no EROFS at the write step"
grep -q "^write:" /tmp/ro.out && fail "read-only disk: the write step passed"
log "ok: read-only disk: EROFS at the write step, exit 1"
drv_unload
