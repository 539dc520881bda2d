# sg_io: SCSI commands through SG_IO with sg3-utils (disks: cases.py beside it).
#   SGIO-512E  64M, 512/4096, discard + write-zeroes, config-wce: translation
#   SGIO-4KN   32M, 4096/4096, legacy scsi=on: passthrough, answered UNSUPP
#   SGIO-RO    8M read-only (the host checks the file is unchanged)
#   SGIO-FUZZ  16M, for sgfuzz
. /tests/lib.sh
drv_load

D=$(disk_by_serial SGIO-512E)
K=$(disk_by_serial SGIO-4KN)
R=$(disk_by_serial SGIO-RO)
F=$(disk_by_serial SGIO-FUZZ)
log "disks: 512e=$D 4kn=$K ro=$R fuzz=$F"

# sgrun CMD...: run a tool, keep its output in $OUT, fail if it fails
sgrun() {
	OUT=$("$@" 2>&1) || { echo "$OUT"; fail "failed (rc=$?): $*"; }
}
# has WHAT PATTERN: $OUT contains PATTERN (a fixed string)
has() {
	case "$OUT" in *"$2"*) log "ok: $1" ;; *) echo "$OUT"; fail "$1: no '$2'" ;; esac
}
unsupp() { hostcmd unsupp | sed -n "s/^$1=//p"; }
flushes() { hostcmd blockstats $1 | sed -n 's/^flush_operations=//p'; }
dropcache() { blockdev --flushbufs /dev/$1; echo 3 > /proc/sys/vm/drop_caches; }

# ---- identity: what QEMU was given, read through SCSI ----
check_ident() { # dev serial lbs pbs-exponent blocks iomin ioopt
	d=$1 lbs=$3
	sgrun sg_turs /dev/$d
	sgrun sg_inq /dev/$d
	has "$d inquiry vendor" "Vendor identification: VIRTIO"
	has "$d inquiry type" "Peripheral device type: disk"
	has "$d inquiry serial" "Unit serial number: $2"
	sgrun sg_vpd -p sn /dev/$d
	has "$d VPD 80" "Unit serial number: $2"
	sgrun sg_vpd -p di /dev/$d
	has "$d VPD 83" "vendor specific: $2"
	sgrun sg_readcap -l /dev/$d
	has "$d READ CAPACITY(16) last LBA" "Last LBA=$(($5 - 1)) "
	has "$d READ CAPACITY(16) blocks" "Number of logical blocks=$5"
	has "$d READ CAPACITY(16) block size" "Logical block length=$lbs bytes"
	has "$d READ CAPACITY(16) physical" "Logical blocks per physical block exponent=$4"
	sgrun sg_readcap /dev/$d
	has "$d READ CAPACITY(10)" "Number of logical blocks=$5"
	sgrun sg_vpd -p bl /dev/$d
	has "$d VPD B0 granularity" "Optimal transfer length granularity: $(($6 / lbs)) blocks"
	has "$d VPD B0 optimal" "Optimal transfer length: $(($7 / lbs)) blocks"
	segs=$(sysblk $d queue/max_segments)
	has "$d VPD B0 max transfer" "Maximum transfer length: $(((segs - 1) * 4096 / lbs)) blocks"
	dmb=$(sysblk $d queue/discard_max_bytes)
	has "$d VPD B0 max unmap" "Maximum unmap LBA count: $((dmb / lbs))"
	has "$d VPD B0 unmap descriptors" \
		"Maximum unmap block descriptor count: $(sysblk $d queue/max_discard_segments)"
	sgrun sg_vpd -p lbpv /dev/$d
	has "$d VPD B2 UNMAP" "Unmap command supported (LBPU): 1"
	sgrun sg_luns /dev/$d
	has "$d REPORT LUNS" "Lun list length = 8"
	sgrun sg_requests /dev/$d
	has "$d REQUEST SENSE" "Sense key: No Sense"
}
check_ident $D SGIO-512E 512 3 131072 4096 65536
# QEMU gives a 4096-byte disk min_io 4096 and no optimal size
check_ident $K SGIO-4KN 4096 0 8192 4096 0

