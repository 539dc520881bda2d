/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * vbblk io_uring passthrough: commands sent to a virtio-blk disk through
 * its character device, /dev/vbblk/<disk> (for example /dev/vbblk/vdb),
 * with IORING_OP_URING_CMD and no block layer in between.
 *
 * The ring must be set up with IORING_SETUP_SQE128: the command is
 * struct vbblk_uring_cmd in the SQE's cmd area, sqe->cmd_op is
 * VBBLK_URING_CMD_IO. IORING_URING_CMD_FIXED in sqe->uring_cmd_flags takes
 * the data from a registered buffer (sqe->buf_index). A ring set up with
 * IORING_SETUP_IOPOLL uses the disk's poll queues when it has them.
 *
 * The completion's res is the number of bytes moved (0 for FLUSH,
 * DISCARD and WRITE ZEROES) or a negative errno:
 *   EINVAL   a malformed command: unknown opcode or flag, reserved bytes
 *            not zero, a size or sector not a multiple of the logical
 *            block size, a buffer not aligned to the DMA alignment
 *            (/sys/block/<disk>/queue/dma_alignment), more data than
 *            max_hw_sectors_kb or more pages than max_segments
 *   ERANGE   sectors past the end of the disk
 *   EBADF    a write-class command on a descriptor opened read-only
 *   EROFS    a write-class command on a read-only disk
 *   EOPNOTSUPP  the device has no such command (DISCARD, WRITE ZEROES), or
 *            it answered VIRTIO_BLK_S_UNSUPP
 *   EIO      the device failed the command
 *   ENODEV   the disk is gone (unplugged or unbound)
 *   EFAULT   a bad buffer address
 */
#ifndef _UAPI_LINUX_VBBLK_H
#define _UAPI_LINUX_VBBLK_H

#include <linux/ioctl.h>
#include <linux/types.h>

enum vbblk_uring_op {
	VBBLK_OP_READ		= 1,	/* data from the device */
	VBBLK_OP_WRITE		= 2,	/* data to the device */
	/*
	 * Makes every write completed before it durable, whichever path it
	 * took (this device, the block device). Completes at once when the
	 * device has no volatile cache.
	 */
	VBBLK_OP_FLUSH		= 3,
	VBBLK_OP_DISCARD	= 4,	/* sector, nr_sectors; no data */
	VBBLK_OP_WRITE_ZEROES	= 5,	/* sector, nr_sectors; no data */
	/* The device's serial number: exactly VBBLK_ID_BYTES into addr. */
	VBBLK_OP_GET_ID		= 6,
};

#define VBBLK_ID_BYTES		20

/* addr is an array of len struct iovec (READ, WRITE) */
#define VBBLK_F_VEC		(1U << 0)
/* WRITE ZEROES: the device may deallocate the range */
#define VBBLK_F_UNMAP		(1U << 1)

struct vbblk_uring_cmd {
	__u8	opcode;		/* enum vbblk_uring_op */
	__u8	rsvd0;
	__u16	ioprio;		/* IOPRIO_PRIO_VALUE(class, level), or 0 */
	__u32	flags;		/* VBBLK_F_* */
	__u64	sector;		/* in 512-byte units */
	__u64	addr;		/* data buffer, or iovec array (VBBLK_F_VEC) */
	__u32	len;		/* bytes, or iovecs (VBBLK_F_VEC) */
	__u32	nr_sectors;	/* DISCARD, WRITE ZEROES */
	__u64	rsvd[2];	/* must be zero */
};

#define VBBLK_URING_CMD_IO	_IOWR('V', 0x40, struct vbblk_uring_cmd)

#endif /* _UAPI_LINUX_VBBLK_H */
