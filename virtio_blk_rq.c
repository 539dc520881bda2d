// SPDX-License-Identifier: GPL-2.0
/*
 * The request path: a blk-mq queue whose hardware contexts map one to one
 * onto virtqueues. It serves the disk in request mode and carries
 * driver-private commands (GET_ID, SG_IO) in every mode. Below it:
 * command building (vbblk_cmd.c) and the ring (virtio_ring_split.c).
 */
#include <linux/slab.h>

#include "vbblk.h"
#include "virtio_ring_split.h"

static inline struct vbblk_vq *vbblk_hctx_vq(struct blk_mq_hw_ctx *hctx)
{
	struct vbblk *vblk = hctx->queue->queuedata;

	return &vblk->vqs[hctx->queue_num];
}

/*
 * Discard, write-zeroes and secure erase carry their ranges as a data
 * payload, one range per merged bio. The payload rides in the request's
 * special_vec, so blk_rq_map_sg() maps it like any data segment.
 */
static blk_status_t vbblk_rq_setup_ranges(struct vbblk *vblk,
					  struct request *req)
{
	struct virtio_blk_discard_write_zeroes *range;
	unsigned short n = blk_rq_nr_discard_segments(req);
	u32 flags = vbblk_range_flags(vblk, req->cmd_flags);
	unsigned short i = 0;
	struct bio *bio;

	range = kmalloc_array(n, sizeof(*range), GFP_ATOMIC);
	if (!range)
		return BLK_STS_RESOURCE;

	/*
	 * A single range may be the request itself (write-zeroes, or a
	 * discard built from one bio that was never merged).
	 */
	if (n == 1) {
		vbblk_range_set(range, blk_rq_pos(req), blk_rq_sectors(req),
				flags);
	} else {
		__rq_for_each_bio(bio, req) {
			if (WARN_ON_ONCE(i == n))
				break;
			vbblk_range_set(&range[i++], bio->bi_iter.bi_sector,
					bio_sectors(bio), flags);
		}
	}

	bvec_set_page(&req->special_vec, virt_to_page(range),
		      sizeof(*range) * n, offset_in_page(range));
	req->rq_flags |= RQF_SPECIAL_PAYLOAD;
	return BLK_STS_OK;
}

static void vbblk_rq_free_ranges(struct request *req)
{
	if (req->rq_flags & RQF_SPECIAL_PAYLOAD) {
		kfree(bvec_virt(&req->special_vec));
		req->rq_flags &= ~RQF_SPECIAL_PAYLOAD;
	}
}

static void vbblk_rq_unmap(struct request *req, struct vbblk_cmd *cmd)
{
	if (blk_rq_nr_phys_segments(req))
		sg_free_table_chained(&cmd->sg_table, VBBLK_INLINE_SG);
	vbblk_rq_free_ranges(req);
}

/* Build the header and scatterlist; *nents gets the data sg entry count. */
static blk_status_t vbblk_rq_setup(struct vbblk *vblk, struct request *req,
				   struct vbblk_cmd *cmd, int *nents)
{
	sector_t sector = blk_rq_pos(req);
	unsigned int segs;
	blk_status_t st;
	u32 type;

	if (unlikely(vblk->read_only && op_is_write(req_op(req))))
		return BLK_STS_IOERR;
	if (blk_rq_is_passthrough(req)) {
		type = cmd->drv_type;
		sector = cmd->drv_sector;
	} else {
		type = vbblk_op_type(req_op(req));
		if (type == VBBLK_T_NONE)
			return BLK_STS_NOTSUPP;
	}
	if (type == VIRTIO_BLK_T_FLUSH)
		sector = 0;
	/* Retrying a failed merged request: only its first remaining bio. */
	if (unlikely(cmd->retry.active))
		sector = req->bio->bi_iter.bi_sector;

	vbblk_iohdr_init(vblk, &cmd->hdr, type, sector);

