// SPDX-License-Identifier: GPL-2.0
/*
 * The bio path: submit_bio turns bios straight into virtio-blk commands,
 * with no request, tag or I/O scheduler in between.
 *
 * A command (struct vbblk_bio_cmd) carries one or more bios: reads and
 * writes go through the per-CPU batch (virtio_blk_batch.c), which may grow
 * a command from contiguous bios; everything else is one bio per command.
 *
 * Flow control: each virtqueue lends at most vblk->depth commands. A
 * submitter without one sleeps (REQ_NOWAIT bios get EAGAIN instead). A
 * command that meets a full ring anyway (descriptors, not commands, ran
 * out) is parked and re-added from the completion path: nothing is
 * dropped or failed for lack of room.
 *
 * FLUSH/FUA (Documentation/block/writeback_cache_control.rst): virtio-blk
 * has FLUSH but no FUA, so one command walks through up to three stages:
 * PREFLUSH (a FLUSH), DATA (the write, or a read), POSTFLUSH (a FLUSH for
 * a FUA write). Each stage is issued from the completion of the one
 * before, so submit_bio never waits. Concurrent flush stages share device
 * FLUSHes (see vbblk_flush_stage()). The block layer already strips both
 * flags when the cache is write-through.
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <linux/wait_bit.h>

#include "vbblk.h"

enum vbblk_stage {
	VBBLK_STAGE_DATA,
	VBBLK_STAGE_PREFLUSH,
	VBBLK_STAGE_POSTFLUSH,
};

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

unsigned int vbblk_bio_segs(struct vbblk *vblk, struct bio *bio)
{
	return vbblk_bio_map(vblk->disk->queue, bio, NULL);
}

/*
 * Commands are preallocated, depth per virtqueue, as blk-mq preallocates
 * requests: a slab allocation per bio would cost more than the block
 * layer we skip (init_on_alloc zeroes every object). Completions push
 * lock-free; pops are serialised because llist_del_first needs one
 * consumer at a time, and several CPUs may share a queue. submit_bio may
 * run in softirq context (dm-crypt completing a write from its cipher's
 * callback) and interrupt a submitter that holds the lock on this CPU:
 * interrupts stay off while it is held.
 */
static struct vbblk_bio_cmd *vbblk_get_cmd(struct vbblk_vq *vq)
{
	struct llist_node *node;
	unsigned long flags;

	if (llist_empty(&vq->free_cmds))
		return NULL;
	spin_lock_irqsave(&vq->free_lock, flags);
	node = llist_del_first(&vq->free_cmds);
	spin_unlock_irqrestore(&vq->free_lock, flags);
	if (!node)
		return NULL;
	atomic_inc(&vq->bio_cmds);
	return llist_entry(node, struct vbblk_bio_cmd, free_node);
}

/* An empty bio chain: a new command, or one retrying its bios singly. */
static void vbblk_cmd_clear_bios(struct vbblk_bio_cmd *cmd)
{
	cmd->bio = NULL;
	cmd->tail = NULL;
	cmd->nr_bios = 0;
	cmd->nr_segs = 0;
	cmd->bytes = 0;
	cmd->end = 0;
}

/* Every field a command reads before writing it; no memset. */
static void vbblk_cmd_init(struct vbblk_bio_cmd *cmd)
{
	vbblk_cmd_clear_bios(cmd);
	cmd->accounted = false;
	cmd->stage = 0;
	cmd->postflush = false;
	cmd->retrying = false;
	cmd->batch = NULL;
	cmd->retry = NULL;
	INIT_LIST_HEAD(&cmd->park);
}

/* No command for a REQ_NOWAIT bio: it ends with EAGAIN rather than wait. */
static void vbblk_bio_would_block(struct vbblk *vblk, struct bio *bio)
{
	vbblk_stat_inc(vblk, VBBLK_STAT_NOWAIT_EAGAIN);
	bio_wouldblock_error(bio);
}

static void vbblk_bio_defer(struct vbblk *vblk, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&vblk->defer_lock, flags);
	bio_list_add(&vblk->deferred, bio);
	spin_unlock_irqrestore(&vblk->defer_lock, flags);
	vbblk_stat_inc(vblk, VBBLK_STAT_RING_FULL_WAITS);
	queue_work(system_wq, &vblk->defer_work);
}

