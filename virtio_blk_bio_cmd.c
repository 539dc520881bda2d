// SPDX-License-Identifier: GPL-2.0
/*
 * Bio commands: the bio path's unit of work on the ring, one or more
 * bios behind one virtio header (struct vbblk_bio_cmd), below the bio path
 * and its batching, above command building and the ring.
 *
 * Commands are preallocated, depth per virtqueue, as blk-mq preallocates
 * requests: a slab allocation per bio would cost more than the block
 * layer we skip (init_on_alloc zeroes every object).
 *
 * A command that meets a full ring (descriptors, not commands, ran out)
 * is parked on its queue and re-added when a reap frees room: nothing is
 * dropped or failed for lack of room. This is the bio path's ring-full
 * state, and it lives here, per queue (struct vbblk_bio_vq).
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/part_stat.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "vbblk.h"
#include "virtio_ring_split.h"

/* Sleep until a command is free on @bvq. */
struct vbblk_bio_cmd *vbblk_bio_cmd_wait(struct vbblk_bio_vq *bvq)
{
	struct vbblk_bio_cmd *cmd;

	wait_event(bvq->wait, (cmd = vbblk_bio_cmd_get(bvq)));
	return cmd;
}

/*
 * A device FLUSH that @cmd led, sent at @started (ns), in the statistics
 * as blk-mq counts its flush requests (blk_account_io_flush()); no
 * accounting helper takes REQ_OP_FLUSH, which op_stat_group() would count
 * as a read. Against @cmd's block device, as its data is: a partition's
 * count moves its whole disk's too.
 */
void vbblk_bio_cmd_acct_flush(struct vbblk_bio_cmd *cmd, u64 started)
{
	struct block_device *bdev = cmd->bio->bi_bdev;

	if (!blk_queue_io_stat(cmd->vq->vblk->disk->queue))
		return;
	part_stat_lock();
	part_stat_inc(bdev, ios[STAT_FLUSH]);
	part_stat_add(bdev, nsecs[STAT_FLUSH], ktime_get_ns() - started);
	part_stat_unlock();
}

/*
 * vbblk_bio_add_locked() for anything but data in one piece: a batch, a
 * retried bio, a range. Caller holds vq->lock.
 */
static noinline int vbblk_bio_add_sg(struct vbblk_vq *vq,
				     struct vbblk_bio_cmd *cmd)
{
	struct vbblk_bio_vq *bvq = vbblk_bvq(vq);
	struct vbblk *vblk = vq->vblk;
	struct request_queue *q = vblk->disk->queue;
	struct scatterlist *data = NULL;
	u32 type = vbblk_iohdr_type(vblk, &cmd->hdr);
	bool out = true;
	struct bio *bio;
	unsigned int n = 0;

	lockdep_assert_held(&vq->lock);
	switch (type) {
	case VIRTIO_BLK_T_IN:
		out = false;
		fallthrough;
	case VIRTIO_BLK_T_OUT:
		if (!cmd->nr_segs)
			break;
		vbblk_sg_init(bvq->sg, cmd->nr_segs);
		if (unlikely(cmd->retry.active)) {
			n = vbblk_bio_map(q, cmd->bio, bvq->sg);
		} else {
			for (bio = cmd->bio; bio; bio = bio->bi_next)
				n += vbblk_bio_map(q, bio, bvq->sg + n);
		}
		if (WARN_ON_ONCE(n != cmd->nr_segs))
			return -EIO;
		data = bvq->sg;
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
	case VIRTIO_BLK_T_SECURE_ERASE:
		sg_init_one(bvq->sg, &cmd->range, sizeof(cmd->range));
		data = bvq->sg;
		break;
	}
	return vbblk_vq_add(vq, &cmd->hdr, type, data, out);
}

/*
 * Put the command's current stage on the ring: its bios' data, the first
 * bio's alone while it is retried. Caller holds vq->lock. Data in one
 * piece, most commands, goes in the command's own entry, decided inline.
 * nr_segs counts what is mapped: a retry maps its first bio alone.
 */
static __always_inline int vbblk_bio_add_locked(struct vbblk_vq *vq,
						struct vbblk_bio_cmd *cmd)
{
	lockdep_assert_held(&vq->lock);
	if (likely(cmd->nr_segs == 1 && cmd->stage == VBBLK_STAGE_DATA &&
		   (cmd->bio == cmd->tail || cmd->retry.active))) {
		bool out = op_is_write(bio_op(cmd->bio));

		vbblk_bio_map_one(cmd->bio, &cmd->sg1);
		return vbblk_vq_add(vq, &cmd->hdr,
				    out ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN,
				    &cmd->sg1, out);
	}
	return vbblk_bio_add_sg(vq, cmd);
}

/* As if the device failed it: its path's completion ends it. */
static void vbblk_bio_cmd_fail(struct vbblk_bio_cmd *cmd)
{
	cmd->hdr.status = VIRTIO_BLK_S_IOERR;
	cmd->hdr.end(&cmd->hdr);
}

