/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API shims. Logic files call these helpers and never test kernel
 * features themselves. Each HAVE_* comes from a probe (probe/<name>.c)
 * that scripts/probe-kernel.sh compiles against the kernel being built for:
 * the API's presence decides, not a version number, so a distribution
 * kernel that backported a change builds as it is. The kernel each API
 * appeared in is in its probe. Tested on 6.1, 6.12 and 7.2.
 */
#ifndef VBBLK_COMPAT_H
#define VBBLK_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/sched/mm.h>
#include <linux/virtio_config.h>

#ifdef VBBLK_NO_FEATURES
#error "build vbblk with its Makefile (make KDIR=...): it probes the kernel first"
#endif
#include <vbblk_features.h>

#ifdef HAVE_BLK_MQ_VIRTIO_MAP_QUEUES
#include <linux/blk-mq-virtio.h>
#endif

#ifdef HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * Queue features: queue flags until 6.10, bits in lim->features from 6.11.
 * Probe fills one struct queue_limits and one of these; the helpers below
 * apply both the way the running kernel wants them.
 */
struct vbblk_features {
	bool write_cache;	/* volatile cache: flushes wanted */
	bool fua;		/* FUA writes taken as such */
	bool nowait;		/* bio-based: REQ_NOWAIT honoured */
	bool io_stat;		/* bio-based: the driver accounts I/O */
	bool poll;		/* bio-based: ->poll_bio reaps poll queues */
};

#if !defined(HAVE_BLK_MQ_ALLOC_DISK_LIM) || !defined(HAVE_BLK_ALLOC_DISK_LIM) || \
	!defined(HAVE_BLK_MQ_ALLOC_QUEUE)
/* Where allocation takes no limits, they are set one by one after it. */
static inline void vbblk_set_limits_old(struct request_queue *q,
					const struct queue_limits *lim)
{
	blk_queue_max_segments(q, lim->max_segments);
	blk_queue_max_segment_size(q, lim->max_segment_size);
	blk_queue_max_hw_sectors(q, lim->max_hw_sectors);
	blk_queue_logical_block_size(q, lim->logical_block_size);
	blk_queue_physical_block_size(q, lim->physical_block_size);
	if (lim->alignment_offset)
		blk_queue_alignment_offset(q, lim->alignment_offset);
	if (lim->io_min)
		blk_queue_io_min(q, lim->io_min);
	if (lim->io_opt)
		blk_queue_io_opt(q, lim->io_opt);
	if (lim->max_hw_discard_sectors)
		blk_queue_max_discard_sectors(q, lim->max_hw_discard_sectors);
	if (lim->discard_granularity)
		q->limits.discard_granularity = lim->discard_granularity;
	if (lim->max_discard_segments)
		blk_queue_max_discard_segments(q, lim->max_discard_segments);
	if (lim->max_write_zeroes_sectors)
		blk_queue_max_write_zeroes_sectors(q,
						   lim->max_write_zeroes_sectors);
	if (lim->max_secure_erase_sectors)
		blk_queue_max_secure_erase_sectors(q,
						   lim->max_secure_erase_sectors);
}
#endif

/* After allocation: the features, where they are queue flags. */
static inline void vbblk_queue_setup(struct request_queue *q,
				     const struct vbblk_features *f)
{
#ifndef HAVE_QUEUE_LIMITS_FEATURES
	blk_queue_write_cache(q, f->write_cache, f->fua);
	/* A paravirtual disk: no seek penalty (the default with features). */
	blk_queue_flag_set(QUEUE_FLAG_VIRT, q);
	if (f->nowait)
		blk_queue_flag_set(QUEUE_FLAG_NOWAIT, q);
	if (f->poll)
		blk_queue_flag_set(QUEUE_FLAG_POLL, q);
	if (f->io_stat)
		blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);
#endif
}

#if defined(HAVE_BLK_MQ_ALLOC_DISK_LIM) || defined(HAVE_BLK_ALLOC_DISK_LIM) || \
	defined(HAVE_BLK_MQ_ALLOC_QUEUE)
/*
 * Allocation takes the limits and writes back what it validated, so each
 * allocation gets its own copy, with the features where they are limits.
 */