/*
 * A command for @bio's submitter on @vq. Sleeps for a free one unless the
 * bio is REQ_NOWAIT (then NULL, and the bio has ended with EAGAIN) or the
 * caller cannot sleep (then NULL, and the bio waits in vblk->deferred).
 */
struct vbblk_bio_cmd *vbblk_bio_cmd_alloc(struct vbblk *vblk,
					  struct vbblk_vq *vq, struct bio *bio)
{
	struct vbblk_bio_cmd *cmd = vbblk_get_cmd(vq);

	if (!cmd) {
		if (bio->bi_opf & REQ_NOWAIT) {
			vbblk_bio_would_block(vblk, bio);
			return NULL;
		}
		/*
		 * submit_bio from softirq (dm-crypt) must not sleep: the bio is
		 * sent again from a work item, which may. Nothing is dropped.
		 */
		if (unlikely(!in_task())) {
			vbblk_bio_defer(vblk, bio);
			return NULL;
		}
		/* Sleeping flushes our plug, so held batches go out first. */
		vbblk_stat_inc(vblk, VBBLK_STAT_RING_FULL_WAITS);
		wait_event(vq->wait, (cmd = vbblk_get_cmd(vq)));
	}

	vbblk_cmd_init(cmd);
	return cmd;
}

/* Append @bio, @segs data segments, to the command's chain. */
void vbblk_cmd_add_bio(struct vbblk_bio_cmd *cmd, struct bio *bio,
		       unsigned int segs)
{
	bio->bi_next = NULL;
	if (cmd->tail)
		cmd->tail->bi_next = bio;
	else
		cmd->bio = bio;
	cmd->tail = bio;
	cmd->nr_bios++;
	cmd->nr_segs += segs;
	cmd->bytes += bio->bi_iter.bi_size;
	cmd->end = bio_end_sector(bio);
}

static void vbblk_bio_cmd_free(struct vbblk_bio_cmd *cmd)
{
	struct vbblk_vq *vq = cmd->vq;

	if (cmd->batch)
		vbblk_batch_cmd_done(cmd);
	llist_add(&cmd->free_node, &vq->free_cmds);
	atomic_dec(&vq->bio_cmds);
	/* Submitters waiting for a command, or a drain waiting for zero. */
	if (wq_has_sleeper(&vq->wait))
		wake_up(&vq->wait);
}

static void vbblk_bio_end_chain(struct bio *bio, blk_status_t st)
{
	struct bio *next;

	for (; bio; bio = next) {
		next = bio->bi_next;
		bio->bi_next = NULL;
		if (st)
			bio->bi_status = st;
		bio_endio(bio);
	}
}

/*
 * End the command's I/O accounting, against the block device its bios were
 * sent to (a partition's statistics include its I/O), while they are
 * still alive to name it.
 */
static void vbblk_bio_cmd_end_acct(struct vbblk_bio_cmd *cmd)
{
	if (cmd->accounted)
		vbblk_end_io_acct(cmd->bio->bi_bdev, bio_op(cmd->bio),
				  cmd->acct_sectors, cmd->start_time);
}

static void vbblk_bio_cmd_end(struct vbblk_bio_cmd *cmd, blk_status_t st)
{
	vbblk_bio_cmd_end_acct(cmd);
	vbblk_bio_end_chain(cmd->bio, st);
	vbblk_bio_end_chain(cmd->retry, st);
	vbblk_bio_cmd_free(cmd);
}

/* Put the command's current stage on the ring. Caller holds vq->lock. */
static int vbblk_bio_add_locked(struct vbblk_vq *vq, struct vbblk_bio_cmd *cmd)
{
	struct vbblk *vblk = vq->vblk;
	struct scatterlist *data = NULL;
	bool out = true;
	struct bio *bio;
	unsigned int n = 0;

	switch (virtio32_to_cpu(vblk->vdev, cmd->hdr.out.type)) {
	case VIRTIO_BLK_T_IN:
		out = false;
		fallthrough;
	case VIRTIO_BLK_T_OUT:
		if (!cmd->nr_segs)
			break;
		sg_init_table(vq->sg, cmd->nr_segs);
		for (bio = cmd->bio; bio; bio = bio->bi_next)
			n += vbblk_bio_map(vblk->disk->queue, bio, vq->sg + n);
		if (WARN_ON_ONCE(n != cmd->nr_segs))
			return -EIO;
		data = vq->sg;
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
	case VIRTIO_BLK_T_SECURE_ERASE:
		sg_init_one(vq->sg, &cmd->range, sizeof(cmd->range));
		data = vq->sg;
		break;
	}
	return vbblk_vq_add(vq, &cmd->hdr, data, out);
}

