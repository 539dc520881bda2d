/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version shims. Logic files call these helpers and never test
 * LINUX_VERSION_CODE themselves. Built and tested against 6.1.
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

/* 6.9 moved queue limits into an argument of blk_mq_alloc_disk(). */
static inline struct gendisk *vbblk_alloc_disk(struct blk_mq_tag_set *set,
					       void *queuedata)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	return blk_mq_alloc_disk(set, queuedata);
#else
	return blk_mq_alloc_disk(set, NULL, queuedata);
#endif
}

/* A bio-based disk (bio mode). */
static inline struct gendisk *vbblk_alloc_bio_disk(void)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	return blk_alloc_disk(NUMA_NO_NODE);
#else
	return blk_alloc_disk(NULL, NUMA_NO_NODE);
#endif
}

/* A blk-mq queue with no disk (bio mode's passthrough queue). */
static inline struct request_queue *vbblk_alloc_queue(struct blk_mq_tag_set *set,
						      void *queuedata)
{
	struct request_queue *q;

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
	q = blk_mq_init_queue(set);
	if (!IS_ERR(q))
		q->queuedata = queuedata;
#else
	q = blk_mq_alloc_queue(set, NULL, queuedata);
#endif
	return q;
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
