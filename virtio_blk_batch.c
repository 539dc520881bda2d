// SPDX-License-Identifier: GPL-2.0
/*
 * Holding commands back, below the bio path and above bio commands: the
 * per-CPU batch, and the plug that defers notifies and holds batches.
 * Neither calls up: the bio path decides what may be batched and hands
 * down a command; this layer holds it, grows it, and sends it.
 *
 * Per-CPU batching: contiguous reads or writes with the same flags,
 * submitted on one CPU, grow one virtio command (one header, one status,
 * all the bios' segments in one scatterlist) within seg_max, size_max, the
 * transfer limit and the batch_max_* parameters.
 *
 * Hold policy. The 2011 RFC held bios for a 1 ms timer; its reviewers
 * rejected the added latency. Here a command is held back only while
 * something already promises to send it promptly:
 *   - the submitter's block plug: the unplug sends it (and the plug is
 *     flushed whenever the task sleeps); completions leave it alone, or
 *   - the bio continues a sequential stream and this CPU has more batch
 *     commands in flight than the batch has bios: the completion that
 *     brings the count down to the batch's size sends it. The device
 *     always has at least as much of ours queued as we hold back, so
 *     waiting costs no throughput, and a stream refilled one I/O at a time
 *     (QD32) grows batches while it waits. This also holds at unplug: a
 *     stream batch with I/O of its own in flight outlives the plug.
 *     Only this CPU's own commands count: CPUs may share a virtqueue, and
 *     another CPU's load, or passthrough commands, must never keep a batch
 *     waiting. While a batch is held its CPU's count only falls (the
 *     stream's bios join the batch), so the wait is bounded by what was
 *     in flight when it was held.
 * A bio that starts no stream on an idle queue goes out at once: a lone
 * QD1 bio never waits. There is no timer.
 *
 * A held command is also sent when the next bio does not fit (not
 * contiguous, other op/flags, a limit reached), when a FLUSH/FUA bio
 * arrives on the CPU, when the device is removed or frozen, and when the
 * CPU goes offline.
 */
#include <linux/cpuhotplug.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "vbblk.h"
#include "vbblk_trace.h"
#include "virtio_blk_batch.h"

static enum cpuhp_state vbblk_cpuhp_state;

static void vbblk_batch_unplug(struct vbblk_batch *b);

