// SPDX-License-Identifier: GPL-2.0
/*
 * The ring layer both I/O paths share.
 *
 * Submission is split in two: buffers are added and the kick is prepared
 * under the virtqueue lock; the notify (a VM exit on real hardware) is sent
 * by the caller after dropping it, so other CPUs can fill the ring meanwhile.
 * Completion drains the used ring under the lock into a chain and the paths
 * end their I/O after the lock is released.
 */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>

#include "vbblk.h"
#include "include/vbblk_compat.h"

void vbblk_iohdr_init(struct vbblk *vblk, struct vbblk_iohdr *hdr, u32 type,
		      sector_t sector)
{
	struct virtio_device *vdev = vblk->vdev;

	hdr->out.type = cpu_to_virtio32(vdev, type);
	hdr->out.ioprio = 0;
	hdr->out.sector = cpu_to_virtio64(vdev, sector);
	/* A device that completes without writing status must not look OK. */
	hdr->status = VIRTIO_BLK_S_IOERR;
}

blk_status_t vbblk_status(const struct vbblk_iohdr *hdr)
{
	switch (hdr->status) {
	case VIRTIO_BLK_S_OK:
		return BLK_STS_OK;
	case VIRTIO_BLK_S_UNSUPP:
		return BLK_STS_NOTSUPP;
	default:
		return BLK_STS_IOERR;
	}
}

