// SPDX-License-Identifier: GPL-2.0
/*
 * The ring layer, the lowest: every command reaches the device here. The
 * name is the 2011 RFC's "virtio: support unlocked queue kick", whose
 * split this carries.
 *
 * Submission is split in two: buffers are added and the kick is prepared
 * under the virtqueue lock; the notify (a VM exit on real hardware) is sent
 * by the caller after dropping it, so other CPUs can fill the ring meanwhile.
 * Completion drains the used ring under the lock into a chain, and each
 * command is ended after the lock is released through the ->end callback
 * its issuer set: the ring never knows which path a command came from.
 * A path refused for lack of room asks to be called back when a reap
 * frees some (vbblk_vq_want_room()); its own ring-full state stays its own.
 *
 * The ring core gives a command of more than one buffer an indirect table,
 * allocated and freed per command, unless its queue was made without them
 * (find_vqs' ctx). Where the device has two queues per queue we use, each
 * vbblk_vq pairs a direct ring for small commands with an indirect one
 * (->big) for large ones and for small ones the direct ring has no room
 * for: a 4k command then costs no allocation, a 1 MiB one still one
 * descriptor. Both rings are under the one lock.
 */
#include <linux/error-injection.h>
#include <linux/interrupt.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>

#include "vbblk.h"
#include "include/vbblk_compat.h"
#include "vbblk_trace.h"
#include "virtio_ring_split.h"

/* The cmd_queue tracepoint, with the descriptors the command takes. */
noinline void vbblk_vq_trace_queue(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
				   struct scatterlist **sgs, unsigned int n)
{
	unsigned int i, descs = 0;

	for (i = 0; i < n; i++)
		descs += sg_nents(sgs[i]);
	trace_vbblk_cmd_queue(vq, hdr, descs);
}

/*
 * A legacy SCSI passthrough command. The device finds each part by its
 * position, so each gets its own descriptor: out header, CDB, data out;
 * then data in, sense, SCSI status header, status byte.
 */
int vbblk_vq_add_scsi(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
		      struct vbblk_scsi_io *sio, struct scatterlist *data,
		      bool data_out)
{
	struct scatterlist cdb_sg, sense_sg, inhdr_sg, *sgs[6];
	unsigned int n = 0, n_out = 2, n_in = 3;

	sg_init_one(&cdb_sg, sio->cdb, sio->cdb_len);
	sg_init_one(&sense_sg, sio->sense, sizeof(sio->sense));
	sg_init_one(&inhdr_sg, &sio->inhdr, sizeof(sio->inhdr));

	sgs[n++] = &hdr->out_sg;
	sgs[n++] = &cdb_sg;
	if (data && data_out) {
		sgs[n++] = data;
		n_out++;
	} else if (data) {
		sgs[n++] = data;
		n_in++;
	}
	sgs[n++] = &sense_sg;
	sgs[n++] = &inhdr_sg;
	sgs[n++] = &hdr->status_sg;

	/* Rare and up to six parts beside the data: the indirect ring. */
	return vbblk_vq_add_sgs(vq, hdr, VIRTIO_BLK_T_SCSI_CMD, sgs, n_out,
				n_in, 0);
}

/* vbblk_vq_notify() of a pair's rings, the indirect one among them. */
void vbblk_vq_notify_rings(struct vbblk_vq *vq, unsigned int rings)
{
	if (rings & VBBLK_KICK_DIRECT)
		vbblk_vq_notify_one(vq, false);
	if (rings & VBBLK_KICK_BIG)
		vbblk_vq_notify_one(vq, true);
}

/* Both halves, for callers that do not hold the lock. */
void vbblk_vq_kick(struct vbblk_vq *vq)
{
	unsigned long flags;
	unsigned int notify;

	spin_lock_irqsave(&vq->lock, flags);
	notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);
	if (notify)
		vbblk_vq_notify(vq, notify);
}