/*
 * Re-add parked commands, oldest first. True when some stay parked with
 * nothing in flight: no completion will come to retry them, so the caller
 * schedules vq->park_work. Caller holds vq->lock.
 */
static bool vbblk_bio_readd_locked(struct vbblk_vq *vq)
{
	struct vbblk_bio_cmd *cmd, *tmp;

	list_for_each_entry_safe(cmd, tmp, &vq->parked, park) {
		if (vbblk_bio_add_locked(vq, cmd))
			break;
		list_del_init(&cmd->park);
	}
	return !list_empty(&vq->parked) && !vq->inflight;
}

/*
 * Add, or park behind earlier parked commands so order is kept. An empty
 * ring refuses only a command whose indirect descriptors could not be
 * allocated (GFP_ATOMIC, so a transient failure): parked, it is retried
 * by vq->park_work. Without indirect descriptors an empty ring refuses
 * only what it can never take: that fails. Caller holds vq->lock.
 */
static bool vbblk_bio_queue_locked(struct vbblk_vq *vq,
				   struct vbblk_bio_cmd *cmd)
{
	int err = -ENOSPC;

	if (list_empty(&vq->parked))
		err = vbblk_bio_add_locked(vq, cmd);
	if (!err)
		return true;
	if (err == -ENOSPC &&
	    (vq->inflight || !list_empty(&vq->parked) ||
	     virtio_has_feature(vq->vq->vdev, VIRTIO_RING_F_INDIRECT_DESC))) {
		list_add_tail(&cmd->park, &vq->parked);
		vbblk_stat_inc(vq->vblk, VBBLK_STAT_PARKED);
		return true;
	}
	return false;
}

/* Parked commands that no completion will re-add: retry, later. */
static void vbblk_bio_park_retry(struct vbblk_vq *vq)
{
	schedule_delayed_work(&vq->park_work, msecs_to_jiffies(10));
}

/* Re-add what is parked and notify; retry later what stays stuck. */
static void vbblk_bio_readd_parked(struct vbblk_vq *vq)
{
	unsigned long flags;
	bool notify, stuck;

	spin_lock_irqsave(&vq->lock, flags);
	stuck = vbblk_bio_readd_locked(vq);
	notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);
	if (notify)
		vbblk_vq_notify(vq);
	if (stuck)
		vbblk_bio_park_retry(vq);
}

static void vbblk_bio_park_work(struct work_struct *work)
{
	vbblk_bio_readd_parked(container_of(to_delayed_work(work),
					    struct vbblk_vq, park_work));
}

/*
 * Send a command. With @plugged the caller has noted this queue in its
 * plug (vbblk_plug_note()), and the unplug sends the notify.
 */
void vbblk_bio_cmd_dispatch(struct vbblk_bio_cmd *cmd, bool plugged)
{
	struct vbblk_vq *vq = cmd->vq;
	struct vbblk *vblk = vq->vblk;
	unsigned long flags;
	bool ok, stuck, notify = false;

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
	ok = !READ_ONCE(vblk->broken) && vbblk_bio_queue_locked(vq, cmd);
	stuck = !list_empty(&vq->parked) && !vq->inflight;
	if (plugged)
		vbblk_stat_inc(vblk, VBBLK_STAT_PLUG_DEFERRED);
	else
		notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);

	if (notify)
		vbblk_vq_notify(vq);
	if (unlikely(stuck))
		vbblk_bio_park_retry(vq);
	if (unlikely(!ok)) {
		/* As if the device failed it: flush followers end with it. */
		cmd->hdr.status = VIRTIO_BLK_S_IOERR;
		vbblk_bio_end_cmd(&cmd->hdr);
	}
}

/* ---- Plugs: one notify per virtqueue per plug ---- */

struct vbblk_plug_cb {
	struct blk_plug_cb cb;
	DECLARE_BITMAP(kick, VBBLK_MAX_QUEUES);
	struct vbblk_batch *held[2];	/* batches holding bios for us */
	bool held_more;			/* ... and others: check them all */
};

static void vbblk_unplug_batch(struct vbblk_plug_cb *p, struct vbblk_batch *b)
{
	/* What the unplug sends, it sends without a notify: ours, below. */
	__set_bit(b->vq->index, p->kick);
	vbblk_batch_unplug(b);
}

