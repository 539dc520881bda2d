// SPDX-License-Identifier: GPL-2.0
/*
 * Command building, shared by every path, above the ring: the header, the
 * data scatterlist of a bio, discard/write-zeroes ranges, the bio-by-bio
 * retry of a failed merged command, and a FLUSH waited for.
 */
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>

#include "vbblk.h"
#include "vbblk_trace.h"
#include "virtio_ring_split.h"

/*
 * Once per command, when it is allocated: its completion callback and the
 * scatterlist entries of its header and status byte, which never move, so
 * that queueing it builds only the data's.
 */
void vbblk_iohdr_setup(struct vbblk_iohdr *hdr,
		       void (*end)(struct vbblk_iohdr *hdr))
{
	/* The device is given physical addresses: no vmalloc memory. */
	WARN_ON_ONCE(is_vmalloc_addr(hdr));
	hdr->end = end;
	sg_init_one(&hdr->out_sg, &hdr->out, sizeof(hdr->out));
	sg_init_one(&hdr->status_sg, &hdr->status, sizeof(hdr->status));
	hdr->sgs[0] = &hdr->out_sg;
}

/*
 * Scatterlist entries for one bio, cut exactly as the block layer counts
 * segments when it splits (bio_split_to_limits): each multi-page bvec in
 * pieces of at most max_segment_size that do not cross the segment
 * boundary. So a split bio never needs more entries than max_segments.
 * With @sg NULL, only count. @sg's table must end where the entries do.
 */
unsigned int vbblk_bio_map(struct request_queue *q, struct bio *bio,
			   struct scatterlist *sg)
{
	unsigned long mask = queue_segment_boundary(q);
	unsigned int max_seg = queue_max_segment_size(q);
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int n = 0;

	if (unlikely(!bio->bi_iter.bi_size))
		return 0;
	/*
	 * Most bios are one contiguous piece within the limits: one entry,
	 * without the iterator, which costs more than the rest of the map.
	 */
	bv = mp_bvec_iter_bvec(bio->bi_io_vec, bio->bi_iter);
	if (bv.bv_len == bio->bi_iter.bi_size && bv.bv_len <= max_seg) {
		phys_addr_t pa = page_to_phys(bv.bv_page) + bv.bv_offset;

		if ((pa & mask) + bv.bv_len - 1 <= mask) {
			if (sg)
				sg_set_page(sg, bv.bv_page + (bv.bv_offset >> PAGE_SHIFT),
					    bv.bv_len, offset_in_page(bv.bv_offset));
			return 1;
		}
	}

	bio_for_each_bvec(bv, bio, iter) {
		struct page *page = bv.bv_page;
		unsigned int off = bv.bv_offset, left = bv.bv_len;

		while (left) {
			phys_addr_t pa = page_to_phys(page) + off;
			unsigned int len = min_t(unsigned long, left,
						 min_t(unsigned long, max_seg,
						       mask - (pa & mask) + 1));

			/* sg_next(): the table may be chained (request path). */
			if (sg) {
				sg_set_page(sg, page + (off >> PAGE_SHIFT), len,
					    offset_in_page(off));
				sg = sg_next(sg);
			}
			n++;
			off += len;
			left -= len;
		}
	}
	return n;
}

/*
 * A merged read or write carries bios of several submitters; if it fails,
 * each bio is sent again on its own, so that only the bios on bad sectors
 * fail, as if they had never been merged. Both paths keep the bios still
 * to send in a chain whose head goes next (a bio command's ->bio, a
 * request's ->bio), from @sector. Returns true if the retry starts now.
 */
bool vbblk_retry_begin(struct vbblk_retry *r, struct vbblk *vblk,
		       blk_status_t st, bool merged, sector_t sector)
{
	if (likely(st != BLK_STS_IOERR) || !merged || r->active ||
	    READ_ONCE(vblk->broken))
		return false;
	vbblk_stat_inc(vblk, VBBLK_STAT_RETRIED);
	trace_vbblk_retry(vblk, sector, blk_status_to_errno(st));
	r->active = true;
	return true;
}

/* A command whose issuer sleeps until it comes back. */
struct vbblk_sync_cmd {
	struct vbblk_iohdr hdr;
	struct completion done;
};

static void vbblk_sync_end(struct vbblk_iohdr *hdr)
{
	complete(&container_of(hdr, struct vbblk_sync_cmd, hdr)->done);
}

/*
 * One device FLUSH on @vq, waited for, outside either I/O path: for a
 * caller that has quiesced the disk's queue and must still reach the
 * device (cache_type). A full ring is waited out: nothing else waits on us.
 */
int vbblk_flush_sync(struct vbblk_vq *vq)
{
	struct vbblk_sync_cmd *cmd;
	unsigned long flags;
	unsigned int notify;
	int err;

	/*
	 * kmalloc: the device writes the status byte. NOIO: the caller has
	 * frozen the queue that reclaim would write back into.
	 */
	cmd = kzalloc(sizeof(*cmd), GFP_NOIO);
	if (!cmd)
		return -ENOMEM;
	vbblk_iohdr_setup(&cmd->hdr, vbblk_sync_end);
	init_completion(&cmd->done);
	vbblk_iohdr_init(vq->vblk, &cmd->hdr, VIRTIO_BLK_T_FLUSH, 0);
	for (;;) {
		spin_lock_irqsave(&vq->lock, flags);
		err = vbblk_vq_add(vq, &cmd->hdr, VIRTIO_BLK_T_FLUSH, NULL,
				   false);
		notify = err ? 0 : vbblk_vq_kick_prepare(vq);
		spin_unlock_irqrestore(&vq->lock, flags);
		if (err != -ENOSPC)
			break;
		usleep_range(100, 1000);
	}
	if (notify)
		vbblk_vq_notify(vq, notify);
	if (!err) {
		wait_for_completion(&cmd->done);
		err = blk_status_to_errno(vbblk_status(&cmd->hdr));
	}
	kfree(cmd);
	return err;
}