static inline void vbblk_copy_limits(struct queue_limits *dst,
				     const struct queue_limits *lim,
				     const struct vbblk_features *f)
{
	*dst = *lim;
	/* Validation refuses segments under a page, which the setter raised. */
	dst->max_segment_size = max_t(unsigned int, dst->max_segment_size,
				      PAGE_SIZE);
#ifdef HAVE_QUEUE_LIMITS_FEATURES
	if (f->write_cache)
		dst->features |= BLK_FEAT_WRITE_CACHE;
	if (f->fua)
		dst->features |= BLK_FEAT_FUA;
	if (f->nowait)
		dst->features |= BLK_FEAT_NOWAIT;
	if (f->poll)
		dst->features |= BLK_FEAT_POLL;
	if (f->io_stat)
		dst->features |= BLK_FEAT_IO_STAT;
#endif
}
#endif

static inline struct gendisk *vbblk_alloc_disk(struct blk_mq_tag_set *set,
					       const struct queue_limits *lim,
					       const struct vbblk_features *f,
					       void *queuedata)
{
	struct gendisk *disk;
#ifdef HAVE_BLK_MQ_ALLOC_DISK_LIM
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	disk = blk_mq_alloc_disk(set, &l, queuedata);
#else
	disk = blk_mq_alloc_disk(set, queuedata);
	if (!IS_ERR(disk))
		vbblk_set_limits_old(disk->queue, lim);
#endif
	if (!IS_ERR(disk))
		vbblk_queue_setup(disk->queue, f);
	return disk;
}

/* A bio-based disk (bio mode); NULL or an ERR_PTR on failure. */
static inline struct gendisk *vbblk_alloc_bio_disk(const struct queue_limits *lim,
						   const struct vbblk_features *f)
{
	struct gendisk *disk;
#ifdef HAVE_BLK_ALLOC_DISK_LIM
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	disk = blk_alloc_disk(&l, NUMA_NO_NODE);
#else
	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!IS_ERR_OR_NULL(disk))
		vbblk_set_limits_old(disk->queue, lim);
#endif
	if (!IS_ERR_OR_NULL(disk))
		vbblk_queue_setup(disk->queue, f);
	return disk;
}

/* A blk-mq queue with no disk (bio mode's passthrough queue). */
static inline struct request_queue *vbblk_alloc_queue(struct blk_mq_tag_set *set,
						      const struct queue_limits *lim,
						      const struct vbblk_features *f,
						      void *queuedata)
{
	struct request_queue *q;
#ifdef HAVE_BLK_MQ_ALLOC_QUEUE
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	q = blk_mq_alloc_queue(set, &l, queuedata);
#else
	q = blk_mq_init_queue(set);
	if (!IS_ERR(q)) {
		q->queuedata = queuedata;
		vbblk_set_limits_old(q, lim);
	}
#endif
	if (!IS_ERR(q))
		vbblk_queue_setup(q, f);
	return q;
}

/*
 * A freeze begun, for a caller that waits for it itself
 * (blk_mq_freeze_queue_wait_timeout()) and then thaws it with
 * vbblk_unfreeze_queue_restore(): allocations meanwhile are NOIO, as
 * reclaim must not write back into the frozen queue. Where the kernel's
 * thaw takes memalloc flags, it restores them; elsewhere ours does.
 */
static inline unsigned int vbblk_freeze_queue_start(struct request_queue *q)
{
	unsigned int memflags = memalloc_noio_save();

	blk_freeze_queue_start(q);
	return memflags;
}

static inline void vbblk_unfreeze_queue_restore(struct request_queue *q,
						unsigned int memflags)
{
#ifdef HAVE_BLK_MQ_FREEZE_QUEUE_MEMFLAGS
	blk_mq_unfreeze_queue(q, memflags);
#else
	blk_mq_unfreeze_queue(q);
	memalloc_noio_restore(memflags);
#endif
}

/*
 * The write cache switched at run time, in the block layer's lock order:
 * the limits first (where features are limits, limits_lock), then the
 * caller freezes the queue, commits or cancels, and thaws it.
 */
struct vbblk_wc_update {
#ifdef HAVE_QUEUE_LIMITS_FEATURES
	struct queue_limits lim;
#endif
};

static inline void vbblk_write_cache_start(struct request_queue *q,
					   struct vbblk_wc_update *u)
{
#ifdef HAVE_QUEUE_LIMITS_FEATURES
	u->lim = queue_limits_start_update(q);
#endif
}