/*
 * Call @fn once after the next reap of @vq, which frees room: for a path
 * whose command did not fit. Caller holds vq->lock, so a reap that frees
 * the room after the refusal sees the request.
 */
void vbblk_vq_want_room(struct vbblk_vq *vq, vbblk_vq_fn fn)
{
	unsigned int i;

	lockdep_assert_held(&vq->lock);
	for (i = 0; i < ARRAY_SIZE(vq->room); i++) {
		if (vq->room[i] == fn)
			return;
		if (!vq->room[i]) {
			vq->room[i] = fn;
			return;
		}
	}
	WARN_ON_ONCE(1);	/* more waiters than paths */
}

/*
 * Run the room requests, taken under the lock and called without it.
 * After a reap that freed room; a request made since that reap is run
 * too, and at worst retries once more for nothing.
 */
static noinline void vbblk_vq_run_room(struct vbblk_vq *vq)
{
	vbblk_vq_fn room[VBBLK_ROOM_WAITERS];
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&vq->lock, flags);
	for (i = 0; i < VBBLK_ROOM_WAITERS; i++) {
		room[i] = vq->room[i];
		vq->room[i] = NULL;
	}
	spin_unlock_irqrestore(&vq->lock, flags);
	/* Filled from the first slot; the rest unset when it is empty. */
	for (i = 0; i < VBBLK_ROOM_WAITERS && room[i]; i++)
		room[i](vq);
}

/* Take @ring's used buffers onto the chain at @tail; returns its new tail. */
static struct vbblk_iohdr **vbblk_vq_get_bufs(struct vbblk_vq *vq,
					      struct virtqueue *ring,
					      struct vbblk_iohdr **tail)
{
	struct vbblk_iohdr *hdr;

	while ((hdr = virtqueue_get_buf(ring, &vq->used_len)) != NULL) {
		*tail = hdr;
		tail = &hdr->done_next;
		WRITE_ONCE(vq->inflight, vq->inflight - 1);
		WRITE_ONCE(vq->completed, vq->completed + 1);
	}
	return tail;
}

/*
 * Whether a pair's indirect ring holds commands (each takes one of its
 * descriptors until reaped): an idle one is left alone by a reap, its
 * callbacks on, so it costs nothing.
 */
static bool vbblk_vq_big_busy(struct vbblk_vq *vq)
{
	return vq->big &&
	       vq->big->num_free < vq->big_size;
}

/*
 * Take every used buffer off the ring (a pair's two), oldest first in
 * each; *@room: some path waits for the room it freed. An interrupt-driven
 * queue's callbacks are re-enabled before returning, and the loop
 * re-checks for buffers that raced with re-enabling, so no completion is
 * left without an interrupt. A poll queue (@polled) keeps its callbacks
 * off: one pass.
 */
static __always_inline struct vbblk_iohdr *
vbblk_vq_reap(struct vbblk_vq *vq, bool polled, bool *room)
{
	struct vbblk_iohdr *head, **tail = &vq->reaped;
	unsigned long flags;
	bool big;

	spin_lock_irqsave(&vq->lock, flags);
	/*
	 * Nothing is added while we hold the lock; once turned off here the
	 * indirect ring's callbacks must be turned back on, even if it drains.
	 */
	big = vbblk_vq_big_busy(vq);
	for (;;) {
		if (!polled)
			virtqueue_disable_cb(vq->vq);
		tail = vbblk_vq_get_bufs(vq, vq->vq, tail);
		if (big) {
			if (!polled)
				virtqueue_disable_cb(vq->big);
			tail = vbblk_vq_get_bufs(vq, vq->big, tail);
		}
		if (polled)
			break;
		/*
		 * Both back on, or round again for what raced with it. A
		 * broken ring reports itself back on (virtqueue_poll() is
		 * false for it): checked only when it does not.
		 */
		if (virtqueue_enable_cb(vq->vq) &&
		    (!big || virtqueue_enable_cb(vq->big)))
			break;
		if (unlikely(virtqueue_is_broken(vq->vq)))
			break;
	}
	*tail = NULL;
	head = vq->reaped;
	/*
	 * Only a reap that freed room wakes those waiting for it: a poller
	 * spinning on an idle ring would wake them on every empty pass.
	 * Requests fill the slots from the first: an empty one means none.
	 */
	*room = head && vq->room[0];
	spin_unlock_irqrestore(&vq->lock, flags);

	return head;
}