# VPD B1 follows the disk's rotational setting
echo 0 > /sys/block/$D/queue/rotational
sgrun sg_vpd -p bdc /dev/$D
has "VPD B1 non-rotational" "Non-rotating medium"
echo 1 > /sys/block/$D/queue/rotational
sgrun sg_vpd -p bdc /dev/$D
case "$OUT" in *Non-rotating*) echo "$OUT"; fail "VPD B1 says non-rotating for a rotational disk" ;; esac

# caching mode page: WCE is the cache_type, changeable with config-wce
sgrun sg_modes -p ca /dev/$D
has "MODE SENSE(10) caching WCE=1" "08 12 04"
has "MODE SENSE DPO/FUA" "DpoFua=1"
sgrun sg_modes -6 -p ca /dev/$D
has "MODE SENSE(6) caching WCE=1" "08 12 04"
sgrun sg_modes -c 1 -p ca /dev/$D
has "MODE SENSE changeable WCE" "08 12 04"
echo "write through" > /sys/block/$D/cache_type
sgrun sg_modes -p ca /dev/$D
has "MODE SENSE caching WCE=0 after cache_type write through" "08 12 00"
echo "write back" > /sys/block/$D/cache_type

# ---- unsupported and invalid commands: sense, not errors ----
OUT=$(sg_raw /dev/$D c0 00 00 00 00 00 2>&1) && fail "vendor opcode succeeded"
has "unknown opcode sense" "Invalid command operation code"
OUT=$(sg_raw /dev/$D 41 00 00 00 00 00 00 00 01 00 2>&1) && fail "WRITE SAME(10) succeeded"
has "WRITE SAME(10) not in the subset" "Invalid command operation code"
OUT=$(sg_raw -r 512 /dev/$D 28 00 00 02 00 00 00 00 01 00 2>&1) && fail "READ past the end succeeded"
has "READ(10) past the end" "Logical block address out of range"

# ---- data: sg_dd round trips against ordinary reads and writes ----
roundtrip() { # dev lbs
	d=$1 lbs=$2 n=$((4194304 / $2))
	must vbtool fill /dev/$d 0 4M 11
	sgrun sg_dd if=/dev/$d of=/tmp/sg.rd bs=$lbs count=$n blk_sgio=1
	must dd if=/dev/$d of=/tmp/dd.rd bs=1M count=4 2>/dev/null
	cmp /tmp/sg.rd /tmp/dd.rd || fail "$d: sg_dd READ(10) differs from read()"
	log "ok: $d sg_dd READ(10) = read()"
	sgrun sg_dd if=/dev/$d of=/tmp/sg16.rd bs=$lbs count=$n blk_sgio=1 cdbsz=16
	cmp /tmp/sg.rd /tmp/sg16.rd || fail "$d: sg_dd READ(16) differs"
	log "ok: $d sg_dd READ(16) = read()"
	# write what was read 8M further on, (10) then (16) with FUA
	sgrun sg_dd if=/tmp/sg.rd of=/dev/$d seek=$((8388608 / lbs)) bs=$lbs count=$((n / 2)) blk_sgio=1
	sgrun sg_dd if=/tmp/sg.rd of=/dev/$d skip=$((n / 2)) seek=$((8388608 / lbs + n / 2)) bs=$lbs \
		count=$((n / 2)) blk_sgio=1 cdbsz=16 fua=1
	dropcache $d
	must dd if=/dev/$d of=/tmp/dd.wr bs=1M skip=8 count=4 2>/dev/null
	cmp /tmp/sg.rd /tmp/dd.wr || fail "$d: sg_dd WRITE(10)/(16) data differs on re-read"
	log "ok: $d sg_dd WRITE(10)/(16) read back"
	must vbtool check /dev/$d 0 4M 11
}
roundtrip $D 512
roundtrip $K 4096

# FUA writes and SYNCHRONIZE CACHE reach the device as flushes
f0=$(flushes sg512e)
sgrun sg_dd if=/tmp/sg.rd of=/dev/$D seek=$((12582912 / 512)) bs=512 count=64 blk_sgio=1 cdbsz=16 fua=1
f1=$(flushes sg512e)
[ "$f1" -ge $((f0 + 1)) ] || fail "FUA WRITE(16) sent no flush ($f0 -> $f1)"
sgrun sg_sync /dev/$D
f2=$(flushes sg512e)
[ "$f2" -ge $((f1 + 1)) ] || fail "SYNCHRONIZE CACHE sent no flush ($f1 -> $f2)"
sgrun sg_sync --16 /dev/$D
f3=$(flushes sg512e)
[ "$f3" -ge $((f2 + 1)) ] || fail "SYNCHRONIZE CACHE(16) sent no flush ($f2 -> $f3)"
log "ok: flushes FUA $f0->$f1, sync $f1->$f2, sync16 $f2->$f3"