void vbblk_batch_init(struct vbblk *vblk)
{
	const struct blk_mq_queue_map *map = &vblk->tag_set.map[HCTX_TYPE_DEFAULT];
	int cpu;

	atomic_set(&vblk->plug_refs, 0);
	for_each_possible_cpu(cpu) {
		struct vbblk_batch *b = per_cpu_ptr(vblk->batch, cpu);

		spin_lock_init(&b->lock);
		atomic_set(&b->inflight, 0);
		b->cmd = NULL;
		b->plugged = false;
		b->last_end = 0;
		b->vq = &vblk->vqs[map->mq_map[cpu]];
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

/* vbblk_plug_note() for a submitter that holds a plug. */
bool vbblk_plug_note_plugged(struct vbblk *vblk, struct vbblk_vq *vq,
			     struct vbblk_batch *b)
{
	struct vbblk_plug_cb *p;
	struct blk_plug_cb *cb;

	/* Softirq submitters must not touch the interrupted task's plug. */
	if (!in_task() || READ_ONCE(vblk->draining))
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

/* ---- Batches ---- */

/*
 * Most bytes in one batch: batch_max_kb, and the queue's max_sectors_kb as
 * it is now (a user may lower it at any time).
 */
static unsigned int vbblk_batch_max_bytes(struct vbblk *vblk)
{
	return min_t(u64, (u64)vbblk_batch_max_kb << 10,
		     (u64)READ_ONCE(vblk->disk->queue->limits.max_sectors)
		     << SECTOR_SHIFT);
}

/*
 * Bios of one block device only: the command is accounted to its bios'
 * partition, and two partitions' bios can be contiguous.
 */
static bool vbblk_batch_fits(struct vbblk *vblk, struct vbblk_bio_cmd *cmd,
			     struct bio *bio, unsigned int segs)
{
	return bio->bi_opf == cmd->bio->bi_opf &&
	       bio->bi_bdev == cmd->bio->bi_bdev &&
	       !(bio->bi_opf & REQ_NOMERGE_FLAGS) &&
	       bio->bi_iter.bi_sector == cmd->end &&
	       cmd->nr_bios < READ_ONCE(vbblk_batch_max_bios) &&
	       cmd->nr_segs + segs <= vblk->sg_elems &&
	       cmd->bytes + bio->bi_iter.bi_size <= vbblk_batch_max_bytes(vblk);
}

/* No further bio could join: send it rather than hold it. */
static bool vbblk_batch_full(struct vbblk *vblk, struct vbblk_bio_cmd *cmd)
{
	return cmd->nr_bios >= READ_ONCE(vbblk_batch_max_bios) ||
	       cmd->nr_segs >= vblk->sg_elems ||
	       cmd->bytes + SECTOR_SIZE > vbblk_batch_max_bytes(vblk) ||
	       (cmd->bio->bi_opf & REQ_NOMERGE_FLAGS);
}

static void vbblk_batch_send(struct vbblk *vblk, struct vbblk_bio_cmd *cmd,
			     enum vbblk_stat reason)
{
	vbblk_batch_dispatch(cmd, reason,
			     vbblk_plug_note(vblk, cmd->vq, NULL));
}

/*
 * Keep a stream batch while this CPU has more batch commands in flight
 * than the batch has bios: the device stays busy with our I/O, and one of
 * our own completions is certain (with none in flight this is false, so
 * nothing is stranded). Caller holds b->lock and has ordered this read
 * after its own update.
 */
static bool vbblk_batch_keep(struct vbblk *vblk, struct vbblk_batch *b,
			     struct vbblk_bio_cmd *cmd)
{
	lockdep_assert_held(&b->lock);
	return b->stream && !READ_ONCE(vblk->draining) &&
	       atomic_read(&b->inflight) > cmd->nr_bios;
}

/*
 * Take what @b holds. From a completion, leave a batch that a plug holds
 * (its unplug will come) or that vbblk_batch_keep() still keeps.
 */
static struct vbblk_bio_cmd *vbblk_batch_take(struct vbblk_batch *b,
					      bool completion)
{
	struct vbblk_bio_cmd *cmd = NULL;
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	if (!completion || (b->cmd && !b->plugged &&
			    !vbblk_batch_keep(b->vq->vblk, b, b->cmd))) {
		cmd = b->cmd;
		WRITE_ONCE(b->cmd, NULL);
		b->plugged = false;
	}
	spin_unlock_irqrestore(&b->lock, flags);
	return cmd;
}

static void vbblk_batch_send_held(struct vbblk_bio_cmd *cmd,
				  enum vbblk_stat reason, bool plugged)
{
	if (cmd)
		vbblk_batch_dispatch(cmd, reason, plugged);
}

/*
 * vbblk_batch_cmd_done() found a batch held on the CPU of a command that
 * ended: it may go now. Batches a plug holds are left to the unplug,
 * which is certain to come, so a plugged submission is not cut short by
 * a completion that lands in the middle.
 */
void vbblk_batch_send_after(struct vbblk_batch *b)
{
	vbblk_batch_send_held(vbblk_batch_take(b, true),
			      VBBLK_STAT_DISPATCH_COMPLETION, false);
}

/*
 * Send what @b holds. With @plugged the caller's plug will notify
 * b->vq; otherwise notify now.
 */
static void vbblk_batch_flush(struct vbblk_batch *b, enum vbblk_stat reason,
			      bool plugged)
{
	vbblk_batch_send_held(vbblk_batch_take(b, false), reason, plugged);
}

/*
 * The plug that held @b is being flushed. A batch that continues a stream
 * on a busy queue stays held for the next completion (a stream refilled
 * one I/O per io_submit() is plugged one bio at a time); anything else is
 * sent, its notify left to the caller's unplug.
 */
static void vbblk_batch_unplug(struct vbblk_batch *b)
{
	struct vbblk_bio_cmd *cmd = NULL;
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	if (b->cmd && b->plugged) {
		b->plugged = false;
		/* Pairs with vbblk_batch_cmd_done(), as in vbblk_batch_hold(). */
		smp_mb();
		if (!vbblk_batch_keep(b->vq->vblk, b, b->cmd)) {
			cmd = b->cmd;
			WRITE_ONCE(b->cmd, NULL);
		}
	}
	spin_unlock_irqrestore(&b->lock, flags);
	vbblk_batch_send_held(cmd, VBBLK_STAT_DISPATCH_PLUG, true);
}

void vbblk_batch_flush_all(struct vbblk *vblk, enum vbblk_stat reason)
{
	int cpu;

	for_each_possible_cpu(cpu)
		vbblk_batch_flush(per_cpu_ptr(vblk->batch, cpu), reason, false);
}

/*
 * Try to leave @cmd in @b for later bios. Returns false when nothing
 * would send it promptly: the caller sends it now.
 */
static bool vbblk_batch_hold(struct vbblk *vblk, struct vbblk_batch *b,
			     struct vbblk_bio_cmd *cmd, bool plugged,
			     bool stream)
{
	unsigned long flags;
	bool held = false;

	if (!plugged && !stream)
		return false;
	if (vbblk_batch_full(vblk, cmd) || READ_ONCE(vblk->draining))
		return false;

	spin_lock_irqsave(&b->lock, flags);
	if (!b->cmd) {
		b->plugged = plugged;
		b->stream = stream;
		WRITE_ONCE(b->cmd, cmd);
		/* Pairs with vbblk_batch_cmd_done(): publish, then check. */
		smp_mb();
		held = plugged || vbblk_batch_keep(vblk, b, cmd);
		if (!held)
			WRITE_ONCE(b->cmd, NULL);
		else
			trace_vbblk_batch_hold(vblk, cmd, plugged, stream);
	}
	spin_unlock_irqrestore(&b->lock, flags);
	return held;
}

/* vbblk_batch_merge() when @b holds a command: under its lock. */
bool vbblk_batch_merge_held(struct vbblk *vblk, struct vbblk_batch *b,
			    struct bio *bio, unsigned int segs)
{
	struct vbblk_bio_cmd *cmd, *full = NULL;
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	cmd = b->cmd;
	if (cmd && vbblk_batch_fits(vblk, cmd, bio, segs)) {
		vbblk_bio_cmd_add_bio(cmd, bio, segs);
		vbblk_stat_inc(vblk, VBBLK_STAT_MERGED);
		WRITE_ONCE(b->last_end, cmd->end);
		b->stream = true;
		if (vbblk_batch_full(vblk, cmd)) {
			WRITE_ONCE(b->cmd, NULL);
			b->plugged = false;
			full = cmd;
		}
		spin_unlock_irqrestore(&b->lock, flags);
		if (full)
			vbblk_batch_send(vblk, full, VBBLK_STAT_DISPATCH_LIMIT);
		return true;
	}
	/* The held command cannot take this bio: it goes now. */
	WRITE_ONCE(b->cmd, NULL);
	b->plugged = false;
	WRITE_ONCE(b->last_end, bio_end_sector(bio));
	spin_unlock_irqrestore(&b->lock, flags);
	if (cmd)
		vbblk_batch_send(vblk, cmd, VBBLK_STAT_DISPATCH_NONCONTIG);
	return false;
}

/* vbblk_batch_add(), when the command might be held: a plug or a stream */
noinline void vbblk_batch_add_may_hold(struct vbblk *vblk, struct vbblk_batch *b,
				       struct vbblk_bio_cmd *cmd, bool hold,
				       bool stream)
{
	/* One look at the plug: its unplug notifies b->vq, sends @b's hold. */
	bool plugged = vbblk_plug_note(vblk, b->vq, hold ? b : NULL);

	if (!hold || !vbblk_batch_hold(vblk, b, cmd, plugged, stream))
		vbblk_batch_dispatch(cmd, VBBLK_STAT_DISPATCH_DIRECT, plugged);
}

/* A FLUSH/FUA bio on this CPU: what it holds goes first. */
void vbblk_batch_cut(struct vbblk *vblk)
{
	struct vbblk_batch *b = raw_cpu_ptr(vblk->batch);

	vbblk_batch_flush(b, VBBLK_STAT_DISPATCH_FLUSH,
			  vbblk_plug_note(vblk, b->vq, NULL));
}

/* No plug callback may run once the disk is drained. */
void vbblk_batch_wait_plugs(struct vbblk *vblk)
{
	wait_var_event(&vblk->plug_refs, !atomic_read(&vblk->plug_refs));
}

/* ---- CPU hotplug: no bio is left on a CPU that goes away ---- */

static int vbblk_cpu_offline(unsigned int cpu, struct hlist_node *node)
{
	struct vbblk *vblk = hlist_entry_safe(node, struct vbblk, cpuhp_node);

	vbblk_batch_flush(per_cpu_ptr(vblk->batch, cpu),
			  VBBLK_STAT_DISPATCH_CPU_OFFLINE, false);
	return 0;
}

int vbblk_batch_cpuhp_init(void)
{
	int ret;

	ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "block/vbblk:online",
				      NULL, vbblk_cpu_offline);
	if (ret < 0)
		return ret;
	vbblk_cpuhp_state = ret;
	return 0;
}

void vbblk_batch_cpuhp_exit(void)
{
	cpuhp_remove_multi_state(vbblk_cpuhp_state);
}

/*
 * Bio-mode disks, for what reaches all of them: CPU hotplug (through the
 * cpuhp instance) and turning batching off (vbblk_batch_release_all()).
 */
static LIST_HEAD(vbblk_batch_disks);
static DEFINE_MUTEX(vbblk_batch_disks_lock);

int vbblk_batch_add_disk(struct vbblk *vblk)
{
	int err;

	err = cpuhp_state_add_instance_nocalls(vbblk_cpuhp_state,
					       &vblk->cpuhp_node);
	if (err)
		return err;
	mutex_lock(&vbblk_batch_disks_lock);
	list_add_tail(&vblk->batch_node, &vbblk_batch_disks);
	mutex_unlock(&vbblk_batch_disks_lock);
	return 0;
}

void vbblk_batch_remove_disk(struct vbblk *vblk)
{
	mutex_lock(&vbblk_batch_disks_lock);
	list_del(&vblk->batch_node);
	mutex_unlock(&vbblk_batch_disks_lock);
	cpuhp_state_remove_instance_nocalls(vbblk_cpuhp_state,
					    &vblk->cpuhp_node);
}

/*
 * batch was set to 0: nothing may stay held on the strength of a policy
 * the user just turned off, so send every held batch now.
 */
void vbblk_batch_release_all(void)
{
	struct vbblk *vblk;

	mutex_lock(&vbblk_batch_disks_lock);
	list_for_each_entry(vblk, &vbblk_batch_disks, batch_node)
		vbblk_batch_flush_all(vblk, VBBLK_STAT_DISPATCH_DRAIN);
	mutex_unlock(&vbblk_batch_disks_lock);
}
