/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ring layer's add (virtio_ring_split.c has the rest), inline in the
 * files that queue commands: the add is the last step of every command's
 * submission, and as a call of its own it was a frame per I/O.
 */
#ifndef VIRTIO_RING_SPLIT_H
#define VIRTIO_RING_SPLIT_H

#include "vbblk.h"
#include "vbblk_trace.h"

void vbblk_vq_trace_queue(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
			  struct scatterlist **sgs, unsigned int n);

/* A command this small (in data buffers) goes on a pair's direct ring. */
#define VBBLK_DIRECT_SEGS	4

/*
 * The descriptors a command with @data takes straight on the ring, or 0
 * when it has more than VBBLK_DIRECT_SEGS data buffers.
 */
static inline unsigned int vbblk_vq_direct_descs(struct scatterlist *data)
{
	unsigned int n = 3;	/* header, a data buffer, status */

	for (; !sg_is_last(data); data = sg_next(data))
		if (++n > VBBLK_DIRECT_SEGS + 2)
			return 0;
	return n;
}

/*
 * Put one command's buffers on the ring and count it; caller holds
 * vq->lock. @type: the header's VIRTIO_BLK_T_*, from the caller, which
 * most often knows it as a constant (the counts below then fold). @direct:
 * the descriptors it takes on a pair's direct ring, 0 for the indirect
 * one. The room is checked here: a full ring would make the core notify
 * the device under our lock.
 */
static __always_inline int vbblk_vq_add_sgs(struct vbblk_vq *vq,
					    struct vbblk_iohdr *hdr,
					    u32 type,
					    struct scatterlist **sgs,
					    unsigned int n_out,
					    unsigned int n_in,
					    unsigned int direct)
{
	struct vbblk *vblk = vq->vblk;
	struct virtqueue *ring = vq->vq;
	u8 bit = VBBLK_KICK_DIRECT;
	int err;

	lockdep_assert_held(&vq->lock);
	/* Under the lock: vbblk_vqs_abort() then sees this command, or we it. */
	if (unlikely(READ_ONCE(vblk->broken)))
		return -EIO;

	if (vq->big && (!direct || ring->num_free < direct)) {
		ring = vq->big;
		bit = VBBLK_KICK_BIG;
	}
	err = virtqueue_add_sgs(ring, sgs, n_out, n_in, hdr, GFP_ATOMIC);
	if (unlikely(err))
		return err;
	vq->added |= bit;
	if (bit == VBBLK_KICK_BIG)
		vbblk_stat_inc(vblk, VBBLK_STAT_INDIRECT_RING);
	if (trace_vbblk_cmd_queue_enabled())
		vbblk_vq_trace_queue(vq, hdr, sgs, n_out + n_in);

	/* Read without the lock by the batch hold test. */
	WRITE_ONCE(vq->inflight, vq->inflight + 1);
	/* Count what the device will see (GET_ID is not I/O). */
	if (type != VIRTIO_BLK_T_GET_ID) {
		vbblk_stat_inc(vblk, VBBLK_STAT_REQUESTS);
		if (type == VIRTIO_BLK_T_FLUSH)
			vbblk_stat_inc(vblk, VBBLK_STAT_FLUSHES);
	}
	return 0;
}

void vbblk_vq_notify_rings(struct vbblk_vq *vq, unsigned int rings);

/*
 * Notify @vq's direct ring, or its indirect one if @big, counted and
 * traced (the ring is read last: nothing waits for it meanwhile).
 */
static __always_inline void vbblk_vq_notify_one(struct vbblk_vq *vq,
						bool big)
{
	vbblk_stat_inc(vq->vblk, VBBLK_STAT_NOTIFIES);
	trace_vbblk_notify(vq);
	virtqueue_notify(big ? vq->big : vq->vq);
}

/*
 * Second half of a kick, with what vbblk_vq_kick_prepare() returned;
 * called without vq->lock. Inline: at QD1 every command notifies, and a
 * call of its own was a frame per I/O. A pair's indirect ring is rarely
 * added to: a notify that includes it is out of line, whole.
 */
static __always_inline void vbblk_vq_notify(struct vbblk_vq *vq,
					    unsigned int rings)
{
	if (unlikely(rings & VBBLK_KICK_BIG)) {
		vbblk_vq_notify_rings(vq, rings);
		return;
	}
	if (rings & VBBLK_KICK_DIRECT)
		vbblk_vq_notify_one(vq, false);
}

/*
 * Queue one command: header out, optional data (out or in), status in.
 * Caller holds vq->lock. Returns -ENOSPC when the ring is full. The list
 * of parts lives in the header, not on the stack: the stack protector
 * would guard an array here on every command.
 */
static __always_inline int vbblk_vq_add(struct vbblk_vq *vq,
					struct vbblk_iohdr *hdr, u32 type,
					struct scatterlist *data,
					bool data_out)
{
	struct scatterlist **sgs = hdr->sgs;

	if (!data) {
		sgs[1] = &hdr->status_sg;
		return vbblk_vq_add_sgs(vq, hdr, type, sgs, 1, 1,
					vq->big ? 2 : 0);
	}
	sgs[1] = data;
	sgs[2] = &hdr->status_sg;
	return vbblk_vq_add_sgs(vq, hdr, type, sgs, 1 + data_out, 2 - data_out,
				vq->big ? vbblk_vq_direct_descs(data) : 0);
}

#endif /* VIRTIO_RING_SPLIT_H */
