/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences of the test modules, and only those (the driver's
 * live in include/vbblk_compat.h). Each HAVE_* comes from a probe in
 * tests/kmod/probe, compiled by scripts/probe-kernel.sh as for the driver.
 * Built against 6.1, 6.12 and 7.2.
 */
#ifndef VBTEST_COMPAT_H
#define VBTEST_COMPAT_H

#include <linux/blkdev.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/timer.h>
#include <linux/version.h>

#ifdef VBT_NO_FEATURES
#error "build the test modules with tests/kmod/Makefile: it probes the kernel first"
#endif
#include <vbtest_features.h>

/*
 * From 6.3 submit_bio_noacct() ends a READ that carries PREFLUSH or FUA
 * with an error and a WARN_ON_ONCE: no driver sees one. A behaviour, with
 * no API to probe: the one version test left.
 */
#define VBT_READ_FLUSH_REACHES_DRIVER \
	(LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0))

/* Polled I/O: a queue flag until 6.11, a queue limits feature since. */
static inline bool vbt_queue_polls(struct request_queue *q)
{
#ifdef BLK_FEAT_POLL
	return q->limits.features & BLK_FEAT_POLL;
#else
	return test_bit(QUEUE_FLAG_POLL, &q->queue_flags);
#endif
}

/* Timer API renames: del_timer_sync(), destroy_timer_on_stack(), from_timer(). */
#ifdef HAVE_TIMER_DELETE_SYNC
#define vbt_timer_delete_sync(t)	timer_delete_sync(t)
#else
#define vbt_timer_delete_sync(t)	del_timer_sync(t)
#endif
#ifdef HAVE_TIMER_DESTROY_ON_STACK
#define vbt_timer_destroy_on_stack(t)	timer_destroy_on_stack(t)
#else
#define vbt_timer_destroy_on_stack(t)	destroy_timer_on_stack(t)
#endif
#ifndef timer_container_of
#define timer_container_of(var, t, field)	from_timer(var, t, field)
#endif

/* A bio's inline vectors: a flexible array, or behind a helper. */
#ifdef HAVE_BIO_INLINE_VECS
#define vbt_bio_inline_vecs(bio)	bio_inline_vecs(bio)
#else
#define vbt_bio_inline_vecs(bio)	((bio)->bi_inline_vecs)
#endif

/*
 * An opened block device, not exclusive. Opening by path returned the
 * bdev until 6.8, a handle in 6.8 and a file from 6.9; blk_mode_t (with
 * BLK_OPEN_*) replaced fmode_t in 6.5.
 */
struct vbt_bdev {
	struct block_device *bdev;
#if defined(HAVE_BDEV_FILE_OPEN_BY_PATH)
	struct file *file;
#elif defined(HAVE_BDEV_OPEN_BY_PATH)
	struct bdev_handle *handle;
#endif
};

#ifdef BLK_OPEN_READ
#define VBT_OPEN_RW	(BLK_OPEN_READ | BLK_OPEN_WRITE)
#else
#define VBT_OPEN_RW	(FMODE_READ | FMODE_WRITE)
#endif

static inline int vbt_bdev_open(const char *path, struct vbt_bdev *b)
{
#if defined(HAVE_BDEV_FILE_OPEN_BY_PATH)
	b->file = bdev_file_open_by_path(path, VBT_OPEN_RW, NULL, NULL);
	if (IS_ERR(b->file))
		return PTR_ERR(b->file);
	b->bdev = file_bdev(b->file);
#elif defined(HAVE_BDEV_OPEN_BY_PATH)
	b->handle = bdev_open_by_path(path, VBT_OPEN_RW, NULL, NULL);
	if (IS_ERR(b->handle))
		return PTR_ERR(b->handle);
	b->bdev = b->handle->bdev;
#elif defined(HAVE_BLKDEV_GET_BY_PATH_HOLDER_OPS)
	b->bdev = blkdev_get_by_path(path, VBT_OPEN_RW, NULL, NULL);
	if (IS_ERR(b->bdev))
		return PTR_ERR(b->bdev);
#else
	b->bdev = blkdev_get_by_path(path, VBT_OPEN_RW, NULL);
	if (IS_ERR(b->bdev))
		return PTR_ERR(b->bdev);
#endif
	return 0;
}

static inline void vbt_bdev_close(struct vbt_bdev *b)
{
#if defined(HAVE_BDEV_FILE_OPEN_BY_PATH)
	fput(b->file);
#elif defined(HAVE_BDEV_OPEN_BY_PATH)
	bdev_release(b->handle);
#elif defined(HAVE_BLKDEV_GET_BY_PATH_HOLDER_OPS)
	blkdev_put(b->bdev, NULL);
#else
	blkdev_put(b->bdev, VBT_OPEN_RW);
#endif
}

/*
 * vbfault: the kmalloc that kvmalloc() tries first, and kvmalloc's own
 * function, whose call is the one vbfault fails. Until 6.10
 * kvmalloc_node() calls __kmalloc_node(size, flags, node) (the size is no
 * constant there). 6.10 renamed both (_noprof) and 6.11 put a bucket
 * argument before the flags: not probed there, the switch says SKIP.
 */
#ifdef HAVE_KMALLOC_NOPROF
#define VBF_RENAMED_ALLOCATORS	1
#else
#define VBF_RENAMED_ALLOCATORS	0
#endif
#define VBF_KVMALLOC_PROBED	(!VBF_RENAMED_ALLOCATORS)
#define VBF_KVMALLOC		"kvmalloc_node"
#define VBF_KMALLOC		"__kmalloc_node"

/*
 * vbfault: the kmalloc virtio_ring's add path calls for an indirect
 * descriptor table, and the functions that call it. Until 6.10
 * alloc_indirect_split() and alloc_indirect_packed() call
 * kmalloc_array(), that is __kmalloc(size, gfp); in Debian's 6.1 both are
 * inlined into virtqueue_add_split() and virtqueue_add_packed(), which
 * make no other __kmalloc() call. 6.10 renamed it __kmalloc_noprof():
 * not probed there, the switch says SKIP.
 */
#define VBF_INDIRECT_PROBED	(!VBF_RENAMED_ALLOCATORS)
#define VBF_INDIRECT_KMALLOC	"__kmalloc"
#define VBF_INDIRECT_CALLERS	"virtqueue_add_split", "virtqueue_add_packed"

/*
 * vbfault drv_fail: the allocators a module's code calls directly, and how
 * each result is freed. 6.10 renamed them (_noprof) and changed some
 * signatures: not probed there, the switch says SKIP.
 */
#define VBF_DRV_PROBED		(!VBF_RENAMED_ALLOCATORS)
#define VBF_DRV_KMALLOC		"kmalloc_trace", "__kmalloc", "__kmalloc_node"
#define VBF_DRV_KVMALLOC	"kvmalloc_node"
#define VBF_DRV_PERCPU		"__alloc_percpu"

#endif /* VBTEST_COMPAT_H */