# ---- UNMAP and WRITE SAME(16) ----
# freed WHAT MIB CMD...: CMD frees [MIB, MIB + 4M) of the backing file, which
# then reads zero while the next 4M keep their data
freed() {
	what=$1 at=$2
	shift 2
	a0=$(hostcmd alloc sg512e)
	sgrun "$@"
	a1=$(hostcmd alloc sg512e)
	[ "$a1" -le $((a0 - (3 << 20))) ] || fail "$what did not free the backing file ($a0 -> $a1)"
	dropcache $D
	must vbtool iszero /dev/$D ${at}M 4M
	must vbtool check /dev/$D $((at + 4))M 4M 12
	log "ok: $what freed $((a0 - a1)) bytes and reads zero"
}
must vbtool fill /dev/$D 16M 16M 12
freed UNMAP 16 sg_unmap --lba=$((16 * 2048)) --num=$((4 * 2048)) /dev/$D
freed "WRITE SAME(16) UNMAP" 20 sg_write_same --16 --unmap --lba=$((20 * 2048)) --num=$((4 * 2048)) /dev/$D

# a non-zero block is written over the range, not offloaded
dd if=/tmp/sg.rd of=/tmp/blk bs=512 count=1 skip=7 2>/dev/null
sgrun sg_write_same --16 --in=/tmp/blk --lba=$((24 * 2048)) --num=300 /dev/$D
i=0; : > /tmp/exp
while [ $i -lt 300 ]; do cat /tmp/blk >> /tmp/exp; i=$((i + 1)); done
dropcache $D
must dd if=/dev/$D of=/tmp/got bs=512 skip=$((24 * 2048)) count=300 2>/dev/null
cmp /tmp/exp /tmp/got || fail "WRITE SAME(16) pattern not on the disk"
must vbtool check /dev/$D $((24 * 1048576 + 300 * 512)) 4M 12
log "ok: WRITE SAME(16) pattern x300"

# the 4Kn disk: UNMAP in 4096-byte blocks
must vbtool fill /dev/$K 16M 8M 13
sgrun sg_unmap --lba=$((16 * 256)) --num=$((4 * 256)) /dev/$K
dropcache $K
must vbtool iszero /dev/$K 16M 4M
must vbtool check /dev/$K 20M 4M 13
log "ok: 4Kn UNMAP"

# ---- passthrough: only the scsi=on disk is asked, and its UNSUPP falls back ----
u0=$(unsupp total)
sgrun sg_turs /dev/$D
sgrun sg_inq /dev/$D
sgrun sg_readcap -l /dev/$D
u1=$(unsupp total)
[ "$u1" = "$u0" ] || fail "a disk without VIRTIO_BLK_F_SCSI was sent SCSI commands ($u0 -> $u1)"
sgrun sg_turs /dev/$K
sgrun sg_inq /dev/$K
sgrun sg_readcap -l /dev/$K
has "4Kn READ CAPACITY after UNSUPP" "Logical block length=4096 bytes"
u2=$(unsupp total)
[ "$u2" -ge $((u1 + 3)) ] || fail "the scsi=on disk saw $((u2 - u1)) SCSI commands, expected >= 3"
[ "$(unsupp devices)" = 1 ] || fail "UNSUPP answers from more than one device"
log "ok: passthrough: $((u2 - u1)) commands answered UNSUPP and translated"

