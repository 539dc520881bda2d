# identity: serial, geometry, block sizes / topology and capacity match what
# QEMU was given (see cases.py beside it for the disk definitions).
. /tests/lib.sh
drv_load

check_disk() { # serial size lbs pbs iomin ioopt cyls heads secs
	d=$(disk_by_serial "$1")
	log "disk $1 -> $d"
	expect_eq "$d serial" "$(sysblk $d serial)" "$1"
	expect_eq "$d size (sectors)" "$(sysblk $d size)" "$(($2 / 512))"
	expect_eq "$d blockdev --getsize64" "$(blockdev --getsize64 /dev/$d)" "$2"
	expect_eq "$d logical_block_size" "$(sysblk $d queue/logical_block_size)" "$3"
	expect_eq "$d BLKSSZGET" "$(vbtool getss /dev/$d)" "$3"
	expect_eq "$d physical_block_size" "$(sysblk $d queue/physical_block_size)" "$4"
	expect_eq "$d BLKPBSZGET" "$(vbtool getpbsz /dev/$d)" "$4"
	expect_eq "$d minimum_io_size" "$(sysblk $d queue/minimum_io_size)" "$5"
	expect_eq "$d optimal_io_size" "$(sysblk $d queue/optimal_io_size)" "$6"
	expect_eq "$d BLKIOMIN" "$(vbtool getiomin /dev/$d)" "$5"
	expect_eq "$d BLKIOOPT" "$(vbtool getioopt /dev/$d)" "$6"
	# QEMU rounds secs down to a multiple of (logical_block_size / 512)
	secs=$(( $9 / ($3 / 512) * ($3 / 512) ))
	expect_eq "$d getgeo (heads sectors cylinders start)" "$(vbtool getgeo /dev/$d)" "$8 $secs $7 0"
	expect_eq "$d ro" "$(sysblk $d ro)" 0
	# a read at the very end of the device works
	must dd if=/dev/$d of=/dev/null bs=$3 skip=$(($2 / $3 - 1)) count=1 iflag=direct
}

#          serial        size        lbs  pbs  iomin  ioopt   cyls heads secs
check_disk ID-SER-512e   1073741824  512  4096 4096   65536   2080 16    63
check_disk ID-SER-4kn    536870912   4096 4096 8192   1048576 1040 255   63
log "identity ok"