/*
 * End a reaped chain, outside the lock; returns how many ended. Then the
 * paths that wanted room retry. This and the reap are inlined into the
 * interrupt handler and the poller: a completion is one frame here.
 */
static __always_inline int vbblk_vq_end_chain(struct vbblk_vq *vq,
					      struct vbblk_iohdr *done,
					      bool room, vbblk_batch_fn add,
					      void *batch)
{
	struct vbblk_iohdr *next;
	int n = 0;

	for (; done; done = next, n++) {
		/* A command may be reused once ended: read the link first. */
		next = done->done_next;
		trace_vbblk_cmd_complete(vq, done);
		if (!add || !add(done, batch))
			done->end(done);
	}
	if (unlikely(room))
		vbblk_vq_run_room(vq);
	return n;
}

/* An interrupt on one of @vq's rings: reap both, end what came back. */
static __always_inline void vbblk_vq_irq(struct vbblk_vq *vq)
{
	struct vbblk_iohdr *done;
	bool room;

	done = vbblk_vq_reap(vq, false, &room);
	vbblk_vq_end_chain(vq, done, room, NULL, NULL);
}

/*
 * The interrupt-driven rings' callbacks. Their rings come first, vq K's
 * direct ring at index K and, paired, its indirect ring at K plus their
 * count (vbblk_init_vqs()): each finds its vbblk_vq in one subtraction.
 */
static void vbblk_vq_done(struct virtqueue *_vq)
{
	struct vbblk *vblk = _vq->vdev->priv;

	vbblk_vq_irq(&vblk->vqs[_vq->index]);
}

static void vbblk_vq_big_done(struct virtqueue *_vq)
{
	struct vbblk *vblk = _vq->vdev->priv;

	vbblk_vq_irq(&vblk->vqs[_vq->index - vbblk_io_vqs(vblk)]);
}

/*
 * A poll queue's callback. It exists only so the queue gets an interrupt
 * vector: QEMU hands a vhost-user backend no call eventfd for a queue
 * without one, and libvhost-user (qemu-storage-daemon) treats its first
 * signal on such a queue as fatal and drops the connection, which cost a
 * reconnect (about a second) per polled I/O. Its signals are suppressed
 * (see vbblk_init_vqs()); one that still comes, such as the first after
 * the device starts, finds the poller's work left to the poller.
 */
static void vbblk_vq_poll_signal(struct virtqueue *_vq)
{
}

/*
 * Reap a poll queue: the caller polls for its own I/O (blk-mq ->poll or
 * ->poll_bio). Each command is offered to @add with the poller's @batch
 * (blk-mq's io_comp_batch, which its poller ends in one go later); one
 * @add refuses, or all without @add, end now through ->end. Returns the
 * commands reaped.
 */
int vbblk_vq_poll_batch(struct vbblk_vq *vq, vbblk_batch_fn add, void *batch)
{
	struct vbblk_iohdr *done;
	bool room;

	done = vbblk_vq_reap(vq, true, &room);
	return vbblk_vq_end_chain(vq, done, room, add, batch);
}

int vbblk_vq_poll(struct vbblk_vq *vq)
{
	return vbblk_vq_poll_batch(vq, NULL, NULL);
}

/*
 * Reap every poll queue, for a drain whose pollers may never poll again
 * (frozen tasks, rings the gate refuses): polled commands raise no
 * interrupt.
 */