static void vbblk_bio_room(struct vbblk_vq *vq);

/*
 * Re-add parked commands, oldest first; those the ring refuses for good
 * (the device was given up on) move to @failed. True when some stay
 * parked with nothing in flight: no reap will come to retry them, so the
 * caller schedules park_work. Caller holds vq->lock.
 */
static bool vbblk_bio_readd_locked(struct vbblk_vq *vq,
				   struct list_head *failed)
{
	struct vbblk_bio_vq *bvq = vbblk_bvq(vq);
	struct vbblk_bio_cmd *cmd, *tmp;
	int err;

	lockdep_assert_held(&vq->lock);
	list_for_each_entry_safe(cmd, tmp, &bvq->parked, park) {
		err = vbblk_bio_add_locked(vq, cmd);
		if (err == -ENOSPC)
			break;
		list_del_init(&cmd->park);
		if (err)
			list_add_tail(&cmd->park, failed);
	}
	if (list_empty(&bvq->parked))
		return false;
	vbblk_vq_want_room(vq, vbblk_bio_room);
	return !vq->inflight;
}

/*
 * Add, or park behind earlier parked commands so order is kept. An empty
 * ring refuses only a command whose indirect descriptors could not be
 * allocated (GFP_ATOMIC, so a transient failure): parked, it is retried
 * by park_work. Without indirect descriptors an empty ring refuses
 * only what it can never take: that fails. Caller holds vq->lock.
 */
static __always_inline bool vbblk_bio_queue_locked(struct vbblk_vq *vq,
						   struct vbblk_bio_cmd *cmd)
{
	struct vbblk_bio_vq *bvq = vbblk_bvq(vq);
	int err = -ENOSPC;

	lockdep_assert_held(&vq->lock);
	if (list_empty(&bvq->parked))
		err = vbblk_bio_add_locked(vq, cmd);
	if (!err)
		return true;
	if (err == -ENOSPC &&
	    (vq->inflight || !list_empty(&bvq->parked) ||
	     virtio_has_feature(vq->vq->vdev, VIRTIO_RING_F_INDIRECT_DESC))) {
		list_add_tail(&cmd->park, &bvq->parked);
		vbblk_vq_want_room(vq, vbblk_bio_room);
		vbblk_stat_inc(vq->vblk, VBBLK_STAT_PARKED);
		return true;
	}
	return false;
}

/* Parked commands that no reap will re-add: retry, later. */
static void vbblk_bio_park_retry(struct vbblk_bio_vq *bvq)
{
	schedule_delayed_work(&bvq->park_work, msecs_to_jiffies(10));
}

/* Re-add what is parked and notify; retry later what stays stuck. */
static void vbblk_bio_readd_parked(struct vbblk_vq *vq)
{
	struct vbblk_bio_cmd *cmd, *tmp;
	unsigned long flags;
	unsigned int notify;
	bool stuck;
	LIST_HEAD(failed);

	spin_lock_irqsave(&vq->lock, flags);
	stuck = vbblk_bio_readd_locked(vq, &failed);
	notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);
	if (notify)
		vbblk_vq_notify(vq, notify);
	if (stuck)
		vbblk_bio_park_retry(vbblk_bvq(vq));
	list_for_each_entry_safe(cmd, tmp, &failed, park) {
		list_del_init(&cmd->park);
		vbblk_bio_cmd_fail(cmd);
	}
}

/* A reap freed room on @vq (or the device was given up on). */
static void vbblk_bio_room(struct vbblk_vq *vq)
{
	vbblk_bio_readd_parked(vq);
}

static void vbblk_bio_park_work(struct work_struct *work)
{
	struct vbblk_bio_vq *bvq = container_of(to_delayed_work(work),
						struct vbblk_bio_vq, park_work);

	vbblk_bio_readd_parked(bvq->vq);
}

/*
 * Send a command. With @plugged the caller's plug will notify the queue
 * (vbblk_plug_note()) and the notify waits for it.
 */
void vbblk_bio_cmd_dispatch(struct vbblk_bio_cmd *cmd, bool plugged)
{
	struct vbblk_vq *vq = cmd->vq;
	struct vbblk *vblk = vq->vblk;
	unsigned long flags;
	unsigned int notify = 0;
	bool ok, stuck;

	if (!cmd->accounted && cmd->bytes &&
	    blk_queue_io_stat(vblk->disk->queue)) {
		/*
		 * bytes shrinks while a failed batch is retried: keep it. A
		 * batch's bios share one block device (vbblk_batch_fits()).
		 */
		cmd->acct_sectors = cmd->bytes >> SECTOR_SHIFT;
		cmd->start_time = vbblk_start_io_acct(cmd->bio->bi_bdev,
						      cmd->acct_sectors,
						      bio_op(cmd->bio), jiffies);
		cmd->accounted = true;
	}

	spin_lock_irqsave(&vq->lock, flags);
	/* Under the lock: vbblk_vqs_abort() calls back what it finds parked. */
	ok = !READ_ONCE(vblk->broken) && vbblk_bio_queue_locked(vq, cmd);
	stuck = !list_empty(&cmd->bvq->parked) && !vq->inflight;
	if (plugged)
		vbblk_stat_inc(vblk, VBBLK_STAT_PLUG_DEFERRED);
	else
		notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);

	if (notify)
		vbblk_vq_notify(vq, notify);
	if (unlikely(stuck))
		vbblk_bio_park_retry(cmd->bvq);
	if (unlikely(!ok))
		vbblk_bio_cmd_fail(cmd);
}

