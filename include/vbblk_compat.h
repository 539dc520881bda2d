/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version shims. Logic files call these helpers and never test
 * LINUX_VERSION_CODE themselves. Built and tested against 6.1 and 6.12.
 */
#ifndef VBBLK_COMPAT_H
#define VBBLK_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/version.h>
#include <linux/virtio_config.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "vbblk needs Linux 6.1 or newer"
#endif

/* 6.12 moved the unaligned access helpers out of asm/. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#include <asm/unaligned.h>
#else
#include <linux/unaligned.h>
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

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
/* Before 6.9 limits are set one by one on the allocated queue. */
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

/* After allocation: what the running kernel did not take with the queue. */
static inline void vbblk_queue_setup(struct request_queue *q,
				     const struct queue_limits *lim,
				     const struct vbblk_features *f)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	vbblk_set_limits_old(q, lim);
#endif
	blk_queue_write_cache(q, f->write_cache, f->fua);
	/* A paravirtual disk: no seek penalty (6.11 made that the default). */
	blk_queue_flag_set(QUEUE_FLAG_VIRT, q);
	if (f->nowait)
		blk_queue_flag_set(QUEUE_FLAG_NOWAIT, q);
	if (f->poll)
		blk_queue_flag_set(QUEUE_FLAG_POLL, q);
	if (f->io_stat)
		blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);
#endif
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
/*
 * 6.9 takes the limits at allocation and writes back what it validated,
 * so each allocation gets its own copy; 6.11 wants the features in it.
 */
static inline void vbblk_copy_limits(struct queue_limits *dst,
				     const struct queue_limits *lim,
				     const struct vbblk_features *f)
{
	*dst = *lim;
	/* 6.9 refuses segments under a page, which the old setter raised. */
	dst->max_segment_size = max_t(unsigned int, dst->max_segment_size,
				      PAGE_SIZE);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
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

/* 6.9 moved queue limits into an argument of blk_mq_alloc_disk(). */
static inline struct gendisk *vbblk_alloc_disk(struct blk_mq_tag_set *set,
					       const struct queue_limits *lim,
					       const struct vbblk_features *f,
					       void *queuedata)
{
	struct gendisk *disk;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	disk = blk_mq_alloc_disk(set, queuedata);
#else
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	disk = blk_mq_alloc_disk(set, &l, queuedata);
#endif
	if (!IS_ERR(disk))
		vbblk_queue_setup(disk->queue, lim, f);
	return disk;
}

/* A bio-based disk (bio mode); NULL or an ERR_PTR on failure. */
static inline struct gendisk *vbblk_alloc_bio_disk(const struct queue_limits *lim,
						   const struct vbblk_features *f)
{
	struct gendisk *disk;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	disk = blk_alloc_disk(NUMA_NO_NODE);
#else
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	disk = blk_alloc_disk(&l, NUMA_NO_NODE);
#endif
	if (!IS_ERR_OR_NULL(disk))
		vbblk_queue_setup(disk->queue, lim, f);
	return disk;
}

/* A blk-mq queue with no disk (bio mode's passthrough queue). */
static inline struct request_queue *vbblk_alloc_queue(struct blk_mq_tag_set *set,
						      const struct queue_limits *lim,
						      const struct vbblk_features *f,
						      void *queuedata)
{
	struct request_queue *q;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	q = blk_mq_init_queue(set);
	if (!IS_ERR(q))
		q->queuedata = queuedata;
#else
	struct queue_limits l;

	vbblk_copy_limits(&l, lim, f);
	q = blk_mq_alloc_queue(set, &l, queuedata);
#endif
	if (!IS_ERR(q))
		vbblk_queue_setup(q, lim, f);
	return q;
}

/*
 * The write cache switched at run time. 6.11 changes features only by a
 * limits update, with the queue frozen so no I/O sees half of it.
 */
static inline int vbblk_update_write_cache(struct request_queue *q,
					   bool write_cache, bool fua)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
	blk_queue_write_cache(q, write_cache, fua);
	return 0;
#else
	struct queue_limits lim = queue_limits_start_update(q);
	int err;

	lim.features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA);
	if (write_cache)
		lim.features |= BLK_FEAT_WRITE_CACHE;
	if (fua)
		lim.features |= BLK_FEAT_FUA;
	blk_mq_freeze_queue(q);
	err = queue_limits_commit_update(q, &lim);
	blk_mq_unfreeze_queue(q);
	return err;
#endif
}

/* 6.11 moved the misaligned flag into lim->flags. */
static inline bool vbblk_limits_misaligned(const struct queue_limits *lim)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
	return lim->misaligned;
#else
	return lim->flags & BLK_FLAG_MISALIGNED;
#endif
}

/* 6.3 counts a bio-based I/O's sectors at its end instead of its start. */
static inline unsigned long vbblk_start_io_acct(struct block_device *bdev,
						unsigned int sectors,
						enum req_op op,
						unsigned long start_time)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
	return bdev_start_io_acct(bdev, sectors, op, start_time);
#else
	return bdev_start_io_acct(bdev, op, start_time);
#endif
}

static inline void vbblk_end_io_acct(struct block_device *bdev,
				     enum req_op op, unsigned int sectors,
				     unsigned long start_time)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
	bdev_end_io_acct(bdev, op, start_time);
#else
	bdev_end_io_acct(bdev, op, sectors, start_time);
#endif
}

static inline void vbblk_free_queue(struct request_queue *q)
{
	blk_mq_destroy_queue(q);
	blk_put_queue(q);
}

/* 6.11 replaced the parallel callback/name arrays with struct virtqueue_info. */
static inline int vbblk_find_vqs(struct virtio_device *vdev, unsigned int n,
				 struct virtqueue *vqs[],
				 vq_callback_t *callbacks[],
				 const char * const names[],
				 struct irq_affinity *desc)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
	return virtio_find_vqs(vdev, n, vqs, callbacks, names, desc);
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
	}
	err = virtio_find_vqs(vdev, n, vqs, info, desc);
	kfree(info);
	return err;
#endif
}

/* 6.5 gave block_device_operations its own open-mode type. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#define vbblk_open_mode_t	fmode_t
#define VBBLK_OPEN_WRITE	FMODE_WRITE
#else
#define vbblk_open_mode_t	blk_mode_t
#define VBBLK_OPEN_WRITE	BLK_OPEN_WRITE
#endif

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

#endif /* VBBLK_COMPAT_H */