/* The plug is flushed (maybe from schedule()): never sleeps. */
static void vbblk_unplug(struct blk_plug_cb *cb, bool from_schedule)
{
	struct vbblk_plug_cb *p = container_of(cb, struct vbblk_plug_cb, cb);
	struct vbblk *vblk = cb->data;
	unsigned int i;
	int cpu;

	if (p->held_more) {
		for_each_possible_cpu(cpu)
			vbblk_unplug_batch(p, per_cpu_ptr(vblk->batch, cpu));
	} else {
		for (i = 0; i < ARRAY_SIZE(p->held); i++)
			if (p->held[i])
				vbblk_unplug_batch(p, p->held[i]);
	}
	for_each_set_bit(i, p->kick, vblk->num_vqs)
		vbblk_vq_kick(&vblk->vqs[i]);
	/* blk_check_plugged() allocated it: count what plugs cost. */
	vbblk_stat_inc(vblk, VBBLK_STAT_PLUG_CALLBACKS);
	kfree(p);

	/* Remove may be waiting for the last plug to let go of vblk. */
	if (atomic_dec_and_test(&vblk->plug_refs))
		wake_up_var(&vblk->plug_refs);
}

/*
 * If the submitter holds a plug, make its unplug notify @vq and flush
 * batch @b (either may be NULL) and return true. Without a plug (or if
 * the callback cannot be allocated) return false: act now.
 */
bool vbblk_plug_note(struct vbblk *vblk, struct vbblk_vq *vq,
		     struct vbblk_batch *b)
{
	struct vbblk_plug_cb *p;
	struct blk_plug_cb *cb;

	/* Softirq submitters must not touch the interrupted task's plug. */
	if (!current->plug || !in_task() || READ_ONCE(vblk->draining))
		return false;
	cb = blk_check_plugged(vbblk_unplug, vblk, sizeof(*p));
	if (!cb)
		return false;
	p = container_of(cb, struct vbblk_plug_cb, cb);
	/* A new callback is zeroed: that is how we know to take a ref. */
	if (bitmap_empty(p->kick, VBBLK_MAX_QUEUES) && !p->held[0] &&
	    !p->held_more && (vq || b))
		atomic_inc(&vblk->plug_refs);
	if (vq)
		__set_bit(vq->index, p->kick);
	if (b && p->held[0] != b && p->held[1] != b) {
		if (!p->held[0])
			p->held[0] = b;
		else if (!p->held[1])
			p->held[1] = b;
		else
			p->held_more = true;
	}
	return true;
}

/* ---- Completion ---- */

/*
 * Device FLUSHes are shared. The device flushes for all the disk's
 * virtqueues at once, so a flush stage (fsync's empty PREFLUSH, a write's
 * PREFLUSH, a FUA write's POSTFLUSH) that finds no FLUSH running sends
 * one, and leads it; one that finds a FLUSH running waits for the next:
 * the running one may have started before the writes this stage must
 * cover completed. When a FLUSH completes, it ends its leader's and its
 * followers' stages, and the first waiter leads the next FLUSH for all
 * who waited. So every stage ends after a device FLUSH that started after
 * the stage was asked for, and N concurrent fsyncs cost about two device
 * FLUSHes, not N (blk-mq's flush machinery does the same for requests).
 */
static void vbblk_flush_stage(struct vbblk_bio_cmd *cmd, bool plugged)
{
	struct vbblk *vblk = cmd->vq->vblk;
	struct vbblk_flush *fl = &vblk->flush;
	unsigned long flags;
	bool lead;

	spin_lock_irqsave(&fl->lock, flags);
	lead = !fl->running;
	if (lead)
		fl->running = cmd;
	else
		list_add_tail(&cmd->flush_node, &fl->waiting);
	spin_unlock_irqrestore(&fl->lock, flags);
	if (lead) {
		vbblk_iohdr_init(vblk, &cmd->hdr, VIRTIO_BLK_T_FLUSH, 0);
		vbblk_bio_cmd_dispatch(cmd, plugged);
	}
}

static void vbblk_bio_stage_done(struct vbblk_bio_cmd *cmd, blk_status_t st);