# ---- read-only disk: no raw write gets through ----
sgrun sg_inq /dev/$R
sgrun sg_modes -p ca /dev/$R
has "read-only MODE SENSE WP" "WP=1"
OUT=$(sg_raw -s 512 -i /tmp/blk /dev/$R 2a 00 00 00 00 00 00 00 01 00 2>&1) && fail "WRITE(10) to a read-only disk succeeded"
has "read-only WRITE(10)" "Sense key: Data Protect"
OUT=$(sg_dd if=/tmp/blk of=/dev/$R bs=512 count=1 blk_sgio=1 2>&1) && fail "sg_dd to a read-only disk succeeded"
OUT=$(sg_unmap --lba=0 --num=8 /dev/$R 2>&1) && fail "UNMAP on a read-only disk succeeded"
OUT=$(sg_write_same --16 --unmap --lba=0 --num=8 /dev/$R 2>&1) && fail "WRITE SAME on a read-only disk succeeded"
log "ok: read-only disk refuses WRITE, UNMAP, WRITE SAME"

# ---- an unprivileged user: scsi_cmd_allowed()'s classes (or stricter) ----
nobody() { /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
OUT=$(nobody grep CapEff /proc/self/status)
has "unprivileged user has no capabilities" "0000000000000000"
chmod 666 /dev/$D
OUT=$(nobody sg_inq /dev/$D 2>&1) || { echo "$OUT"; fail "unprivileged INQUIRY failed"; }
has "unprivileged INQUIRY" "Vendor identification: VIRTIO"
OUT=$(nobody sg_raw /dev/$D c0 00 00 00 00 00 2>&1) &&
	fail "unprivileged vendor opcode succeeded"
has "unprivileged vendor opcode refused" "not permitted"
# perm NAME RO-ANSWER RW-ANSWER DATA CDB...: one command as nobody on a
# read-only open of a node it may only read, then on a read-write open of a
# node it may write ("ok" or an errno name); mismatches are counted in $bad
bad=0
perm() {
	name=$1 want_ro=$2 want_rw=$3 b0=$bad
	shift 3
	for open in ro rw; do
		if [ $open = ro ]; then chmod 644 /dev/$D; want=$want_ro
		else chmod 666 /dev/$D; want=$want_rw; fi
		got=$(nobody sgfuzz /dev/$D send $open "$@" 2>&1)
		[ "$got" = "$want" ] && continue
		log "WRONG: unprivileged $name, $open open: '$got', want '$want'"
		bad=$((bad + 1))
	done
	if [ $bad = $b0 ]; then log "ok: unprivileged $name: ro $want_ro, rw $want_rw"; fi
}
W=$((48 * 2048))	# an unused 512-byte block at 48M
W=$(printf '%02x %02x %02x %02x' $((W >> 24)) $((W >> 16 & 255)) $((W >> 8 & 255)) $((W & 255)))
# read class: any open
perm INQUIRY ok ok in36 12 00 00 00 24 00
perm "READ(10)" ok ok in512 28 00 $W 00 00 01 00
perm "READ CAPACITY(10)" ok ok in8 25 00 00 00 00 00 00 00 00 00
# write class: a read-write open (UNMAP too, with an empty parameter list)
perm "WRITE(10)" EPERM ok out512 2a 00 $W 00 00 01 00
perm "SYNCHRONIZE CACHE(10)" EPERM ok none 35 00 00 00 00 00 00 00 00 00
perm UNMAP EPERM ok none 42 00 00 00 00 00 00 00 00 00
# CAP_SYS_RAWIO only
perm "SYNCHRONIZE CACHE(16)" EPERM EPERM none 91 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
perm "WRITE AND VERIFY(16)" EPERM EPERM out512 8e 00 00 00 00 00 $W 00 00 00 01 00 00
perm "vendor opcode" EPERM EPERM none c0 00 00 00 00 00
chmod 660 /dev/$D
[ $bad = 0 ] || fail "$bad unprivileged SG_IO command(s) got the wrong answer"

# ---- fixed error cases, then random SG_IO ----
must sgfuzz /dev/$F check
must sgfuzz /dev/$K check
seed=$(date +%s)
log "fuzz seed $seed"
must sgfuzz /dev/$F 3000 $seed
must sgfuzz /dev/$K 500 $((seed + 1))
# still serves I/O and commands afterwards
must vbtool fill /dev/$F 0 1M 14
must vbtool check /dev/$F 0 1M 14
sgrun sg_inq /dev/$F
has "INQUIRY after fuzzing" "Vendor identification: VIRTIO"

drv_unload
log "sg_io ok"
