// SPDX-License-Identifier: GPL-2.0
/*
 * The bio path: submit_bio turns bios straight into virtio-blk commands,
 * with no request, tag or I/O scheduler in between.
 *
 * This is the top of the bio path; below it, in the order they are
 * called: batching and plugs (virtio_blk_batch.c), bio commands
 * (virtio_blk_bio_cmd.c), command building (vbblk_cmd.c), the ring
 * (virtio_ring_split.c). A command (struct vbblk_bio_cmd) carries one or more
 * bios: reads and writes may be batched, which may grow a command from
 * contiguous bios; everything else is one bio per command.
 *
 * Flow control: each virtqueue lends at most vblk->depth commands. A
 * submitter without one sleeps (REQ_NOWAIT bios get EAGAIN instead); a
 * command that meets a full ring anyway is parked by the command layer.
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
#include "vbblk_trace.h"
#include "virtio_blk_batch.h"

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
 * vbblk_bio_cmd_alloc() found none free. Sleeps for one unless the bio
 * is REQ_NOWAIT (then NULL, and the bio has ended with EAGAIN) or the
 * caller cannot sleep (then NULL, and the bio waits in vblk->deferred).
 */
static noinline struct vbblk_bio_cmd *
vbblk_bio_cmd_alloc_wait(struct vbblk *vblk, struct vbblk_vq *vq,
			 struct bio *bio)
{
	if (bio->bi_opf & REQ_NOWAIT) {
		vbblk_bio_would_block(vblk, bio);
		return NULL;
	}
	/*
	 * submit_bio from softirq (dm-crypt) must not sleep: the bio is sent
	 * again from a work item, which may. Nothing is dropped.
	 */
	if (unlikely(!in_task())) {
		vbblk_bio_defer(vblk, bio);
		return NULL;
	}
	/* Sleeping flushes our plug, so held batches go out first. */
	vbblk_stat_inc(vblk, VBBLK_STAT_RING_FULL_WAITS);
	return vbblk_bio_cmd_wait(vbblk_bvq(vq));
}

/* A command for @bio's submitter on @vq, or NULL: see above. */
static inline struct vbblk_bio_cmd *vbblk_bio_cmd_alloc(struct vbblk *vblk,
							struct vbblk_vq *vq,
							struct bio *bio)
{
	struct vbblk_bio_cmd *cmd = vbblk_bio_cmd_get(vbblk_bvq(vq));