/* The FLUSH @lead sent completed with @st. */
static void vbblk_flush_done(struct vbblk_bio_cmd *lead, blk_status_t st)
{
	struct vbblk *vblk = lead->vq->vblk;
	struct vbblk_flush *fl = &vblk->flush;
	struct vbblk_bio_cmd *cmd, *tmp, *next = NULL;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&fl->lock, flags);
	list_splice_init(&fl->covered, &done);
	if (!list_empty(&fl->waiting)) {
		next = list_first_entry(&fl->waiting, struct vbblk_bio_cmd,
					flush_node);
		list_del(&next->flush_node);
		list_splice_init(&fl->waiting, &fl->covered);
	}
	fl->running = next;
	spin_unlock_irqrestore(&fl->lock, flags);

	if (next) {
		vbblk_iohdr_init(vblk, &next->hdr, VIRTIO_BLK_T_FLUSH, 0);
		vbblk_bio_cmd_dispatch(next, false);
	}
	list_for_each_entry_safe(cmd, tmp, &done, flush_node) {
		list_del(&cmd->flush_node);
		vbblk_bio_stage_done(cmd, st);
	}
	vbblk_bio_stage_done(lead, st);
}

/* Start the stage after the one that completed; false if none is left. */
static bool vbblk_bio_next_stage(struct vbblk_bio_cmd *cmd)
{
	struct vbblk *vblk = cmd->vq->vblk;

	if (cmd->stage == VBBLK_STAGE_PREFLUSH && cmd->bytes) {
		/* The bio's own direction: a read may carry a PREFLUSH too. */
		cmd->stage = VBBLK_STAGE_DATA;
		vbblk_iohdr_init(vblk, &cmd->hdr, vbblk_rw_type(cmd->bio),
				 cmd->bio->bi_iter.bi_sector);
		vbblk_bio_cmd_dispatch(cmd, false);
		return true;
	}
	if (cmd->stage != VBBLK_STAGE_POSTFLUSH && cmd->postflush) {
		cmd->stage = VBBLK_STAGE_POSTFLUSH;
		vbblk_flush_stage(cmd, false);
		return true;
	}
	return false;
}

/*
 * Send the next bio of a failed batch on its own, reusing the command.
 * False when none is left.
 */
static bool vbblk_bio_retry_next(struct vbblk_bio_cmd *cmd)
{
	struct vbblk *vblk = cmd->vq->vblk;
	u32 type = virtio32_to_cpu(vblk->vdev, cmd->hdr.out.type);
	struct bio *bio = cmd->retry;

	if (!bio)
		return false;
	cmd->retry = bio->bi_next;
	vbblk_cmd_clear_bios(cmd);
	vbblk_cmd_add_bio(cmd, bio, vbblk_bio_segs(vblk, bio));
	vbblk_iohdr_init(vblk, &cmd->hdr, type, bio->bi_iter.bi_sector);
	vbblk_bio_cmd_dispatch(cmd, false);
	return true;
}

/*
 * One command came back (interrupt context, no lock held). A command in
 * a flush stage on the ring leads a shared FLUSH: its followers never are.
 */
void vbblk_bio_end_cmd(struct vbblk_iohdr *hdr)
{
	struct vbblk_bio_cmd *cmd = container_of(hdr, struct vbblk_bio_cmd, hdr);
	blk_status_t st = vbblk_status(hdr);

	if (cmd->stage != VBBLK_STAGE_DATA)
		vbblk_flush_done(cmd, st);
	else
		vbblk_bio_stage_done(cmd, st);
}

/* A command's stage ended with @st: the next stage, a retry, or the end. */
static void vbblk_bio_stage_done(struct vbblk_bio_cmd *cmd, blk_status_t st)
{
	if (!st && vbblk_bio_next_stage(cmd))
		return;
	/*
	 * A batch carries other submitters' bios: if it fails, send its bios
	 * again one by one, so that only those on bad sectors fail.
	 */
	if (unlikely(st == BLK_STS_IOERR && cmd->nr_bios > 1 &&
		     !cmd->retrying && !READ_ONCE(cmd->vq->vblk->broken))) {
		vbblk_stat_inc(cmd->vq->vblk, VBBLK_STAT_RETRIED);
		cmd->retrying = true;
		cmd->retry = cmd->bio;
		vbblk_bio_retry_next(cmd);
		return;
	}
	if (unlikely(cmd->retrying)) {
		if (!cmd->retry) {
			vbblk_bio_cmd_end(cmd, st);
			return;
		}
		vbblk_bio_end_chain(cmd->bio, st);
		vbblk_bio_retry_next(cmd);
		return;
	}
	vbblk_bio_cmd_end(cmd, st);
}