/* The queue is frozen. */
static inline int vbblk_write_cache_commit(struct request_queue *q,
					   struct vbblk_wc_update *u,
					   bool write_cache, bool fua)
{
#ifdef HAVE_QUEUE_LIMITS_FEATURES
	u->lim.features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA);
	if (write_cache)
		u->lim.features |= BLK_FEAT_WRITE_CACHE;
	if (fua)
		u->lim.features |= BLK_FEAT_FUA;
	return queue_limits_commit_update(q, &u->lim);
#else
	blk_queue_write_cache(q, write_cache, fua);
	return 0;
#endif
}

static inline void vbblk_write_cache_cancel(struct request_queue *q,
					    struct vbblk_wc_update *u)
{
#ifdef HAVE_QUEUE_LIMITS_FEATURES
	queue_limits_cancel_update(q);
#endif
}

static inline bool vbblk_limits_misaligned(const struct queue_limits *lim)
{
#ifdef HAVE_BLK_FLAG_MISALIGNED
	return lim->flags & BLK_FLAG_MISALIGNED;
#else
	return lim->misaligned;
#endif
}

/* A bio-based I/O's sectors are counted at its start or at its end. */
static inline unsigned long vbblk_start_io_acct(struct block_device *bdev,
						unsigned int sectors,
						enum req_op op,
						unsigned long start_time)
{
#ifdef HAVE_BDEV_START_IO_ACCT_NOSECTORS
	return bdev_start_io_acct(bdev, op, start_time);
#else
	return bdev_start_io_acct(bdev, sectors, op, start_time);
#endif
}

static inline void vbblk_end_io_acct(struct block_device *bdev,
				     enum req_op op, unsigned int sectors,
				     unsigned long start_time)
{
#ifdef HAVE_BDEV_END_IO_ACCT_SECTORS
	bdev_end_io_acct(bdev, op, sectors, start_time);
#else
	bdev_end_io_acct(bdev, op, start_time);
#endif
}

static inline void vbblk_free_queue(struct request_queue *q)
{
	blk_mq_destroy_queue(q);
	blk_put_queue(q);
}

/*
 * The parallel callback/name/ctx arrays, or struct virtqueue_info. A queue
 * with @ctx set keeps its buffers' context, which the ring core gives for
 * indirect tables: it puts every command straight on the ring.
 */
static inline int vbblk_find_vqs(struct virtio_device *vdev, unsigned int n,
				 struct virtqueue *vqs[],
				 vq_callback_t *callbacks[],
				 const char * const names[], const bool *ctx,
				 struct irq_affinity *desc)
{
#ifndef HAVE_VIRTQUEUE_INFO
	return virtio_find_vqs_ctx(vdev, n, vqs, callbacks, names, ctx, desc);
#else
	struct virtqueue_info *info;
	unsigned int i;
	int err;

	info = kcalloc(n, sizeof(*info), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		info[i].name = names[i];
		info[i].callback = callbacks[i];
		info[i].ctx = ctx && ctx[i];
	}
	err = virtio_find_vqs(vdev, n, vqs, info, desc);
	kfree(info);
	return err;
#endif
}

/* block_device_operations' open mode: fmode_t, or its own type. */
#ifdef HAVE_BLK_MODE_T
#define vbblk_open_mode_t	blk_mode_t
#define VBBLK_OPEN_WRITE	BLK_OPEN_WRITE
#else
#define vbblk_open_mode_t	fmode_t
#define VBBLK_OPEN_WRITE	FMODE_WRITE
#endif

/* ->getgeo is given the block device, or the gendisk. */
#ifdef HAVE_GETGEO_GENDISK
#define vbblk_geo_disk_t	struct gendisk
#define vbblk_geo_gendisk(d)	(d)
#else
#define vbblk_geo_disk_t	struct block_device
#define vbblk_geo_gendisk(b)	((b)->bd_disk)
#endif

static inline bool vbblk_queue_nonrot(struct request_queue *q)
{
#ifdef HAVE_BLK_QUEUE_ROT
	return !blk_queue_rot(q);
#else
	return blk_queue_nonrot(q);
#endif
}

/* Queues follow the interrupt affinity of their virtqueues' vectors. */
static inline void vbblk_map_virtio_queues(struct blk_mq_queue_map *qmap,
					   struct virtio_device *vdev)
{
#ifdef HAVE_BLK_MQ_VIRTIO_MAP_QUEUES
	blk_mq_virtio_map_queues(qmap, vdev, 0);
#else
	blk_mq_map_hw_queues(qmap, &vdev->dev, 0);
#endif
}