void vbblk_vqs_poll_all(struct vbblk *vblk)
{
	unsigned int i;

	for (i = vblk->num_vqs - vblk->num_poll_vqs; i < vblk->num_vqs; i++)
		vbblk_vq_poll(&vblk->vqs[i]);
}

/*
 * Paired, the device's queues are the interrupt-driven direct rings, their
 * indirect rings, then the same two for the poll queues; vq @i's direct
 * ring, and its indirect one. Spread as two sets (vbblk_vq_calc_sets()),
 * a direct ring and its indirect one get the same CPUs: a large command
 * completes on its submitter's CPU too, where its indirect table is freed.
 */
static unsigned int vbblk_vq_direct_index(unsigned int i, unsigned int io,
					  bool paired)
{
	return paired && i >= io ? io + i : i;
}

static unsigned int vbblk_vq_big_index(unsigned int i, unsigned int io,
				       unsigned int npoll)
{
	return i >= io ? io + npoll + i : io + i;
}

static void vbblk_vq_calc_sets(struct irq_affinity *affd, unsigned int nvecs)
{
	affd->nr_sets = 2;
	affd->set_size[0] = nvecs / 2;
	affd->set_size[1] = nvecs - nvecs / 2;
}

/*
 * Find up to @want request virtqueues (fewer if the device has fewer) and
 * spread their interrupts over the CPUs; @paired: each with an indirect
 * ring beside it, which needs twice as many from the device. Keeps the vqs
 * array across freeze/restore so the count must not change then.
 */
int vbblk_init_vqs(struct vbblk *vblk, unsigned int want, unsigned int npoll,
		   bool paired)
{
	struct virtio_device *vdev = vblk->vdev;
	unsigned int io = want - npoll, n = paired ? 2 * want : want;
	/* Poll queues come last: their vectors stay out of the CPU spread. */
	struct irq_affinity desc = {
		.post_vectors = paired ? 2 * npoll : npoll,
		.calc_sets = paired ? vbblk_vq_calc_sets : NULL,
	};
	vq_callback_t **callbacks;
	struct virtqueue **vqs;
	const char **names;
	bool *ctx;
	bool fresh = !vblk->vqs;
	unsigned int i, di, bi;
	int err = -ENOMEM;

	vqs = kcalloc(n, sizeof(*vqs), GFP_KERNEL);
	callbacks = kcalloc(n, sizeof(*callbacks), GFP_KERNEL);
	names = kcalloc(n, sizeof(*names), GFP_KERNEL);
	ctx = kcalloc(n, sizeof(*ctx), GFP_KERNEL);
	if (fresh)
		vblk->vqs = kcalloc(want, sizeof(*vblk->vqs), GFP_KERNEL);
	if (!vqs || !callbacks || !names || !ctx || !vblk->vqs)
		goto out;

	for (i = 0; i < want; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];

		spin_lock_init(&vq->lock);
		vq->vblk = vblk;
		vq->index = i;
		vq->inflight = 0;
		vq->added = 0;
		memset(vq->room, 0, sizeof(vq->room));
		di = vbblk_vq_direct_index(i, io, paired);
		if (i < io) {
			snprintf(vq->name, sizeof(vq->name), "req.%u", i);
			callbacks[di] = vbblk_vq_done;
		} else {
			snprintf(vq->name, sizeof(vq->name), "poll.%u", i - io);
			callbacks[di] = vbblk_vq_poll_signal;
		}
		names[di] = vq->name;
		if (!paired)
			continue;
		/* A pair's direct ring: no indirect tables on it. */
		ctx[di] = true;
		/* reqbig.K, pollbig.K: the interrupts of vq K's pair */
		bi = vbblk_vq_big_index(i, io, npoll);
		snprintf(vq->big_name, sizeof(vq->big_name), "%sbig.%s",
			 i < io ? "req" : "poll", strchr(vq->name, '.') + 1);
		callbacks[bi] = i < io ? vbblk_vq_big_done : callbacks[di];
		names[bi] = vq->big_name;
	}

	err = vbblk_find_vqs(vdev, n, vqs, callbacks, names, ctx, &desc);
	if (err)
		goto out;

	for (i = 0; i < want; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];

		vq->vq = vqs[vbblk_vq_direct_index(i, io, paired)];
		vq->big = paired ? vqs[vbblk_vq_big_index(i, io, npoll)] : NULL;
		vq->big_size = paired ? virtqueue_get_vring_size(vq->big) : 0;
		/* Reaped by polling: ask the device not to signal. */
		if (i >= io) {
			virtqueue_disable_cb(vq->vq);
			if (vq->big)
				virtqueue_disable_cb(vq->big);
		}
	}
	vblk->num_vqs = want;
	vblk->num_poll_vqs = npoll;
	vblk->paired = paired;