/*
 * Wait until no bio command is out: none parked, none on a ring. Poll
 * queues are reaped here, since nobody may be polling them any more.
 */
void vbblk_bio_cmds_drain(struct vbblk *vblk)
{
	unsigned int i;

	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_bio_vq *bvq = &vblk->bio_vqs[i];

		/* Notifies a plug deferred: the plug may not be flushed yet. */
		vbblk_vq_kick(bvq->vq);
		if (i < vbblk_io_vqs(vblk)) {
			wait_event(bvq->wait, !atomic_read(&bvq->nr_cmds));
			continue;
		}
		while (atomic_read(&bvq->nr_cmds)) {
			vbblk_vq_poll(bvq->vq);
			if (atomic_read(&bvq->nr_cmds))
				usleep_range(50, 100);
		}
	}
	/* Nothing is parked now; a retry still queued must not outlive the rings. */
	for (i = 0; i < vblk->num_vqs; i++)
		cancel_delayed_work_sync(&vblk->bio_vqs[i].park_work);
}

/*
 * Per-queue state and depth commands per queue, ended through @end. The
 * device reads and writes each command's header, status and range: one
 * kmalloc each, never the vmalloc memory a large kvcalloc() falls back to
 * on a fragmented guest.
 */
int vbblk_bio_cmds_init(struct vbblk *vblk, void (*end)(struct vbblk_iohdr *))
{
	unsigned int i, j;

	vblk->depth = min(READ_ONCE(vbblk_queue_depth),
			  virtqueue_get_vring_size(vblk->vqs[0].vq));
	vblk->bio_vqs = kcalloc(vblk->num_vqs, sizeof(*vblk->bio_vqs),
				GFP_KERNEL);
	if (!vblk->bio_vqs)
		return -ENOMEM;
	/* Before anything can fail: vbblk_bio_cmds_exit() cancels them all. */
	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_bio_vq *bvq = &vblk->bio_vqs[i];

		bvq->vq = &vblk->vqs[i];
		INIT_LIST_HEAD(&bvq->parked);
		INIT_DELAYED_WORK(&bvq->park_work, vbblk_bio_park_work);
		atomic_set(&bvq->nr_cmds, 0);
		spin_lock_init(&bvq->free_lock);
		init_llist_head(&bvq->free_cmds);
		init_waitqueue_head(&bvq->wait);
	}

	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_bio_vq *bvq = &vblk->bio_vqs[i];

		bvq->cmds = kvcalloc(vblk->depth, sizeof(*bvq->cmds),
				     GFP_KERNEL);
		if (!bvq->cmds)
			goto fail;
		for (j = 0; j < vblk->depth; j++) {
			struct vbblk_bio_cmd *cmd = kzalloc(sizeof(*cmd),
							    GFP_KERNEL);

			if (!cmd)
				goto fail;
			vbblk_iohdr_setup(&cmd->hdr, end);
			sg_init_table(&cmd->sg1, 1);
			cmd->vq = bvq->vq;
			cmd->bvq = bvq;
			bvq->cmds[j] = cmd;
			llist_add(&cmd->free_node, &bvq->free_cmds);
		}
		bvq->sg = kvmalloc_array(vblk->sg_elems, sizeof(*bvq->sg),
					 GFP_KERNEL);
		if (!bvq->sg)
			goto fail;
	}
	return 0;
fail:
	vbblk_bio_cmds_exit(vblk);
	return -ENOMEM;
}

void vbblk_bio_cmds_exit(struct vbblk *vblk)
{
	unsigned int i, j;

	for (i = 0; vblk->bio_vqs && i < vblk->num_vqs; i++) {
		struct vbblk_bio_vq *bvq = &vblk->bio_vqs[i];

		/* Nothing is parked once drained; a probe failure never parks. */
		cancel_delayed_work_sync(&bvq->park_work);
		kvfree(bvq->sg);
		for (j = 0; bvq->cmds && j < vblk->depth; j++)
			kfree(bvq->cmds[j]);
		kvfree(bvq->cmds);
	}
	kfree(vblk->bio_vqs);
	vblk->bio_vqs = NULL;
}