/* Put one command's buffers on the ring and count it; caller holds vq->lock. */
static int vbblk_vq_add_sgs(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
			    struct scatterlist **sgs, unsigned int n_out,
			    unsigned int n_in)
{
	struct vbblk *vblk = vq->vblk;
	u32 type = virtio32_to_cpu(vblk->vdev, hdr->out.type);
	int err;

	lockdep_assert_held(&vq->lock);
	/* The device is given physical addresses: no vmalloc memory. */
	if (WARN_ON_ONCE(is_vmalloc_addr(hdr)))
		return -EIO;

	err = virtqueue_add_sgs(vq->vq, sgs, n_out, n_in, hdr, GFP_ATOMIC);
	if (err)
		return err;

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

/*
 * Queue one command: header out, optional data (out or in), status in.
 * Caller holds vq->lock. Returns -ENOSPC when the ring is full.
 */
int vbblk_vq_add(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
		 struct scatterlist *data, bool data_out)
{
	struct scatterlist out_sg, status_sg, *sgs[3];
	unsigned int n = 0, n_out = 0, n_in = 0;

	sg_init_one(&out_sg, &hdr->out, sizeof(hdr->out));
	sgs[n++] = &out_sg;
	n_out++;
	if (data) {
		sgs[n++] = data;
		if (data_out)
			n_out++;
		else
			n_in++;
	}
	sg_init_one(&status_sg, &hdr->status, sizeof(hdr->status));
	sgs[n++] = &status_sg;
	n_in++;

	return vbblk_vq_add_sgs(vq, hdr, sgs, n_out, n_in);
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
	struct scatterlist out_sg, cdb_sg, sense_sg, inhdr_sg, status_sg;
	struct scatterlist *sgs[6];
	unsigned int n = 0, n_out = 2, n_in = 3;

	sg_init_one(&out_sg, &hdr->out, sizeof(hdr->out));
	sg_init_one(&cdb_sg, sio->cdb, sio->cdb_len);
	sg_init_one(&sense_sg, sio->sense, sizeof(sio->sense));
	sg_init_one(&inhdr_sg, &sio->inhdr, sizeof(sio->inhdr));
	sg_init_one(&status_sg, &hdr->status, sizeof(hdr->status));

	sgs[n++] = &out_sg;
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
	sgs[n++] = &status_sg;

	return vbblk_vq_add_sgs(vq, hdr, sgs, n_out, n_in);
}

/* First half of a kick; caller holds vq->lock. */
bool vbblk_vq_kick_prepare(struct vbblk_vq *vq)
{
	lockdep_assert_held(&vq->lock);
	return virtqueue_kick_prepare(vq->vq);
}

/* Second half; called without vq->lock. */
void vbblk_vq_notify(struct vbblk_vq *vq)
{
	vbblk_stat_inc(vq->vblk, VBBLK_STAT_NOTIFIES);
	virtqueue_notify(vq->vq);
}

/* Both halves, for callers that do not hold the lock. */
void vbblk_vq_kick(struct vbblk_vq *vq)
{
	unsigned long flags;
	bool notify;

	spin_lock_irqsave(&vq->lock, flags);
	notify = vbblk_vq_kick_prepare(vq);
	spin_unlock_irqrestore(&vq->lock, flags);
	if (notify)
		vbblk_vq_notify(vq);
}

/*
 * Take every used buffer off the ring, oldest first, and the flag saying
 * queue_rq stopped its hctx. An interrupt-driven queue's callbacks are
 * re-enabled before returning, and the loop re-checks for buffers that
 * raced with re-enabling, so no completion is left without an interrupt.
 * A poll queue (@polled) keeps its callbacks off: one pass.
 */
static struct vbblk_iohdr *vbblk_vq_reap(struct vbblk_vq *vq, bool polled,
					 bool *restart)
{
	struct vbblk_iohdr *head = NULL, **tail = &head, *hdr;
	unsigned long flags;
	unsigned int len;

	spin_lock_irqsave(&vq->lock, flags);
	*restart = vq->hctx_stopped;
	vq->hctx_stopped = false;
	for (;;) {
		if (!polled)
			virtqueue_disable_cb(vq->vq);
		while ((hdr = virtqueue_get_buf(vq->vq, &len)) != NULL) {
			*tail = hdr;
			tail = &hdr->done_next;
			WRITE_ONCE(vq->inflight, vq->inflight - 1);
			WRITE_ONCE(vq->completed, vq->completed + 1);
		}
		if (polled || unlikely(virtqueue_is_broken(vq->vq)) ||
		    virtqueue_enable_cb(vq->vq))
			break;
	}
	*tail = NULL;
	spin_unlock_irqrestore(&vq->lock, flags);

	return head;
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
int vbblk_vq_flush_sync(struct vbblk_vq *vq)
{
	struct vbblk_sync_cmd *cmd;
	unsigned long flags;
	bool notify;
	int err;

	/* kmalloc: the device writes the status byte. */
	cmd = kzalloc(sizeof(*cmd), GFP_KERNEL);
	if (!cmd)
		return -ENOMEM;
	cmd->hdr.kind = VBBLK_KIND_SYNC;
	init_completion(&cmd->done);
	vbblk_iohdr_init(vq->vblk, &cmd->hdr, VIRTIO_BLK_T_FLUSH, 0);
	for (;;) {
		spin_lock_irqsave(&vq->lock, flags);
		err = READ_ONCE(vq->vblk->broken) ? -EIO :
			vbblk_vq_add(vq, &cmd->hdr, NULL, false);
		notify = !err && vbblk_vq_kick_prepare(vq);
		spin_unlock_irqrestore(&vq->lock, flags);
		if (err != -ENOSPC)
			break;
		usleep_range(100, 1000);
	}
	if (notify)
		vbblk_vq_notify(vq);
	if (!err) {
		wait_for_completion(&cmd->done);
		err = blk_status_to_errno(vbblk_status(&cmd->hdr));
	}
	kfree(cmd);
	return err;
}

/*
 * End a reaped chain, outside the lock; returns how many ended. @restart:
 * queue_rq found the ring full and stopped its hctx. Only then restart:
 * walking every hctx on each completion would cost more than the I/O.
 */
static int vbblk_vq_end_chain(struct vbblk_vq *vq, struct vbblk_iohdr *done,
			      bool restart)
{
	struct vbblk *vblk = vq->vblk;
	struct vbblk_iohdr *next;
	int n = 0;

	for (; done; done = next, n++) {
		/* A command may be reused once ended: read the link first. */
		next = done->done_next;
		if (done->kind == VBBLK_KIND_BIO)
			vbblk_bio_end_cmd(done);
		else if (done->kind == VBBLK_KIND_RQ)
			vbblk_rq_end_cmd(done);
		else
			vbblk_sync_end(done);
	}

	if (n && vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_vq_done(vq);
	/* Room on the ring again for a blk-mq queue stopped by -ENOSPC. */
	if (restart)
		blk_mq_start_stopped_hw_queues(vblk->rq_queue, true);
	return n;
}

static void vbblk_vq_done(struct virtqueue *_vq)
{
	struct vbblk *vblk = _vq->vdev->priv;
	struct vbblk_vq *vq = &vblk->vqs[_vq->index];
	struct vbblk_iohdr *done;
	bool restart;

	done = vbblk_vq_reap(vq, false, &restart);
	vbblk_vq_end_chain(vq, done, restart);
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
 * ->poll_bio). Returns the commands ended.
 */
int vbblk_vq_poll(struct vbblk_vq *vq)
{
	struct vbblk_iohdr *done;
	bool restart;

	done = vbblk_vq_reap(vq, true, &restart);
	return vbblk_vq_end_chain(vq, done, restart);
}

/*
 * Find up to @want request virtqueues (fewer if the device has fewer) and
 * spread their interrupts over the CPUs. Keeps the vqs array across
 * freeze/restore so the count must not change then.
 */
int vbblk_init_vqs(struct vbblk *vblk, unsigned int want, unsigned int npoll)
{
	struct virtio_device *vdev = vblk->vdev;
	/* Poll queues come last: their vectors stay out of the CPU spread. */
	struct irq_affinity desc = { .post_vectors = npoll };
	vq_callback_t **callbacks;
	struct virtqueue **vqs;
	const char **names;
	bool fresh = !vblk->vqs;
	unsigned int i;
	int err = -ENOMEM;

	vqs = kcalloc(want, sizeof(*vqs), GFP_KERNEL);
	callbacks = kcalloc(want, sizeof(*callbacks), GFP_KERNEL);
	names = kcalloc(want, sizeof(*names), GFP_KERNEL);
	if (fresh)
		vblk->vqs = kcalloc(want, sizeof(*vblk->vqs), GFP_KERNEL);
	if (!vqs || !callbacks || !names || !vblk->vqs)
		goto out;

	for (i = 0; i < want; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];

		spin_lock_init(&vq->lock);
		vq->vblk = vblk;
		vq->index = i;
		vq->inflight = 0;
		INIT_LIST_HEAD(&vq->parked);
		init_waitqueue_head(&vq->wait);
		if (i < want - npoll) {
			snprintf(vq->name, sizeof(vq->name), "req.%u", i);
			callbacks[i] = vbblk_vq_done;
		} else {
			snprintf(vq->name, sizeof(vq->name), "poll.%u",
				 i - (want - npoll));
			callbacks[i] = vbblk_vq_poll_signal;
		}
		names[i] = vq->name;
	}

	err = vbblk_find_vqs(vdev, want, vqs, callbacks, names, &desc);
	if (err)
		goto out;

	for (i = 0; i < want; i++)
		vblk->vqs[i].vq = vqs[i];
	/* Reaped by polling: ask the device not to signal. */
	for (i = want - npoll; i < want; i++)
		virtqueue_disable_cb(vqs[i]);
	vblk->num_vqs = want;
	vblk->num_poll_vqs = npoll;
out:
	if (err && fresh) {
		kfree(vblk->vqs);
		vblk->vqs = NULL;
	}
	kfree(names);
	kfree(callbacks);
	kfree(vqs);
	return err;
}

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

/*
 * Give up on a device that stopped answering (its vhost-user backend
 * died): reset it, after which it never touches our buffers again, and end
 * everything it held, and every parked bio command, with an I/O error.
 * From here on both paths fail new I/O at once (vblk->broken), including
 * the bio-by-bio retries the errors would otherwise start.
 */
void vbblk_vqs_abort(struct vbblk *vblk)
{
	unsigned int i;

	WRITE_ONCE(vblk->broken, true);
	virtio_reset_device(vblk->vdev);
	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];
		struct vbblk_iohdr *head = NULL, **tail = &head, *hdr;
		struct vbblk_bio_cmd *cmd, *tmp;
		unsigned long flags;
		bool restart;

		spin_lock_irqsave(&vq->lock, flags);
		while ((hdr = virtqueue_detach_unused_buf(vq->vq)) != NULL) {
			*tail = hdr;
			tail = &hdr->done_next;
			WRITE_ONCE(vq->inflight, vq->inflight - 1);
		}
		list_for_each_entry_safe(cmd, tmp, &vq->parked, park) {
			list_del_init(&cmd->park);
			*tail = &cmd->hdr;
			tail = &cmd->hdr.done_next;
		}
		*tail = NULL;
		for (hdr = head; hdr; hdr = hdr->done_next)
			hdr->status = VIRTIO_BLK_S_IOERR;
		restart = vq->hctx_stopped;
		vq->hctx_stopped = false;
		spin_unlock_irqrestore(&vq->lock, flags);
		vbblk_vq_end_chain(vq, head, restart);
	}
}