/* After a completion: re-add parked commands, then send held batches. */
void vbblk_bio_vq_done(struct vbblk_vq *vq)
{
	if (!list_empty(&vq->parked))
		vbblk_bio_readd_parked(vq);
	vbblk_batch_flush_vq(vq);
}

/* ---- submit_bio ---- */

static void vbblk_bio_send(struct vbblk *vblk, struct vbblk_bio_cmd *cmd)
{
	vbblk_bio_cmd_dispatch(cmd, vbblk_plug_note(vblk, cmd->vq, NULL));
}

/*
 * A read or write with PREFLUSH and/or FUA, or an empty flush: never
 * merged. A write is FLUSH (if PREFLUSH), the write, FLUSH (if FUA). A
 * read is FLUSH, then the read, for either flag, never a write and never
 * a flush after it: PREFLUSH asks for the flush first, and a FUA read is
 * one that returns what is on stable media (SBC READ with FUA, translated
 * the same way in vbblk_scsi.c), which the flush before it guarantees.
 * 6.1 lets such reads reach us; from 6.3 submit_bio refuses them.
 */
static void vbblk_bio_submit_flush(struct vbblk *vblk, struct bio *bio)
{
	struct vbblk_batch *b = raw_cpu_ptr(vblk->batch);
	bool write = op_is_write(bio_op(bio));
	struct vbblk_bio_cmd *cmd;

	/* Writes held on this CPU go first; the flush is a natural cut. */
	vbblk_batch_flush(b, VBBLK_STAT_DISPATCH_FLUSH,
			  vbblk_plug_note(vblk, b->vq, NULL));

	cmd = vbblk_bio_cmd_alloc(vblk, b->vq, bio);
	if (!cmd)
		return;
	vbblk_cmd_add_bio(cmd, bio,
			  bio->bi_iter.bi_size ? vbblk_bio_segs(vblk, bio) : 0);
	cmd->postflush = write && (bio->bi_opf & REQ_FUA) && cmd->bytes &&
			 !READ_ONCE(vbblk_debug_skip_fua_flush);

	if ((bio->bi_opf & REQ_PREFLUSH) || !write) {
		cmd->stage = VBBLK_STAGE_PREFLUSH;
		vbblk_flush_stage(cmd, vbblk_plug_note(vblk, cmd->vq, NULL));
	} else {
		cmd->stage = VBBLK_STAGE_DATA;
		vbblk_iohdr_init(vblk, &cmd->hdr, VIRTIO_BLK_T_OUT,
				 bio->bi_iter.bi_sector);
		vbblk_bio_send(vblk, cmd);
	}
}

/*
 * A polled read or write (REQ_POLLED: io_uring IOPOLL, preadv2 RWF_HIPRI)
 * goes alone to this CPU's poll queue, never batched: its submitter reaps
 * it through vbblk_poll_bio(), found by the queue index in bi_cookie.
 * With no command free it polls its queue itself, since a poll queue's
 * commands come back only when someone polls.
 */
static void vbblk_bio_submit_polled(struct vbblk *vblk, struct bio *bio)
{
	const struct blk_mq_queue_map *map = &vblk->tag_set.map[HCTX_TYPE_POLL];
	struct vbblk_vq *vq = &vblk->vqs[map->mq_map[raw_smp_processor_id()]];
	struct vbblk_bio_cmd *cmd;

	while (!(cmd = vbblk_get_cmd(vq))) {
		if (bio->bi_opf & REQ_NOWAIT) {
			vbblk_bio_would_block(vblk, bio);
			return;
		}
		/* Our plug may still hold the notify for what we wait on. */
		vbblk_vq_kick(vq);
		vbblk_vq_poll(vq);
		cond_resched();
	}
	vbblk_cmd_init(cmd);
	vbblk_cmd_add_bio(cmd, bio, vbblk_bio_segs(vblk, bio));
	vbblk_iohdr_init(vblk, &cmd->hdr, vbblk_rw_type(bio),
			 bio->bi_iter.bi_sector);
	WRITE_ONCE(bio->bi_cookie, vq->index);
	vbblk_bio_send(vblk, cmd);
}