	/* SG_IO builds its own range payload and sends it as data. */
	if (!blk_rq_is_passthrough(req) &&
	    (type == VIRTIO_BLK_T_DISCARD || type == VIRTIO_BLK_T_WRITE_ZEROES ||
	     type == VIRTIO_BLK_T_SECURE_ERASE)) {
		st = vbblk_rq_setup_ranges(vblk, req);
		if (st)
			return st;
	}

	*nents = 0;
	segs = cmd->retry.active ? vbblk_bio_map(req->q, req->bio, NULL) :
				   blk_rq_nr_phys_segments(req);
	if (!segs)
		return BLK_STS_OK;

	cmd->sg_table.sgl = cmd->sg;
	if (sg_alloc_table_chained(&cmd->sg_table, segs, cmd->sg_table.sgl,
				   VBBLK_INLINE_SG)) {
		vbblk_rq_free_ranges(req);
		return BLK_STS_RESOURCE;
	}
	if (unlikely(cmd->retry.active))
		*nents = vbblk_bio_map(req->q, req->bio, cmd->sg_table.sgl);
	else
		*nents = vbblk_rq_map_sg(req, cmd->sg_table.sgl);
	return BLK_STS_OK;
}

/* A reap freed room on a ring that refused us: restart what we stopped. */
static void vbblk_rq_room(struct vbblk_vq *vq)
{
	blk_mq_start_stopped_hw_queues(vq->vblk->rq_queue, true);
}

static blk_status_t vbblk_queue_rq(struct blk_mq_hw_ctx *hctx,
				   const struct blk_mq_queue_data *bd)
{
	struct vbblk *vblk = hctx->queue->queuedata;
	struct vbblk_vq *vq = vbblk_hctx_vq(hctx);
	struct request *req = bd->rq;
	struct vbblk_cmd *cmd = blk_mq_rq_to_pdu(req);
	unsigned long flags;
	unsigned int notify;
	blk_status_t st;
	int nents, err;

	if (unlikely(READ_ONCE(vblk->broken)))
		return BLK_STS_IOERR;
	st = vbblk_rq_setup(vblk, req, cmd, &nents);
	if (unlikely(st))
		return st;

	blk_mq_start_request(req);

	spin_lock_irqsave(&vq->lock, flags);
	if (unlikely(blk_rq_is_passthrough(req) && cmd->scsi))
		err = vbblk_vq_add_scsi(vq, &cmd->hdr, cmd->scsi,
					nents ? cmd->sg_table.sgl : NULL,
					op_is_write(req_op(req)));
	else
		err = vbblk_vq_add(vq, &cmd->hdr,
				   vbblk_iohdr_type(vblk, &cmd->hdr),
				   nents ? cmd->sg_table.sgl : NULL,
				   op_is_write(req_op(req)));
	if (unlikely(err)) {
		/*
		 * Ring full: earlier requests of this dispatch may not have
		 * been notified yet, so kick now. Stopping the queue and
		 * asking for room under the lock pairs with the reap that
		 * frees it: a full ring always has a completion coming, and
		 * vbblk_rq_room() restarts us after it.
		 */
		notify = vbblk_vq_kick_prepare(vq);
		/*
		 * An empty ring refuses only a command that needs indirect
		 * descriptors it could not allocate (GFP_ATOMIC): no
		 * completion will restart us, so blk-mq retries after a delay.
		 */
		if (err == -ENOSPC && !vq->inflight)
			err = -ENOMEM;
		if (err == -ENOSPC) {
			blk_mq_stop_hw_queue(hctx);
			vbblk_vq_want_room(vq, vbblk_rq_room);
		}
		spin_unlock_irqrestore(&vq->lock, flags);
		if (notify)
			vbblk_vq_notify(vq, notify);
		vbblk_rq_unmap(req, cmd);
		if (err == -ENOSPC)
			return BLK_STS_DEV_RESOURCE;
		if (err == -ENOMEM)
			return BLK_STS_RESOURCE;
		return BLK_STS_IOERR;
	}
	notify = bd->last ? vbblk_vq_kick_prepare(vq) : 0;
	spin_unlock_irqrestore(&vq->lock, flags);

	if (notify)
		vbblk_vq_notify(vq, notify);
	return BLK_STS_OK;
}

