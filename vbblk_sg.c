// SPDX-License-Identifier: GPL-2.0
/*
 * SG_IO's buffers and device commands, below the ioctl entry
 * (vbblk_ioctl.c) and the SCSI translation (vbblk_scsi.c): the caller's
 * data copied in and out, sense data, and one virtio command run on a
 * REQ_OP_DRV_* request of the blk-mq queue (the disk's own in request
 * mode, the one beside the bio path in bio mode).
 *
 * The virtio device cannot abort a command, so a command that outlives
 * its timeout is waited for, as virtio_blk always did.
 */
#include <linux/blk-mq.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <scsi/scsi_status.h>

#include "vbblk.h"

/*
 * Largest SG_IO transfer: one page per data segment, less one for a buffer
 * that does not start on a page boundary. Whatever a caller's buffer looks
 * like, it then maps onto the ring or fails cleanly with -EINVAL.
 */
unsigned int vbblk_sg_max_bytes(const struct vbblk *vblk)
{
	unsigned int segs = min(vblk->sg_elems, vblk->scsi_max_segs);

	return max(segs, 2U) * PAGE_SIZE - PAGE_SIZE;
}

/*
 * An iterator over the caller's data buffer, @len bytes at most. @one is
 * import_iovec()'s fast array: a single segment is copied there (since
 * 6.4 always, so it must exist); *@vec is what was allocated, for kfree().
 */
static int vbblk_sg_iter(struct vbblk_sg *sg, int dir, unsigned int len,
			 struct iov_iter *iter, struct iovec *one,
			 struct iovec **vec)
{
	ssize_t ret;

	*vec = NULL;
	if (sg->iovec_count) {
		*vec = one;
		ret = import_iovec(dir, sg->dxferp, sg->iovec_count, 1, vec,
				   iter);
		if (ret < 0)
			return ret;
	} else {
		one->iov_base = sg->dxferp;
		one->iov_len = sg->dxfer_len;
		iov_iter_init(iter, dir, one, 1, sg->dxfer_len);
	}
	iov_iter_truncate(iter, len);
	return 0;
}

/* Emulated data in: copy @len bytes (at most dxfer_len) to the caller. */
int vbblk_sg_copy_out(struct vbblk_sg *sg, const void *buf, unsigned int len)
{
	struct iovec one, *vec;
	struct iov_iter iter;
	size_t done;
	int err;

	len = min(len, sg->dxfer_len);
	if (!len)
		return 0;
	err = vbblk_sg_iter(sg, ITER_DEST, len, &iter, &one, &vec);
	if (err)
		return err;
	done = copy_to_iter(buf, len, &iter);
	kfree(vec);
	if (done != len)
		return -EFAULT;
	sg->resid = sg->dxfer_len - len;
	return 0;
}

/* Emulated data out (parameter lists): @len bytes from the caller. */
int vbblk_sg_copy_in(struct vbblk_sg *sg, void *buf, unsigned int len)
{
	struct iovec one, *vec;
	struct iov_iter iter;
	size_t done;
	int err;

	if (len > sg->dxfer_len)
		return -EINVAL;
	if (!len)
		return 0;
	err = vbblk_sg_iter(sg, ITER_SOURCE, len, &iter, &one, &vec);
	if (err)
		return err;
	done = copy_from_iter(buf, len, &iter);
	kfree(vec);
	return done == len ? 0 : -EFAULT;
}

/*
 * Run one virtio command for SG_IO and wait for it. Data is @len bytes
 * of the caller's buffer (@user_data) or of @kbuf. Returns 0, -EIO for a
 * device error, -EOPNOTSUPP for UNSUPP, or a mapping error.
 */
int vbblk_sg_exec(struct vbblk_sg *sg, u32 type, sector_t sector,
		  void *kbuf, unsigned int len, bool user_data, bool out,
		  struct vbblk_scsi_io *scsi)
{
	struct vbblk *vblk = sg->vblk;
	struct bio *bio = NULL;
	struct request *req;
	blk_status_t st;
	int err = 0, err2;

	req = vbblk_rq_alloc_drv(vblk, out && len, type, sector);
	if (IS_ERR(req))
		return PTR_ERR(req);
	((struct vbblk_cmd *)blk_mq_rq_to_pdu(req))->scsi = scsi;
	req->timeout = sg->timeout;

	if (len && user_data)
		err = blk_rq_map_user_io(req, NULL, sg->dxferp, len, GFP_KERNEL,
					 sg->iovec_count, sg->iovec_count,
					 false, out ? ITER_SOURCE : ITER_DEST);
	else if (len)
		err = vbblk_rq_map_kern(req, kbuf, len, GFP_KERNEL);
	if (err)
		goto out_free;
	bio = req->bio;

	/* The SCSI parts take descriptors too; see vbblk_sg_max_bytes(). */
	if (scsi && blk_rq_nr_phys_segments(req) > vblk->scsi_max_segs) {
		err = -EINVAL;
		goto out_unmap;
	}

	st = blk_execute_rq(req, sg->at_head);
	if (st == BLK_STS_NOTSUPP)
		err = -EOPNOTSUPP;
	else if (st)
		err = -EIO;
out_unmap:
	if (user_data && bio) {
		err2 = blk_rq_unmap_user(bio);
		if (!err)
			err = err2;
	}
out_free:
	blk_mq_free_request(req);
	return err;
}

/* A translated command's device I/O (vbblk_scsi.c). */
int vbblk_sg_dev_io(struct vbblk_sg *sg, u32 type, sector_t sector,
		    void *kbuf, unsigned int len, bool user_data)
{
	bool out = type == VIRTIO_BLK_T_OUT || type == VIRTIO_BLK_T_DISCARD ||
		   type == VIRTIO_BLK_T_WRITE_ZEROES;

	return vbblk_sg_exec(sg, type, sector, kbuf, len, user_data, out,
			     NULL);
}

/* Fixed-format sense data: CHECK CONDITION with @key/@asc/@ascq. */
void vbblk_scsi_set_sense(struct vbblk_sg *sg, u8 key, u8 asc, u8 ascq)
{
	u8 *s = sg->io->sense;

	memset(s, 0, 18);
	s[0] = 0x70;		/* current error, fixed format */
	s[2] = key;
	s[7] = 10;		/* additional sense length */
	s[12] = asc;
	s[13] = ascq;
	sg->sense_len = 18;
	sg->status = SAM_STAT_CHECK_CONDITION;
}