int vbblk_poll_bio(struct bio *bio, struct io_comp_batch *iob,
		   unsigned int flags)
{
	struct block_device *bdev = READ_ONCE(bio->bi_bdev);
	blk_qc_t cookie = READ_ONCE(bio->bi_cookie);
	struct vbblk *vblk;

	/*
	 * A polled bio can complete (another task's poll reaped it) after
	 * bio_poll() read its bi_bdev: back in the bio cache its bi_bdev is
	 * NULL, and reused it may be another driver's. Nothing to poll then.
	 * Reused by one of our disks, it is in flight there, which keeps that
	 * disk's vqs; else bio_poll() holds the queue: vblk and its vqs stay.
	 */
	if (!bdev || bdev->bd_disk->fops->poll_bio != vbblk_poll_bio)
		return 0;
	vblk = bdev->bd_disk->private_data;
	if (cookie >= vblk->num_vqs ||
	    cookie < vbblk_io_vqs(vblk))
		return 0;
	return vbblk_vq_poll(&vblk->vqs[cookie]);
}

/* Discard, write-zeroes, secure erase: one range per command. */
static void vbblk_bio_submit_range(struct vbblk *vblk, struct bio *bio)
{
	struct request_queue *q = vblk->disk->queue;
	struct vbblk_vq *vq = raw_cpu_ptr(vblk->batch)->vq;
	struct vbblk_bio_cmd *cmd;
	u32 type;

	vbblk_op_type(bio_op(bio), &type);
	/* Not always split for us by 6.1: see vbblk_build_limits(). */
	if (type == VIRTIO_BLK_T_SECURE_ERASE &&
	    bio_sectors(bio) > q->limits.max_secure_erase_sectors) {
		struct bio *split;

		split = bio_split(bio, q->limits.max_secure_erase_sectors,
				  GFP_NOIO, &vblk->disk->bio_split);
		bio_chain(split, bio);
		submit_bio_noacct(bio);
		bio = split;
	}

	cmd = vbblk_bio_cmd_alloc(vblk, vq, bio);
	if (!cmd)
		return;
	cmd->bio = cmd->tail = bio;
	cmd->nr_bios = 1;
	cmd->range.sector = cpu_to_le64(bio->bi_iter.bi_sector);
	cmd->range.num_sectors = cpu_to_le32(bio_sectors(bio));
	cmd->range.flags = cpu_to_le32(vbblk_range_flags(vblk, bio->bi_opf));
	vbblk_iohdr_init(vblk, &cmd->hdr, type, bio->bi_iter.bi_sector);
	vbblk_bio_send(vblk, cmd);
}

/* A bio that passed the checks goes its way: each path below may sleep. */
static void vbblk_bio_route(struct vbblk *vblk, struct bio *bio)
{
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		if (op_is_flush(bio->bi_opf)) {
			/*
			 * Reads too: FLUSH, then the read. Flush stages run
			 * from interrupts: not polled.
			 */
			bio_clear_polled(bio);
			vbblk_bio_submit_flush(vblk, bio);
		} else if ((bio->bi_opf & REQ_POLLED) && vblk->num_poll_vqs &&
			   in_task()) {
			vbblk_bio_submit_polled(vblk, bio);
		} else {
			bio_clear_polled(bio);
			vbblk_batch_submit(vblk, bio);
		}
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
	case REQ_OP_SECURE_ERASE:
		bio_clear_polled(bio);
		vbblk_bio_submit_range(vblk, bio);
		break;
	default:
		bio->bi_status = BLK_STS_NOTSUPP;
		bio_endio(bio);
		break;
	}
}

/* Bios that found no free command where they could not sleep. */
static void vbblk_bio_defer_work(struct work_struct *work)
{
	struct vbblk *vblk = container_of(work, struct vbblk, defer_work);
	struct bio_list bios;
	struct bio *bio;

	spin_lock_irq(&vblk->defer_lock);
	bios = vblk->deferred;
	bio_list_init(&vblk->deferred);
	spin_unlock_irq(&vblk->defer_lock);
	while ((bio = bio_list_pop(&bios)))
		vbblk_bio_route(vblk, bio);
}

void vbblk_submit_bio(struct bio *bio)
{
	struct vbblk *vblk = bio->bi_bdev->bd_disk->private_data;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	vbblk_stat_inc(vblk, VBBLK_STAT_BIOS);

	/* A read-only device never sees a write; an empty flush is harmless. */
	if (unlikely(vblk->read_only && op_is_write(bio_op(bio)) &&
		     bio_sectors(bio))) {
		bio_io_error(bio);
		return;
	}
	vbblk_bio_route(vblk, bio);
}

/* ---- Setup and teardown ---- */

