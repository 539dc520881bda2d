// SPDX-License-Identifier: GPL-2.0
/*
 * SG_IO and the SCSI ioctls sg3-utils probes, on the whole-disk node, in
 * both modes: the top of the SCSI passthrough, called by the block layer.
 *
 * A device that offers legacy VIRTIO_BLK_F_SCSI gets the CDB as
 * VIRTIO_BLK_T_SCSI_CMD. If it has no SCSI device behind it (QEMU with a
 * file backend) it answers UNSUPP, and the command is translated into
 * virtio-blk commands instead (vbblk_scsi.c), as it is for every other
 * device. Either way the data travels through vbblk_sg.c.
 */
#include <linux/blk-mq.h>
#include <linux/capability.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/virtio_byteorder.h>
#include <scsi/scsi.h>
#include <scsi/scsi_proto.h>
#include <scsi/scsi_status.h>
#include <scsi/sg.h>

#include "vbblk.h"

/* What the block layer's SG_IO has always reported; sg3-utils checks it. */
#define VBBLK_SG_VERSION	30527
/* Linux dropped driver bytes from its headers; SG_IO users still read it. */
#define VBBLK_DRIVER_SENSE	0x08

/*
 * Who may send a CDB. Without CAP_SYS_RAWIO the kernel's own SG_IO policy,
 * scsi_cmd_allowed(), opcode by opcode, and never looser: a command may be
 * sent on any open, on a writable open, or not at all. Opcodes it lets
 * through that no disk of ours needs (CD/DVD, ZBC, diagnostics, ...) need
 * CAP_SYS_RAWIO here. Stricter than it in two ways: a command that changes
 * data needs a writable open even with CAP_SYS_RAWIO, as write() would;
 * and UNMAP, which it lets any open send (0x42 is also the CD command READ
 * SUB-CHANNEL), needs a writable open, as WRITE SAME does.
 */
#define VBBLK_SCSI_ANY_OPEN	BIT(0)	/* unprivileged, on any open */
#define VBBLK_SCSI_WRITE_OPEN	BIT(1)	/* unprivileged, on a writable open */
#define VBBLK_SCSI_CHANGES	BIT(2)	/* changes data: writable open always */

static unsigned int vbblk_scsi_access(u8 opcode)
{
	switch (opcode) {
	case TEST_UNIT_READY:
	case REQUEST_SENSE:
	case INQUIRY:
	case MODE_SENSE:
	case MODE_SENSE_10:
	case READ_CAPACITY:
	case SERVICE_ACTION_IN_16:
	case REPORT_LUNS:
	case READ_6:
	case READ_10:
	case READ_12:
	case READ_16:
	case VERIFY:
	case VERIFY_16:
	case LOG_SENSE:
		return VBBLK_SCSI_ANY_OPEN;
	case SYNCHRONIZE_CACHE:		/* there as GPCMD_FLUSH_CACHE */
		return VBBLK_SCSI_WRITE_OPEN;
	case WRITE_6:
	case WRITE_10:
	case WRITE_12:
	case WRITE_16:
	case WRITE_VERIFY:
	case WRITE_VERIFY_12:
	case WRITE_SAME:
	case WRITE_SAME_16:
	case UNMAP:
	case MODE_SELECT:
	case MODE_SELECT_10:
	case FORMAT_UNIT:
		return VBBLK_SCSI_WRITE_OPEN | VBBLK_SCSI_CHANGES;
	case WRITE_VERIFY_16:		/* not listed there */
		return VBBLK_SCSI_CHANGES;
	default:
		/* SYNCHRONIZE CACHE(16), vendor opcodes, ... */
		return 0;
	}
}

/*
 * The CDB as VIRTIO_BLK_T_SCSI_CMD. -EOPNOTSUPP: the device has no SCSI
 * behind it; translate instead.
 */
