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
 * Like nvme's generic /dev/ngXnY, the node goes around the block device:
 * it writes under a mounted filesystem, ignores exclusive claims on the
 * block device (O_EXCL, a mount, a dm or md member) and bypasses the page
 * cache, which it neither reads nor invalidates. Its permissions are the
 * node's own (the installed udev rule gives it the disk group, 0660).
 *
 * Write-class commands (WRITE, DISCARD, WRITE ZEROES) need a descriptor
 * opened for writing; READ, FLUSH and GET_ID do not.
 *
 * The completion's res is the number of bytes moved (0 for FLUSH,
 * DISCARD and WRITE ZEROES; VBBLK_ID_BYTES for GET_ID) or a negative
 * errno:
 *   EINVAL   a malformed command: unknown opcode or flag, reserved bytes
 *            or a field that does not apply to the opcode not zero, a
 *            READ/WRITE of zero bytes, a DISCARD/WRITE ZEROES of zero
 *            sectors, a GET_ID whose len is not VBBLK_ID_BYTES, a size or
 *            sector not a multiple of the logical block size, a buffer not
 *            aligned to the DMA alignment
 *            (/sys/block/<disk>/queue/dma_alignment), more data than
 *            max_hw_sectors_kb, more pages (a page per 4 KiB, plus one
 *            for a buffer not starting on a page) than max_segments, or
 *            more sectors than max_discard_sectors / max_write_zeroes_sectors
 *            (the node never splits a command: a 1 MiB READ needs 256
 *            pages), an ioprio of no known class; a
 *            ring set up without IORING_SETUP_SQE128
 *   ENOTTY   sqe->cmd_op is not VBBLK_URING_CMD_IO
 *   EPERM    a real-time ioprio without CAP_SYS_NICE or CAP_SYS_ADMIN
 *   ERANGE   sectors past the end of the disk
 *   EBADF    a write-class command on a descriptor opened read-only
 *   EROFS    a write-class command on a read-only disk
 *   EOPNOTSUPP  the device has no such command (DISCARD, WRITE ZEROES), it
 *            answered VIRTIO_BLK_S_UNSUPP, or registered (FIXED) vectored
 *            buffers on a kernel without io_uring_cmd_import_fixed_vec()
 *            (of those tested, 6.1 and 6.12)
 *   EFAULT   a bad buffer address
 *   EIO      the device failed the command, or the driver gave up on a
 *            device that stopped answering (remove_timeout) and ended what
 *            it held
 *   ENODEV   the disk is gone (unplugged or unbound): commands sent after
 *            that; those the device had completed keep their result
 *   ENOMEM   no memory for the command's page tables, or for a command
 *            beyond the node's pool under io_uring's non-blocking issue
 *            (at most four pools' worth, at least 256, per queue)
 *   EINTR    a signal while waiting for a free command, or an
 *            IORING_OP_ASYNC_CANCEL that reached the command waiting
 *            there in io_uring's worker (a suspend is not a signal: the
 *            command waits across it)
 * Never EAGAIN: a command that cannot go at once (a full ring, a suspend)
 * waits in the driver, and its SQE slot is free again as soon as it was
 * submitted.
 */
#ifndef _UAPI_LINUX_VBBLK_H
#define _UAPI_LINUX_VBBLK_H

#include <linux/ioctl.h>
#include <linux/types.h>

enum vbblk_uring_op {
	VBBLK_OP_READ		= 1,	/* data from the device */
	VBBLK_OP_WRITE		= 2,	/* data to the device */
	/*
	 * Makes every write that completed before it was issued durable,
	 * whichever path it took (this node, the block device), as the
	 * block layer's REQ_PREFLUSH does. Data still in the page cache, never
	 * submitted to the device, is not covered (fsync() covers it).
	 * Completes at once when the device has no volatile cache.
	 */
	VBBLK_OP_FLUSH		= 3,
	VBBLK_OP_DISCARD	= 4,	/* sector, nr_sectors; no data */
	VBBLK_OP_WRITE_ZEROES	= 5,	/* sector, nr_sectors; no data */
	/*
	 * The device's serial number: len must be VBBLK_ID_BYTES; that many
	 * bytes go to addr, NUL-padded (not NUL-terminated when the serial
	 * fills them). Never polled.
	 */
	VBBLK_OP_GET_ID		= 6,
};

#define VBBLK_ID_BYTES		20

/* addr is an array of len struct iovec (READ, WRITE) */
#define VBBLK_F_VEC		(1U << 0)
/* WRITE ZEROES: the device may deallocate the range */
#define VBBLK_F_UNMAP		(1U << 1)

/*
 * Fields an opcode does not use must be zero: addr and len for FLUSH,
 * DISCARD and WRITE ZEROES; nr_sectors for READ, WRITE and GET_ID; sector
 * for FLUSH and GET_ID.
 */
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

/* 0xC5: a code no kernel header uses (ioctl-number.rst), unlike 'V' */
#define VBBLK_URING_CMD_IO	_IOWR(0xC5, 0x00, struct vbblk_uring_cmd)

#endif /* _UAPI_LINUX_VBBLK_H */