/* Tag set flags: merging was asked for, until it became the default. */
#ifdef HAVE_BLK_MQ_F_SHOULD_MERGE
#define VBBLK_MQ_F_MERGE	BLK_MQ_F_SHOULD_MERGE
#else
#define VBBLK_MQ_F_MERGE	0
#endif

/* blk_mq_ops.init_request's NUMA node: unsigned, or an int. */
#ifdef HAVE_INIT_REQUEST_INT_NODE
#define vbblk_numa_node_t	int
#else
#define vbblk_numa_node_t	unsigned int
#endif

/*
 * blk_mq_ops.queue_rqs's list: a head pointer, or (from 6.12) a struct
 * rq_list with a tail. The driver takes every request off it and gives
 * back the ones blk-mq is to send through queue_rq, in order.
 */
#ifdef HAVE_QUEUE_RQS_RQ_LIST
#define vbblk_rq_list_t		struct rq_list

static inline void vbblk_rq_list_set(struct rq_list *l, struct request *head,
				     struct request *last)
{
	l->head = head;
	l->tail = last;
}
#else
#define vbblk_rq_list_t		struct request *

static inline void vbblk_rq_list_set(struct request **l, struct request *head,
				     struct request *last)
{
	*l = head;
}
#endif

static inline int vbblk_rq_map_sg(struct request *rq, struct scatterlist *sgl)
{
#ifdef HAVE_BLK_RQ_MAP_SG_NOQUEUE
	return blk_rq_map_sg(rq, sgl);
#else
	return blk_rq_map_sg(rq->q, rq, sgl);
#endif
}

/* Map a kernel buffer into a passthrough request. */
static inline int vbblk_rq_map_kern(struct request *rq, void *buf,
				    unsigned int len, gfp_t gfp)
{
#ifdef HAVE_BLK_RQ_MAP_KERN_NOQUEUE
	return blk_rq_map_kern(rq, buf, len, gfp);
#else
	return blk_rq_map_kern(rq->q, rq, buf, len, gfp);
#endif
}

static inline int vbblk_match_name(struct device *dev, const void *name)
{
	return !strcmp(dev_name(dev), name);
}

/*
 * Is a block device called @name registered already (by any driver)?
 * block_class is not exported, but every allocated gendisk points at it,
 * so @probe_disk (ours, allocated but not yet added) lends us the class.
 */
static inline bool vbblk_disk_name_taken(struct gendisk *probe_disk,
					 const char *name)
{
	struct device *dev;

	dev = class_find_device(disk_to_dev(probe_disk)->class, NULL, name,
				vbblk_match_name);
	if (!dev)
		return false;
	put_device(dev);
	return true;
}

/* ---- io_uring commands (vbblk_uring.c) ---- */

#include <linux/mm.h>
#include <linux/uio.h>
#ifdef HAVE_LINUX_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/* The command bytes of a uring_cmd's SQE. */
static inline const void *vbblk_uring_cmd_payload(const struct io_uring_cmd *c)
{
#ifdef HAVE_URING_CMD_SQE
	return c->sqe->cmd;
#else
	return c->cmd;
#endif
}

static inline void vbblk_uring_cmd_done(struct io_uring_cmd *c, int ret,
					unsigned int issue_flags)
{
#ifdef HAVE_URING_CMD_DONE_NORES2
	io_uring_cmd_done(c, ret, issue_flags);
#else
	io_uring_cmd_done(c, ret, 0, issue_flags);
#endif
}

/*
 * VBBLK_URING_TW(name, fn) defines task-work callback @name that calls
 * fn(struct io_uring_cmd *, unsigned int issue_flags), whatever the
 * kernel's callback type is.
 */
#ifdef HAVE_URING_CMD_TW_REQ
#define VBBLK_URING_TW(name, fn)					\
static void name(struct io_tw_req tw_req, io_tw_token_t tw)		\
{									\
	fn(io_uring_cmd_from_tw(tw_req), IO_URING_CMD_TASK_WORK_ISSUE_FLAGS); \
}
#else
#define VBBLK_URING_TW(name, fn)					\
static void name(struct io_uring_cmd *c, unsigned int issue_flags)	\
{									\
	fn(c, issue_flags);						\
}
#endif

/* Run @cb in the submitter's task; lazily (batched wakeups) if we can. */
#ifdef HAVE_URING_CMD_DO_IN_TASK_LAZY
#define vbblk_uring_cmd_in_task(c, cb)	io_uring_cmd_do_in_task_lazy(c, cb)
#else
#define vbblk_uring_cmd_in_task(c, cb)	io_uring_cmd_complete_in_task(c, cb)
#endif