static int vbblk_sg_passthrough(struct vbblk_sg *sg)
{
	struct vbblk_scsi_io *io = sg->io;
	bool out = sg->dxfer_dir == SG_DXFER_TO_DEV;
	u32 errors;
	int err;

	memset(io->sense, 0, sizeof(io->sense));
	memset(&io->inhdr, 0, sizeof(io->inhdr));
	err = vbblk_sg_exec(sg, VIRTIO_BLK_T_SCSI_CMD, 0, NULL, sg->dxfer_len,
			    true, out, io);
	if (err == -EIO) {
		/* The transport failed, not the command. */
		sg->host_status = DID_ERROR;
		return 0;
	}
	if (err)
		return err;

	/* Legacy only, so the device used the guest's byte order. */
	errors = __virtio32_to_cpu(virtio_legacy_is_little_endian(),
				   io->inhdr.errors);
	sg->status = errors & 0xff;
	sg->msg_status = (errors >> 8) & 0xff;
	sg->host_status = (errors >> 16) & 0xff;
	sg->driver_status = (errors >> 24) & 0xff;
	sg->resid = min(__virtio32_to_cpu(virtio_legacy_is_little_endian(),
					  io->inhdr.residual), sg->dxfer_len);
	sg->sense_len = min_t(u32, VBBLK_SENSE_BYTES,
			      __virtio32_to_cpu(virtio_legacy_is_little_endian(),
						io->inhdr.sense_len));
	return 0;
}

/* Check the header and the caller's right to send this command. */
static int vbblk_sg_prepare(struct vbblk_sg *sg, struct sg_io_hdr *hdr,
			    vbblk_open_mode_t mode, bool *write_cmd)
{
	struct vbblk *vblk = sg->vblk;
	struct iovec one, *vec = &one;
	struct iov_iter iter;
	unsigned int access;
	ssize_t total;
	bool writable;

	if (hdr->interface_id != SG_INTERFACE_ID_ORIG)
		return -EINVAL;
	if (hdr->cmd_len < 6 || hdr->cmd_len > VBBLK_CDB_MAX || !hdr->cmdp)
		return -EINVAL;
	if (hdr->dxfer_len > vbblk_sg_max_bytes(vblk))
		return -EINVAL;
	if (hdr->dxfer_len) {
		switch (hdr->dxfer_direction) {
		case SG_DXFER_TO_DEV:
		case SG_DXFER_FROM_DEV:
		case SG_DXFER_TO_FROM_DEV:
			break;
		default:
			return -EINVAL;
		}
	}
	if (copy_from_user(sg->io->cdb, hdr->cmdp, hdr->cmd_len))
		return -EFAULT;
	sg->io->cdb_len = hdr->cmd_len;

	access = vbblk_scsi_access(sg->io->cdb[0]);
	writable = !!(mode & VBBLK_OPEN_WRITE);
	if ((access & VBBLK_SCSI_CHANGES) && !writable)
		return -EPERM;
	/* capable() last: an LSM then audits no denial for allowed commands */
	if (!(access & VBBLK_SCSI_ANY_OPEN) &&
	    !((access & VBBLK_SCSI_WRITE_OPEN) && writable) &&
	    !capable(CAP_SYS_RAWIO))
		return -EPERM;
	*write_cmd = access & VBBLK_SCSI_CHANGES;

	sg->dxferp = hdr->dxferp;
	sg->dxfer_len = hdr->dxfer_len;
	/* SG_DXFER_TO_FROM_DEV is a read into a buffer that was copied in. */
	sg->dxfer_dir = hdr->dxfer_len ? hdr->dxfer_direction : SG_DXFER_NONE;
	if (sg->dxfer_dir == SG_DXFER_TO_FROM_DEV)
		sg->dxfer_dir = SG_DXFER_FROM_DEV;
	sg->at_head = hdr->flags & SG_FLAG_Q_AT_HEAD;

	sg->timeout = msecs_to_jiffies(hdr->timeout);
	if (!sg->timeout)
		sg->timeout = READ_ONCE(vblk->sg_timeout);
	if (!sg->timeout)
		sg->timeout = BLK_DEFAULT_SG_TIMEOUT;
	sg->timeout = max_t(unsigned int, sg->timeout, BLK_MIN_SG_TIMEOUT);

	/* With an iovec the shorter of it and dxfer_len is the buffer. */
	if (hdr->iovec_count && sg->dxfer_len) {
		total = import_iovec(ITER_DEST, hdr->dxferp, hdr->iovec_count,
				     1, &vec, &iter);
		if (total < 0)
			return total;
		kfree(vec);
		sg->iovec_count = hdr->iovec_count;
		sg->dxfer_len = min_t(size_t, sg->dxfer_len, total);
		if (!sg->dxfer_len)
			sg->dxfer_dir = SG_DXFER_NONE;
	}
	return 0;
}

static int vbblk_sg_io(struct block_device *bdev, vbblk_open_mode_t mode,
		       struct sg_io_hdr __user *uhdr)
{
	struct vbblk *vblk = bdev->bd_disk->private_data;
	struct vbblk_sg sg = { .vblk = vblk };
	struct sg_io_hdr hdr;
	unsigned long start;
	bool write_cmd;
	int err;

