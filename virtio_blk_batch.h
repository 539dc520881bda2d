/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The batch layer's send, inline in the bio path: a command that nothing
 * would hold (random I/O, QD1) goes from submit_bio to the ring without a
 * frame of this layer's. virtio_blk_batch.c has the rest.
 */
#ifndef VIRTIO_BLK_BATCH_H
#define VIRTIO_BLK_BATCH_H

#include "vbblk.h"
#include "vbblk_trace.h"

/* A batch command goes to the ring: its CPU counts it until it ends. */
static __always_inline void vbblk_batch_dispatch(struct vbblk_bio_cmd *cmd,
						 enum vbblk_stat reason,
						 bool plugged)
{
	vbblk_stat_inc(cmd->vq->vblk, reason);
	trace_vbblk_batch_release(cmd->vq->vblk, cmd, reason);
	atomic_inc(&cmd->batch->inflight);
	vbblk_bio_cmd_dispatch(cmd, plugged);
}

void vbblk_batch_add_may_hold(struct vbblk *vblk, struct vbblk_batch *b,
			      struct vbblk_bio_cmd *cmd, bool hold, bool stream);

/*
 * A read or write command on b->vq, counted in batch @b while it is out.
 * @b is the batch the caller took before it got the command: a submitter
 * that slept for one may run on another CPU now, and a command held in
 * that CPU's batch could go to a queue its unplug does not notify. With
 * @hold (batching on) it may be held for later bios (see
 * vbblk_batch_hold()); otherwise, or if nothing would send it promptly,
 * it goes now.
 */
static __always_inline void vbblk_batch_add(struct vbblk *vblk,
					    struct vbblk_batch *b,
					    struct vbblk_bio_cmd *cmd,
					    bool hold, bool stream)
{
	WARN_ON_ONCE(cmd->vq != b->vq);
	cmd->batch = b;
	/*
	 * No plug, and no stream to hold for (random I/O, QD1): nothing
	 * would send it promptly, so it goes now, without a frame.
	 */
	if (!current->plug && !(hold && stream)) {
		vbblk_batch_dispatch(cmd, VBBLK_STAT_DISPATCH_DIRECT, false);
		return;
	}
	vbblk_batch_add_may_hold(vblk, b, cmd, hold, stream);
}

#endif /* VIRTIO_BLK_BATCH_H */