/* A request list with its last entry, for vbblk_queue_rqs(). */
struct vbblk_rqs {
	struct request *head, *last;
};

static void vbblk_rqs_add(struct vbblk_rqs *l, struct request *req)
{
	req->rq_next = NULL;
	if (l->last)
		l->last->rq_next = req;
	else
		l->head = req;
	l->last = req;
}

/*
 * Prepare a plugged request outside the ring lock. Anything unusual
 * (a dead device, a read-only disk, SCSI passthrough, a failed
 * allocation) is left to queue_rq, which knows how to end or retry it.
 */
static bool vbblk_rq_prep_batch(struct request *req)
{
	struct vbblk *vblk = req->q->queuedata;
	struct vbblk_cmd *cmd = blk_mq_rq_to_pdu(req);

	if (unlikely(READ_ONCE(vblk->broken)) || blk_rq_is_passthrough(req))
		return false;
	/* queue_rq is reached through blk-mq, which does this for it */
	req->mq_hctx->tags->rqs[req->tag] = req;
	return vbblk_rq_setup(vblk, req, cmd, &cmd->nents) == BLK_STS_OK;
}

/*
 * Put a run of prepared requests for @vq on the ring under one lock round
 * and notify once. Those the ring refuses (full) go back on @left,
 * unprepared, with everything after them on this queue, so order holds.
 */
static void vbblk_rq_add_run(struct vbblk_vq *vq, struct request *run,
			     struct vbblk_rqs *left)
{
	struct request *req, *next;
	unsigned long flags;
	unsigned int notify;
	bool full = false;

	spin_lock_irqsave(&vq->lock, flags);
	for (req = run; req; req = next) {
		struct vbblk_cmd *cmd = blk_mq_rq_to_pdu(req);

		next = req->rq_next;
		if (!full)
			full = vbblk_vq_add(vq, &cmd->hdr,
					    vbblk_iohdr_type(vq->vblk, &cmd->hdr),
					    cmd->nents ? cmd->sg_table.sgl : NULL,
					    op_is_write(req_op(req)));
		if (full) {
			vbblk_rq_unmap(req, cmd);
			vbblk_rqs_add(left, req);
			continue;
		}
		/* No reap can see it before we drop the lock. */
		blk_mq_start_request(req);
		vbblk_stat_inc(vq->vblk, VBBLK_STAT_QUEUE_RQS);
	}
	notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);
	if (notify)
		vbblk_vq_notify(vq, notify);
}

/*
 * A plug's requests (io_uring, aio, blk_finish_plug): each run of requests
 * for one virtqueue reaches the ring in one locked pass with one notify,
 * instead of a lock round and a notify decision per request.
 */
static void vbblk_queue_rqs(vbblk_rq_list_t *list)
{
	struct vbblk_rqs run = {}, left = {};
	struct vbblk_vq *vq = NULL;
	struct request *req;

	while ((req = rq_list_pop(list))) {
		if (!vbblk_rq_prep_batch(req)) {
			vbblk_rqs_add(&left, req);
			continue;
		}
		if (run.head && vbblk_hctx_vq(req->mq_hctx) != vq) {
			vbblk_rq_add_run(vq, run.head, &left);
			run.head = run.last = NULL;
		}
		vq = vbblk_hctx_vq(req->mq_hctx);
		vbblk_rqs_add(&run, req);
	}
	if (run.head)
		vbblk_rq_add_run(vq, run.head, &left);
	vbblk_rq_list_set(list, left.head, left.last);
}

/*
 * blk-mq ends a dispatch early (error or budget): send what is queued.
 * Nothing is when the ring refuses all (broken), and after a failed
 * restore the virtqueue is gone.
 */
static void vbblk_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct vbblk *vblk = hctx->queue->queuedata;

	if (likely(!READ_ONCE(vblk->broken)))
		vbblk_vq_kick(vbblk_hctx_vq(hctx));
}