	if (copy_from_user(&hdr, uhdr, sizeof(hdr)))
		return -EFAULT;
	sg.io = kzalloc(sizeof(*sg.io), GFP_KERNEL);
	if (!sg.io)
		return -ENOMEM;
	err = vbblk_sg_prepare(&sg, &hdr, mode, &write_cmd);
	if (err)
		goto out;

	sg.read_only = bdev_read_only(bdev);
	start = jiffies;
	if (write_cmd && sg.read_only) {
		/* As a write-protected disk answers; nothing is sent. */
		vbblk_scsi_set_sense(&sg, DATA_PROTECT, 0x27, 0x00);
		err = 0;
	} else {
		err = -EOPNOTSUPP;
		if (vblk->scsi_passthrough)
			err = vbblk_sg_passthrough(&sg);
		if (err == -EOPNOTSUPP) {
			sg.writeback = vbblk_write_cache_on(vblk);
			err = vbblk_scsi_translate(&sg);
		}
	}
	if (err)
		goto out;

	hdr.duration = jiffies_to_msecs(jiffies - start);
	hdr.status = sg.status;
	hdr.masked_status = (sg.status >> 1) & 0x7f;
	hdr.msg_status = sg.msg_status;
	hdr.host_status = sg.host_status;
	hdr.driver_status = sg.driver_status;
	if (sg.status == SAM_STAT_CHECK_CONDITION && sg.sense_len)
		hdr.driver_status |= VBBLK_DRIVER_SENSE;
	hdr.info = 0;
	if (hdr.masked_status || hdr.host_status || hdr.driver_status)
		hdr.info |= SG_INFO_CHECK;
	hdr.resid = sg.resid;
	hdr.sb_len_wr = 0;
	if (sg.sense_len && hdr.sbp && hdr.mx_sb_len) {
		unsigned int n = min_t(unsigned int, hdr.mx_sb_len,
				       sg.sense_len);

		if (copy_to_user(hdr.sbp, sg.io->sense, n)) {
			err = -EFAULT;
			goto out;
		}
		hdr.sb_len_wr = n;
	}
	if (copy_to_user(uhdr, &hdr, sizeof(hdr)))
		err = -EFAULT;
out:
	kfree(sg.io);
	return err;
}

int vbblk_ioctl(struct block_device *bdev, vbblk_open_mode_t mode,
		unsigned int cmd, unsigned long arg)
{
	struct vbblk *vblk = bdev->bd_disk->private_data;
	void __user *argp = (void __user *)arg;
	int val;

	/* A SCSI command addresses the whole disk, not the partition. */
	if (bdev_is_partition(bdev) && !capable(CAP_SYS_RAWIO))
		return -ENOTTY;

	switch (cmd) {
	case SG_IO:
		return vbblk_sg_io(bdev, mode, argp);
	case SG_GET_VERSION_NUM:
		return put_user(VBBLK_SG_VERSION, (int __user *)argp);
	case SG_EMULATED_HOST:
		return put_user(1, (int __user *)argp);
	case SG_GET_TIMEOUT:
		/* The value is the return value, in USER_HZ, as sg does. */
		return jiffies_to_clock_t(READ_ONCE(vblk->sg_timeout));
	case SG_SET_TIMEOUT:
		if (get_user(val, (int __user *)argp))
			return -EFAULT;
		if (val < 0)
			return -EINVAL;
		WRITE_ONCE(vblk->sg_timeout, clock_t_to_jiffies(val));
		return 0;
	case SG_GET_RESERVED_SIZE:
		return put_user(READ_ONCE(vblk->sg_reserved),
				(int __user *)argp);
	case SG_SET_RESERVED_SIZE:
		if (get_user(val, (int __user *)argp))
			return -EFAULT;
		if (val < 0)
			return -EINVAL;
		WRITE_ONCE(vblk->sg_reserved,
			   min_t(unsigned int, val, vbblk_sg_max_bytes(vblk)));
		return 0;
	case SCSI_IOCTL_GET_IDLUN:
		/* host = disk index; channel, target and LUN 0 */
		if (put_user((vblk->index & 0xff) << 24,
			     (u32 __user *)argp) ||
		    put_user(vblk->index, (u32 __user *)argp + 1))
			return -EFAULT;
		return 0;
	case SCSI_IOCTL_GET_BUS_NUMBER:
		return put_user(vblk->index, (int __user *)argp);
	default:
		return -ENOTTY;
	}
}