static inline int vbblk_uring_import_fixed(u64 addr, unsigned long len,
					   int rw, struct iov_iter *iter,
					   struct io_uring_cmd *c,
					   unsigned int issue_flags)
{
#ifdef HAVE_URING_CMD_IMPORT_FIXED_FLAGS
	return io_uring_cmd_import_fixed(addr, len, rw, iter, c, issue_flags);
#else
	return io_uring_cmd_import_fixed(addr, len, rw, iter, c);
#endif
}

/*
 * Whether @c's ring belongs to a 32-bit task (its iovecs are compat ones).
 * Not in_compat_syscall(): a linked or drained command is issued from task
 * work, and on x86 task work run on the way back from an interrupt reads
 * the interrupt's orig_ax (-1) as an x32 system call.
 */
#ifdef HAVE_URING_F_COMPAT
static inline bool vbblk_uring_cmd_compat(struct io_uring_cmd *c,
					  unsigned int issue_flags)
{
	return issue_flags & IO_URING_F_COMPAT;
}
#else
#include <linux/io_uring_types.h>

static inline bool vbblk_uring_cmd_compat(struct io_uring_cmd *c,
					  unsigned int issue_flags)
{
	return cmd_to_io_kiocb(c)->ctx->compat;
}
#endif

/* Registered buffers described by an iovec array, where the kernel can. */
static inline int vbblk_uring_import_fixed_vec(struct io_uring_cmd *c,
					       const struct iovec __user *uvec,
					       size_t nr, int rw,
					       struct iov_iter *iter,
					       unsigned int issue_flags)
{
#ifdef HAVE_URING_CMD_IMPORT_FIXED_VEC
	return io_uring_cmd_import_fixed_vec(c, uvec, nr, rw, iter,
					     issue_flags);
#else
	return -EOPNOTSUPP;
#endif
}

/*
 * The pages under an iterator, for the device to read or write: pinned
 * (user memory), or borrowed (registered buffers, which io_uring holds).
 * vbblk_iter_release_pages() gives back what vbblk_iter_get_pages() took.
 */
static inline ssize_t vbblk_iter_get_pages(struct iov_iter *i,
					   struct page **pages, size_t max,
					   unsigned int maxpages, size_t *off)
{
#ifdef HAVE_IOV_ITER_EXTRACT_PAGES
	return iov_iter_extract_pages(i, &pages, max, maxpages, 0, off);
#else
	return iov_iter_get_pages2(i, pages, max, maxpages, off);
#endif
}

/*
 * @nr pages of user memory from @start, taken as vbblk_iter_get_pages()
 * takes them (pinned where the kernel's iterators pin, referenced where
 * they still take references), for vbblk_iter_release_pages(). @write:
 * the device writes them.
 */
static inline int vbblk_user_pages(unsigned long start, int nr, bool write,
				   struct page **pages)
{
	unsigned int flags = write ? FOLL_WRITE : 0;

#ifdef HAVE_IOV_ITER_EXTRACT_PAGES
	return pin_user_pages_fast(start, nr, flags, pages);
#else
	return get_user_pages_fast(start, nr, flags, pages);
#endif
}

/* Must vbblk_iter_release_pages() give back the pages taken from @i? */
static inline bool vbblk_iter_holds_pages(const struct iov_iter *i)
{
#ifdef HAVE_IOV_ITER_EXTRACT_PAGES
	return iov_iter_extract_will_pin(i);
#else
	return true;	/* iov_iter_get_pages2() takes a reference on each */
#endif
}

/*
 * May sleep (dirtying locks the page). Inline: each command's completion
 * gives its pages back, and where this is a loop of ours it was a frame.
 */
static __always_inline void vbblk_iter_release_pages(struct page **pages,
						     unsigned int n,
						     bool dirty)
{
#ifdef HAVE_IOV_ITER_EXTRACT_PAGES
	unpin_user_pages_dirty_lock(pages, n, dirty);
#else
	unsigned int i;

	for (i = 0; i < n; i++) {
		/* Dirty already: no lock (unpin_user_pages_dirty_lock() too) */
		if (dirty && !PageDirty(pages[i]))
			set_page_dirty_lock(pages[i]);
		put_page(pages[i]);
	}
#endif
}

#endif /* VBBLK_COMPAT_H */