/* A merged read or write may carry bios of several submitters. */
static bool vbblk_rq_merged(struct request *req)
{
	return (req_op(req) == REQ_OP_READ || req_op(req) == REQ_OP_WRITE) &&
	       req->bio != req->biotail && !(req->rq_flags & RQF_FLUSH_SEQ);
}

/*
 * A failed merged request is sent again one bio at a time
 * (vbblk_retry_begin()): requeued, its first remaining bio each time,
 * which blk_update_request() then ends with its own status.
 */
static void vbblk_rq_complete(struct request *req)
{
	struct vbblk_cmd *cmd = blk_mq_rq_to_pdu(req);
	struct vbblk *vblk = req->q->queuedata;
	blk_status_t st = vbblk_status(&cmd->hdr);

	vbblk_rq_unmap(req, cmd);
	if (unlikely(cmd->retry.active)) {
		if (blk_update_request(req, st, req->bio->bi_iter.bi_size)) {
			blk_mq_requeue_request(req, true);
			return;
		}
		cmd->retry.active = false;
		__blk_mq_end_request(req, st);
		return;
	}
	if (vbblk_retry_begin(&cmd->retry, vblk, st, vbblk_rq_merged(req),
			      blk_rq_pos(req))) {
		blk_mq_requeue_request(req, true);
		return;
	}
	blk_mq_end_request(req, st);
}

/* Called from the virtqueue interrupt with the command off the ring. */
static void vbblk_rq_end_cmd(struct vbblk_iohdr *hdr)
{
	struct vbblk_cmd *cmd = container_of(hdr, struct vbblk_cmd, hdr);
	struct request *req = blk_mq_rq_from_pdu(cmd);

	if (likely(!blk_should_fake_timeout(req->q)))
		blk_mq_complete_request(req);
}

/* Every request starts as not being retried; completion keeps it so. */
static int vbblk_init_request(struct blk_mq_tag_set *set, struct request *req,
			      unsigned int hctx_idx, vbblk_numa_node_t numa_node)
{
	struct vbblk_cmd *cmd = blk_mq_rq_to_pdu(req);

	vbblk_iohdr_setup(&cmd->hdr, vbblk_rq_end_cmd);
	cmd->retry.active = false;
	return 0;
}

/*
 * Interrupt-driven queues follow their vectors' affinity; poll queues,
 * whose vectors stay silent and unspread, are spread over the CPUs here.
 * No separate read map.
 */
static void vbblk_map_queues(struct blk_mq_tag_set *set)
{
	struct vbblk *vblk = set->driver_data;
	struct blk_mq_queue_map *def = &set->map[HCTX_TYPE_DEFAULT];

	def->nr_queues = vbblk_io_vqs(vblk);
	def->queue_offset = 0;
	vbblk_map_virtio_queues(def, vblk->vdev);
	if (set->nr_maps > HCTX_TYPE_POLL) {
		struct blk_mq_queue_map *poll = &set->map[HCTX_TYPE_POLL];

		set->map[HCTX_TYPE_READ].nr_queues = 0;
		poll->nr_queues = vblk->num_poll_vqs;
		poll->queue_offset = def->nr_queues;
		blk_mq_map_queues(poll);
	}
}

/* The rest of vbblk_rq_complete() for a completion batch's requests. */
static void vbblk_rq_complete_batch(struct io_comp_batch *iob)
{
	struct request *req;
	unsigned int n = 0;

	rq_list_for_each(&iob->req_list, req) {
		vbblk_rq_unmap(req, blk_mq_rq_to_pdu(req));
		n++;
	}
	req = rq_list_peek(&iob->req_list);
	if (req)
		vbblk_stat_add(req->q->queuedata, VBBLK_STAT_POLL_BATCHED, n);
	blk_mq_end_request_batch(iob);
}

/*
 * A polled request that succeeded and is not being retried joins the
 * poller's batch: blk-mq ends the batch's requests together (one tag
 * free and one accounting pass per batch), as upstream virtio_blk does.
 * Anything else completes as vbblk_rq_end_cmd() would complete it;
 * passthrough commands carry their status to blk_execute_rq() only so.
 * Commands of other paths are refused.
 */
