/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbblk: a virtio-blk guest driver with a bio path and a request path.
 *
 * One private header: one struct per concept.
 *   struct vbblk       - one virtio disk (configuration and live state)
 *   struct vbblk_vq    - one virtqueue with its own lock
 *   struct vbblk_iohdr - what every command puts on the ring (header, status)
 *   struct vbblk_cmd   - one blk-mq request's driver data (request path)
 */
#ifndef VBBLK_H
#define VBBLK_H

#ifdef pr_fmt
#undef pr_fmt
#endif
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/virtio_blk.h>
#include <linux/workqueue.h>

#define VBBLK_NAME		KBUILD_MODNAME
#define VBBLK_PART_BITS		4
#define VBBLK_MAX_QUEUES	256
#define VBBLK_MAX_DEPTH		1024
/* Ranges in one discard/write-zeroes/secure-erase command (one payload page). */
#define VBBLK_MAX_RANGES	(PAGE_SIZE / sizeof(struct virtio_blk_discard_write_zeroes))
/* Scatterlist entries kept inside each command; larger I/O chains more. */
#define VBBLK_INLINE_SG		2

enum vbblk_mode {
	VBBLK_MODE_BIO,
	VBBLK_MODE_REQUEST,
};

/* Module parameters, validated by their setters (virtio_blk_core.c). */
extern enum vbblk_mode vbblk_mode;
extern unsigned int vbblk_num_queues;
extern unsigned int vbblk_queue_depth;

/*
 * What a command puts on the ring: the device reads @out and writes @status.
 * @done_next chains completed commands so they are ended outside the lock.
 */
struct vbblk_iohdr {
	struct virtio_blk_outhdr out;
	u8 status;
	struct vbblk_iohdr *done_next;
};

struct vbblk;

struct vbblk_vq {
	spinlock_t lock;		/* serialises add, kick_prepare, get_buf */
	struct virtqueue *vq;
	struct vbblk *vblk;
	char name[16];
} ____cacheline_aligned_in_smp;

struct vbblk {
	struct virtio_device *vdev;	/* NULL once removed; see vdev_mutex */
	struct mutex vdev_mutex;	/* guards config access against remove */
	struct gendisk *disk;
	struct blk_mq_tag_set tag_set;
	/* The blk-mq queue: the disk's in request mode. */
	struct request_queue *rq_queue;

	struct work_struct config_work;	/* capacity change */

	unsigned int num_vqs;
	struct vbblk_vq *vqs;

	unsigned int sg_elems;		/* data segments per command */
	unsigned int index;		/* name and minor allocation */
	bool read_only;			/* VIRTIO_BLK_F_RO: never send writes */
	bool wz_may_unmap;
};

/* virtio_ring_split.c: the ring layer both paths share. */
int vbblk_vq_add(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
		 struct scatterlist *data, bool data_out);
bool vbblk_vq_kick_prepare(struct vbblk_vq *vq);
void vbblk_vq_notify(struct vbblk_vq *vq);
struct vbblk_iohdr *vbblk_vq_reap(struct vbblk_vq *vq);
int vbblk_init_vqs(struct vbblk *vblk, unsigned int want);
void vbblk_del_vqs(struct vbblk *vblk);
void vbblk_iohdr_init(struct vbblk *vblk, struct vbblk_iohdr *hdr, u32 type,
		      sector_t sector);
blk_status_t vbblk_status(const struct vbblk_iohdr *hdr);

/* virtio_blk_rq.c: the blk-mq request path. */
struct vbblk_cmd {
	struct vbblk_iohdr hdr;
	struct sg_table sg_table;
	struct scatterlist sg[];
};

int vbblk_rq_init_tag_set(struct vbblk *vblk);
void vbblk_rq_vq_done(struct vbblk *vblk, struct vbblk_iohdr *done);
int vbblk_rq_get_id(struct vbblk *vblk, char *buf);

#endif /* VBBLK_H */