	if (likely(cmd))
		return cmd;
	return vbblk_bio_cmd_alloc_wait(vblk, vq, bio);
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

/* Inlined: the common completion is this, from vbblk_bio_end_cmd(). */
static __always_inline void vbblk_bio_cmd_end(struct vbblk_bio_cmd *cmd,
					      blk_status_t st)
{
	vbblk_bio_cmd_end_acct(cmd);
	vbblk_bio_end_chain(cmd->bio, st);
	vbblk_batch_cmd_done(cmd);
	vbblk_bio_cmd_free(cmd);
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
	/*
	 * Traced before a follower is on fl->waiting: from there a FLUSH that
	 * completes on another CPU may end it, and its command be reused.
	 */
	trace_vbblk_flush_stage(vblk, cmd, cmd->stage == VBBLK_STAGE_POSTFLUSH,
				lead);
	if (lead) {
		fl->running = cmd;
		fl->started = ktime_get_ns();
	} else {
		list_add_tail(&cmd->flush_node, &fl->waiting);
	}
	spin_unlock_irqrestore(&fl->lock, flags);
	if (lead) {
		vbblk_iohdr_init(vblk, &cmd->hdr, VIRTIO_BLK_T_FLUSH, 0);
		vbblk_bio_cmd_dispatch(cmd, plugged);
	}
}

static noinline void vbblk_bio_stage_done(struct vbblk_bio_cmd *cmd,
					  blk_status_t st);

/* The FLUSH @lead sent completed with @st. */
static noinline void vbblk_flush_done(struct vbblk_bio_cmd *lead,
				      blk_status_t st)
{
	struct vbblk *vblk = lead->vq->vblk;
	struct vbblk_flush *fl = &vblk->flush;
	struct vbblk_bio_cmd *cmd, *tmp, *next = NULL;
	unsigned long flags;
	LIST_HEAD(done);
	u64 started;

	spin_lock_irqsave(&fl->lock, flags);
	list_splice_init(&fl->covered, &done);
	started = fl->started;
	if (!list_empty(&fl->waiting)) {
		next = list_first_entry(&fl->waiting, struct vbblk_bio_cmd,
					flush_node);
		list_del(&next->flush_node);
		list_splice_init(&fl->waiting, &fl->covered);
		fl->started = ktime_get_ns();
	}
	fl->running = next;
	spin_unlock_irqrestore(&fl->lock, flags);
	/* One device FLUSH, however many stages it ends: counted once. */
	vbblk_bio_cmd_acct_flush(lead, started);

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

/* Send the command's first remaining bio on its own (a retry). */
static void vbblk_bio_retry_send(struct vbblk_bio_cmd *cmd)
{
	struct vbblk *vblk = cmd->vq->vblk;
	u32 type = vbblk_iohdr_type(vblk, &cmd->hdr);
	struct bio *bio = cmd->bio;

	cmd->nr_segs = vbblk_bio_segs(vblk, bio);
	vbblk_iohdr_init(vblk, &cmd->hdr, type, bio->bi_iter.bi_sector);
	vbblk_bio_cmd_dispatch(cmd, false);
}

/*
 * One command came back (interrupt context, no lock held). A command in
 * a flush stage on the ring leads a shared FLUSH: its followers never are.
 */
static void vbblk_bio_end_cmd(struct vbblk_iohdr *hdr)
{
	struct vbblk_bio_cmd *cmd = container_of(hdr, struct vbblk_bio_cmd, hdr);
	blk_status_t st = vbblk_status(hdr);

	/* Most commands: data that went well, no flush stage after it. */
	if (likely(cmd->stage == VBBLK_STAGE_DATA && !st && !cmd->postflush &&
		   !cmd->retry.active)) {
		vbblk_bio_cmd_end(cmd, BLK_STS_OK);
		return;
	}
	if (cmd->stage != VBBLK_STAGE_DATA)
		vbblk_flush_done(cmd, st);
	else
		vbblk_bio_stage_done(cmd, st);
}

/*
 * A command's stage ended with @st: the next stage, a retry, or the end.
 * A batch carries other submitters' bios: if it fails, its bios are sent
 * again one by one (vbblk_retry_begin()), each ending with its own status.
 */
static noinline void vbblk_bio_stage_done(struct vbblk_bio_cmd *cmd,
					  blk_status_t st)
{
	struct bio *bio;

	if (!st && vbblk_bio_next_stage(cmd))
		return;
	if (unlikely(st) &&
	    vbblk_retry_begin(&cmd->retry, cmd->vq->vblk, st, cmd->nr_bios > 1,
			      cmd->bio->bi_iter.bi_sector)) {
		vbblk_bio_retry_send(cmd);
		return;
	}
	if (unlikely(cmd->retry.active) && cmd->bio != cmd->tail) {
		bio = cmd->bio;
		cmd->bio = bio->bi_next;
		bio->bi_next = NULL;
		vbblk_bio_end_chain(bio, st);
		vbblk_bio_retry_send(cmd);
		return;
	}
	vbblk_bio_cmd_end(cmd, st);
}

/* ---- submit_bio ---- */

/* A command that is never batched; a plug defers its notify. */
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
static noinline void vbblk_bio_submit_flush(struct vbblk *vblk,
					    struct bio *bio)
{
	bool write = op_is_write(bio_op(bio));
	struct vbblk_bio_cmd *cmd;

	/* Writes held on this CPU go first; the flush is a natural cut. */
	vbblk_batch_cut(vblk);

	cmd = vbblk_bio_cmd_alloc(vblk, vbblk_batch_this(vblk)->vq, bio);
	if (!cmd)
		return;
	vbblk_bio_cmd_first(cmd, bio, bio->bi_iter.bi_size ?
				 vbblk_bio_segs(vblk, bio) : 0);
	cmd->postflush = write && (bio->bi_opf & REQ_FUA) && cmd->bytes &&
			 !vbblk_skip_fua_flush();

	if ((bio->bi_opf & REQ_PREFLUSH) || !write) {
		cmd->stage = VBBLK_STAGE_PREFLUSH;
		vbblk_flush_stage(cmd, vbblk_plug_note(vblk, cmd->vq, NULL));
	} else {
		cmd->stage = VBBLK_STAGE_DATA;
		vbblk_iohdr_init(vblk, &cmd->hdr, vbblk_rw_type(bio),
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
static noinline void vbblk_bio_submit_polled(struct vbblk *vblk,
					     struct bio *bio)
{
	const struct blk_mq_queue_map *map = &vblk->tag_set.map[HCTX_TYPE_POLL];
	struct vbblk_vq *vq = &vblk->vqs[map->mq_map[raw_smp_processor_id()]];
	struct vbblk_bio_cmd *cmd;

	while (!(cmd = vbblk_bio_cmd_get(vbblk_bvq(vq)))) {
		if (bio->bi_opf & REQ_NOWAIT) {
			vbblk_bio_would_block(vblk, bio);
			return;
		}
		/* Our plug may still hold the notify for what we wait on. */
		vbblk_vq_kick(vq);
		vbblk_vq_poll(vq);
		cond_resched();
	}
	vbblk_bio_cmd_first(cmd, bio, vbblk_bio_segs(vblk, bio));
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

/*
 * A read or write: batching (when on) may add it to this CPU's held
 * command; else it gets a command of its own, which may be held in turn.
 */
static __always_inline void vbblk_bio_submit_rw(struct vbblk *vblk,
						struct bio *bio)
{
	struct vbblk_batch *b = vbblk_batch_this(vblk);
	bool batch = READ_ONCE(vbblk_batch), stream = false;
	unsigned int segs = vbblk_bio_segs(vblk, bio);
	struct vbblk_bio_cmd *cmd;

	if (batch) {
		/* Does @bio continue this CPU's last one? */
		stream = bio->bi_iter.bi_sector == READ_ONCE(b->last_end);
		if (vbblk_batch_merge(vblk, b, bio, segs))
			return;
	}
	/* b->vq, not this CPU's: the command stays with @b if we sleep. */
	cmd = vbblk_bio_cmd_alloc(vblk, b->vq, bio);
	if (!cmd)
		return;
	vbblk_bio_cmd_first(cmd, bio, segs);
	vbblk_iohdr_init(vblk, &cmd->hdr, vbblk_rw_type(bio),
			 bio->bi_iter.bi_sector);
	vbblk_batch_add(vblk, b, cmd, batch, stream);
}

/* Discard, write-zeroes, secure erase: one range per command. */
static noinline void vbblk_bio_submit_range(struct vbblk *vblk,
					    struct bio *bio)
{
	struct request_queue *q = vblk->disk->queue;
	struct vbblk_bio_cmd *cmd;
	u32 type;

	type = vbblk_op_type(bio_op(bio));
	/*
	 * Not always split for us by 6.1: see vbblk_build_limits(). Pieces
	 * stay whole logical blocks, whatever the device's limit.
	 */
	if (type == VIRTIO_BLK_T_SECURE_ERASE &&
	    bio_sectors(bio) > q->limits.max_secure_erase_sectors) {
		unsigned int lbs = queue_logical_block_size(q) >> SECTOR_SHIFT;
		struct bio *split;

		split = bio_split(bio, max(round_down(q->limits.max_secure_erase_sectors,
						      lbs), lbs),
				  GFP_NOIO, &vblk->disk->bio_split);
		bio_chain(split, bio);
		submit_bio_noacct(bio);
		bio = split;
	}

	cmd = vbblk_bio_cmd_alloc(vblk, vbblk_batch_this(vblk)->vq, bio);
	if (!cmd)
		return;
	/* No data segments: the range is the payload. */
	vbblk_bio_cmd_first(cmd, bio, 0);
	cmd->bytes = 0;
	vbblk_range_set(&cmd->range, bio->bi_iter.bi_sector, bio_sectors(bio),
			vbblk_range_flags(vblk, bio->bi_opf));
	vbblk_iohdr_init(vblk, &cmd->hdr, type, bio->bi_iter.bi_sector);
	vbblk_bio_send(vblk, cmd);
}

/*
 * A bio that passed the checks goes its way: each path below may sleep.
 * Inlined into submit_bio with the plain read/write path; the others are
 * calls.
 */
static __always_inline void vbblk_bio_route(struct vbblk *vblk,
					    struct bio *bio)
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
			vbblk_bio_submit_rw(vblk, bio);
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

/*
 * Suspended: park @bio until the rings are back, or fail it if they will
 * not be. False if no longer suspended (checked under the lock resume
 * takes, so nothing parks after the parked bios were sent).
 */
static noinline bool vbblk_bio_park(struct vbblk *vblk, struct bio *bio)
{
	unsigned long flags;
	bool fail;

	spin_lock_irqsave(&vblk->defer_lock, flags);
	if (!vblk->suspended) {
		spin_unlock_irqrestore(&vblk->defer_lock, flags);
		return false;
	}
	fail = READ_ONCE(vblk->broken);
	if (!fail) {
		/* Sent later from a work item, which nobody polls for. */
		bio_clear_polled(bio);
		bio_list_add(&vblk->parked, bio);
	}
	spin_unlock_irqrestore(&vblk->defer_lock, flags);
	if (fail)
		bio_io_error(bio);
	return true;
}

void vbblk_submit_bio(struct bio *bio)
{
	struct vbblk *vblk = bio->bi_bdev->bd_disk->private_data;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	vbblk_stat_inc(vblk, VBBLK_STAT_BIOS);
	trace_vbblk_bio_queue(vblk, bio);

	/* A read-only device never sees a write; an empty flush is harmless. */
	if (unlikely(vblk->read_only && op_is_write(bio_op(bio)) &&
		     bio_sectors(bio))) {
		bio_io_error(bio);
		return;
	}
	if (unlikely(READ_ONCE(vblk->suspended)) && vbblk_bio_park(vblk, bio))
		return;
	vbblk_bio_route(vblk, bio);
}

/* ---- Setup and teardown ---- */

int vbblk_bio_init(struct vbblk *vblk)
{
	int err;

	spin_lock_init(&vblk->defer_lock);
	bio_list_init(&vblk->deferred);
	bio_list_init(&vblk->parked);
	vblk->suspended = false;
	INIT_WORK(&vblk->defer_work, vbblk_bio_defer_work);
	spin_lock_init(&vblk->flush.lock);
	vblk->flush.running = NULL;
	INIT_LIST_HEAD(&vblk->flush.waiting);
	INIT_LIST_HEAD(&vblk->flush.covered);

	err = vbblk_bio_cmds_init(vblk, vbblk_bio_end_cmd);
	if (err)
		return err;
	vblk->batch = alloc_percpu(struct vbblk_batch);
	if (!vblk->batch) {
		vbblk_bio_cmds_exit(vblk);
		return -ENOMEM;
	}
	vbblk_batch_init(vblk);
	return 0;
}

void vbblk_bio_exit(struct vbblk *vblk)
{
	free_percpu(vblk->batch);
	vblk->batch = NULL;
	vbblk_bio_cmds_exit(vblk);
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
	WRITE_ONCE(vblk->draining, true);
	/* Deferred bios were admitted before new bios stopped: send them. */
	flush_work(&vblk->defer_work);
	vbblk_batch_flush_all(vblk, VBBLK_STAT_DISPATCH_DRAIN);
	vbblk_bio_cmds_drain(vblk);
	vbblk_batch_wait_plugs(vblk);
}

/*
 * The rings are about to go (system suspend): new bios park from here on.
 * The caller then freezes the queue, which waits out the submitters that
 * looked before this (the freeze's RCU grace period orders the flag
 * before any later look), and drains what they sent.
 */
void vbblk_bio_suspend(struct vbblk *vblk)
{
	spin_lock_irq(&vblk->defer_lock);
	WRITE_ONCE(vblk->suspended, true);
	spin_unlock_irq(&vblk->defer_lock);
}

/*
 * The rings are back, or will never be (vblk->broken): parked bios go the
 * bio path from the work item, or fail.
 */
void vbblk_bio_resume(struct vbblk *vblk)
{
	struct bio_list fail = BIO_EMPTY_LIST;
	struct bio *bio;
	bool send;

	WRITE_ONCE(vblk->draining, false);
	spin_lock_irq(&vblk->defer_lock);
	if (READ_ONCE(vblk->broken)) {
		/* Stays suspended: a late bio fails in vbblk_bio_park(). */
		bio_list_merge(&fail, &vblk->parked);
	} else {
		WRITE_ONCE(vblk->suspended, false);
		bio_list_merge(&vblk->deferred, &vblk->parked);
	}
	bio_list_init(&vblk->parked);
	send = !bio_list_empty(&vblk->deferred);
	spin_unlock_irq(&vblk->defer_lock);
	while ((bio = bio_list_pop(&fail)))
		bio_io_error(bio);
	if (send)
		queue_work(system_wq, &vblk->defer_work);
}