static bool vbblk_rq_batch_add(struct vbblk_iohdr *hdr, void *batch)
{
	struct vbblk_cmd *cmd = container_of(hdr, struct vbblk_cmd, hdr);
	struct request *req = blk_mq_rq_from_pdu(cmd);

	if (hdr->end != vbblk_rq_end_cmd)
		return false;
	if (unlikely(blk_should_fake_timeout(req->q)))
		return true;
	if (blk_rq_is_passthrough(req) || vbblk_status(hdr) ||
	    cmd->retry.active ||
	    !blk_mq_add_to_batch(req, batch, false, vbblk_rq_complete_batch))
		blk_mq_complete_request(req);
	return true;
}

static int vbblk_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct vbblk *vblk = hctx->queue->queuedata;

	/* Given up on, the ring ended everything itself (or is gone). */
	if (unlikely(READ_ONCE(vblk->broken)))
		return 0;
	return vbblk_vq_poll_batch(vbblk_hctx_vq(hctx),
				   iob ? vbblk_rq_batch_add : NULL, iob);
}

static const struct blk_mq_ops vbblk_mq_ops = {
	.queue_rq	= vbblk_queue_rq,
	.queue_rqs	= vbblk_queue_rqs,
	.commit_rqs	= vbblk_commit_rqs,
	.complete	= vbblk_rq_complete,
	.init_request	= vbblk_init_request,
	.map_queues	= vbblk_map_queues,
	.poll		= vbblk_poll,
};

int vbblk_rq_init_tag_set(struct vbblk *vblk)
{
	struct blk_mq_tag_set *set = &vblk->tag_set;
	unsigned int ring = virtqueue_get_vring_size(vblk->vqs[0].vq);

	memset(set, 0, sizeof(*set));
	set->ops = &vbblk_mq_ops;
	set->nr_hw_queues = vblk->num_vqs;
	set->nr_maps = vblk->num_poll_vqs ? HCTX_MAX_TYPES : 1;
	set->queue_depth = min(vbblk_queue_depth, ring);
	set->numa_node = NUMA_NO_NODE;
	set->flags = VBBLK_MQ_F_MERGE;
	set->cmd_size = sizeof(struct vbblk_cmd) +
			sizeof(struct scatterlist) * VBBLK_INLINE_SG;
	set->driver_data = vblk;
	return blk_mq_alloc_tag_set(set);
}

/*
 * A driver-private request carrying one virtio command; data goes to the
 * device if @data_out. The caller maps the data and may set cmd->scsi.
 */
struct request *vbblk_rq_alloc_drv(struct vbblk *vblk, bool data_out,
				   u32 type, sector_t sector)
{
	struct request *req;
	struct vbblk_cmd *cmd;

	/*
	 * A device given up on takes nothing; after a failed restore a dead
	 * request-mode disk's queue would hold the allocation until unbind.
	 */
	if (unlikely(READ_ONCE(vblk->broken)))
		return ERR_PTR(-ENODEV);
	req = blk_mq_alloc_request(vblk->rq_queue,
				   data_out ? REQ_OP_DRV_OUT : REQ_OP_DRV_IN, 0);
	if (IS_ERR(req))
		return req;
	cmd = blk_mq_rq_to_pdu(req);
	cmd->drv_type = type;
	cmd->drv_sector = sector;
	cmd->scsi = NULL;
	return req;
}

/* GET_ID: the device writes up to VIRTIO_BLK_ID_BYTES, not NUL-terminated. */
int vbblk_rq_get_id(struct vbblk *vblk, char *buf)
{
	struct request *req;
	int err;

	req = vbblk_rq_alloc_drv(vblk, false, VIRTIO_BLK_T_GET_ID, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);

	err = vbblk_rq_map_kern(req, buf, VIRTIO_BLK_ID_BYTES, GFP_KERNEL);
	if (!err)
		err = blk_status_to_errno(blk_execute_rq(req, false));
	blk_mq_free_request(req);
	return err;
}