out:
	if (err && fresh) {
		kfree(vblk->vqs);
		vblk->vqs = NULL;
	}
	kfree(ctx);
	kfree(names);
	kfree(callbacks);
	kfree(vqs);
	return err;
}
/* A failed restore on any kernel with fail_function (test: restore_ext4). */
ALLOW_ERROR_INJECTION(vbblk_init_vqs, ERRNO);

/* The device must already be reset: no callback can run after this. */
void vbblk_del_vqs(struct vbblk *vblk)
{
	vblk->vdev->config->del_vqs(vblk->vdev);
}

/* Commands on the rings, and how many ever came back (lockless reads). */
unsigned int vbblk_vqs_inflight(struct vbblk *vblk)
{
	unsigned int i, n = 0;

	for (i = 0; i < vblk->num_vqs; i++)
		n += READ_ONCE(vblk->vqs[i].inflight);
	return n;
}

unsigned long vbblk_vqs_completed(struct vbblk *vblk)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < vblk->num_vqs; i++)
		n += READ_ONCE(vblk->vqs[i].completed);
	return n;
}

/* Take back what @ring never gave the device, as failed, onto @tail. */
static struct vbblk_iohdr **vbblk_vq_detach(struct vbblk_vq *vq,
					    struct virtqueue *ring,
					    struct vbblk_iohdr **tail)
{
	struct vbblk_iohdr *hdr;

	while ((hdr = virtqueue_detach_unused_buf(ring)) != NULL) {
		hdr->status = VIRTIO_BLK_S_IOERR;
		*tail = hdr;
		tail = &hdr->done_next;
		WRITE_ONCE(vq->inflight, vq->inflight - 1);
	}
	return tail;
}

/*
 * Give up on a device that stopped answering (its vhost-user backend
 * died): reset it, after which it never touches our buffers again, end
 * what it had completed as it said and everything else it held with an
 * I/O error. From here on the ring refuses
 * every command (vblk->broken), so the paths that wanted room, called
 * now, fail what they kept back, and new I/O fails at once, including the
 * bio-by-bio retries the errors would otherwise start.
 */
void vbblk_vqs_abort(struct vbblk *vblk)
{
	unsigned int i;

	WRITE_ONCE(vblk->broken, true);
	virtio_reset_device(vblk->vdev);
	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];
		struct vbblk_iohdr *head = NULL, **tail = &head;
		unsigned long flags;

		spin_lock_irqsave(&vq->lock, flags);
		/*
		 * What the device completed before the reset, not yet reaped
		 * (a poll queue nobody polls), ends with the device's status;
		 * the rest fails.
		 */
		tail = vbblk_vq_get_bufs(vq, vq->vq, tail);
		if (vq->big)
			tail = vbblk_vq_get_bufs(vq, vq->big, tail);
		tail = vbblk_vq_detach(vq, vq->vq, tail);
		if (vq->big)
			tail = vbblk_vq_detach(vq, vq->big, tail);
		*tail = NULL;
		spin_unlock_irqrestore(&vq->lock, flags);
		/* Every path that wanted room: each fails what it kept back. */
		vbblk_vq_end_chain(vq, head, true, NULL, NULL);
	}
}