int vbblk_bio_init(struct vbblk *vblk)
{
	unsigned int i;

	spin_lock_init(&vblk->defer_lock);
	bio_list_init(&vblk->deferred);
	INIT_WORK(&vblk->defer_work, vbblk_bio_defer_work);
	spin_lock_init(&vblk->flush.lock);
	vblk->flush.running = NULL;
	INIT_LIST_HEAD(&vblk->flush.waiting);
	INIT_LIST_HEAD(&vblk->flush.covered);

	vblk->depth = min(vbblk_queue_depth,
			  virtqueue_get_vring_size(vblk->vqs[0].vq));
	/* Before anything can fail: vbblk_bio_exit() cancels them all. */
	for (i = 0; i < vblk->num_vqs; i++)
		INIT_DELAYED_WORK(&vblk->vqs[i].park_work, vbblk_bio_park_work);
	vblk->batch = alloc_percpu(struct vbblk_batch);
	if (!vblk->batch)
		goto fail;

	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];
		unsigned int j;

		atomic_set(&vq->bio_cmds, 0);
		spin_lock_init(&vq->free_lock);
		init_llist_head(&vq->free_cmds);
		/*
		 * The device reads and writes each command's header, status
		 * and range: one kmalloc each, never the vmalloc memory a
		 * large kvcalloc() falls back to on a fragmented guest.
		 */
		vq->cmds = kvcalloc(vblk->depth, sizeof(*vq->cmds), GFP_KERNEL);
		if (!vq->cmds)
			goto fail;
		for (j = 0; j < vblk->depth; j++) {
			struct vbblk_bio_cmd *cmd = kzalloc(sizeof(*cmd),
							    GFP_KERNEL);

			if (!cmd)
				goto fail;
			cmd->hdr.kind = VBBLK_KIND_BIO;
			cmd->vq = vq;
			vq->cmds[j] = cmd;
			llist_add(&cmd->free_node, &vq->free_cmds);
		}
		vq->sg = kvmalloc_array(vblk->sg_elems, sizeof(*vq->sg),
					GFP_KERNEL);
		if (!vq->sg || !zalloc_cpumask_var(&vq->cpus, GFP_KERNEL))
			goto fail;
	}

	vbblk_batch_init(vblk);
	return 0;
fail:
	vbblk_bio_exit(vblk);
	return -ENOMEM;
}

void vbblk_bio_exit(struct vbblk *vblk)
{
	unsigned int i;

	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];
		unsigned int j;

		/* Nothing is parked once drained; a probe failure never parks. */
		cancel_delayed_work_sync(&vq->park_work);
		kvfree(vq->sg);
		vq->sg = NULL;
		for (j = 0; vq->cmds && j < vblk->depth; j++)
			kfree(vq->cmds[j]);
		kvfree(vq->cmds);
		vq->cmds = NULL;
		free_cpumask_var(vq->cpus);
	}
	free_percpu(vblk->batch);
	vblk->batch = NULL;
	/* Idle once drained; a probe failure never queued it. */
	cancel_work_sync(&vblk->defer_work);
}

/*
 * Wait until no bio command is held, parked or on the ring. The caller
 * has stopped new bios (del_gendisk or a frozen queue), so held batches
 * are the last to go out, and no plug callback will run after this.
 */
void vbblk_bio_drain(struct vbblk *vblk)
{
	unsigned int i;

	WRITE_ONCE(vblk->draining, true);
	/* Deferred bios were admitted before new bios stopped: send them. */
	flush_work(&vblk->defer_work);
	vbblk_batch_flush_all(vblk, VBBLK_STAT_DISPATCH_DRAIN);
	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];

		/* Notifies a plug deferred: the plug may not be flushed yet. */
		vbblk_vq_kick(vq);
		if (i < vbblk_io_vqs(vblk)) {
			wait_event(vq->wait, !atomic_read(&vq->bio_cmds));
			continue;
		}
		/* Nobody may be polling a poll queue any more: reap it here. */
		while (atomic_read(&vq->bio_cmds)) {
			vbblk_vq_poll(vq);
			if (atomic_read(&vq->bio_cmds))
				usleep_range(50, 100);
		}
	}
	wait_var_event(&vblk->plug_refs, !atomic_read(&vblk->plug_refs));
	/* Nothing is parked now; a retry still queued must not outlive the rings. */
	for (i = 0; i < vblk->num_vqs; i++)
		cancel_delayed_work_sync(&vblk->vqs[i].park_work);
}
