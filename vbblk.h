/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbblk: a virtio-blk guest driver with a bio path and a request path.
 *
 * The layers, top to bottom; a file calls only into layers below it
 * (scripts/check-layers.sh, run by make check-style, enforces it):
 *   core        virtio_blk_core.c, vbblk_stats.c: probe, limits, sysfs,
 *               lifecycle, module parameters
 *   ioctl       vbblk_ioctl.c: SG_IO and the SCSI ioctls
 *   scsi        vbblk_scsi.c: SCSI commands translated (VBBLK_SCSI=y)
 *   sg          vbblk_sg.c: SG_IO buffers and commands
 *   paths       virtio_blk_bio.c (submit_bio), virtio_blk_rq.c (blk-mq),
 *               vbblk_uring.c (io_uring passthrough, /dev/vbblk/<disk>)
 *   batch       virtio_blk_batch.c: per-CPU batches and plugs (bio path)
 *   bio_cmd     virtio_blk_bio_cmd.c: bio commands, parking (bio path)
 *   cmd         vbblk_cmd.c: header, data map, ranges, retry, sync flush
 *   ring        virtio_ring_split.c: add, kick/notify, reap, abort
 *   trace       vbblk_trace.c: the tracepoints (vbblk_trace.h)
 * The ring ends a command through the ->end callback its issuer set.
 * Two layers keep an inline half in a header of their own, for the hot
 * path: virtio_ring_split.h (the add), virtio_blk_batch.h (the send).
 *
 * One private header, in the same order, bottom first: one struct per
 * concept.
 *   struct vbblk       - one virtio disk (configuration and live state)
 *   struct vbblk_vq    - one virtqueue with its own lock
 *   struct vbblk_iohdr - what every command puts on the ring (header, status)
 *   struct vbblk_retry - a failed merged command being retried bio by bio
 *   struct vbblk_bio_vq - the bio path's state of one virtqueue
 *   struct vbblk_bio_cmd - one device command built from bios (bio path)
 *   struct vbblk_batch - the per-CPU command being grown from contiguous bios
 *   struct vbblk_cmd   - one blk-mq request's driver data (request path)
 *   struct vbblk_scsi_io - what a SCSI passthrough command adds to the ring
 *   struct vbblk_sg    - one SG_IO ioctl being served
 */
#ifndef VBBLK_H
#define VBBLK_H

#ifdef pr_fmt
#undef pr_fmt
#endif
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_blk.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "include/vbblk_compat.h"

#define VBBLK_NAME		KBUILD_MODNAME
#define VBBLK_PART_BITS		4
#define VBBLK_MAX_QUEUES	256
#define VBBLK_MAX_POLL_QUEUES	64
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
extern unsigned int vbblk_poll_queues;
extern unsigned int vbblk_queue_depth;
extern bool vbblk_batch;
extern unsigned int vbblk_batch_max_bios;
extern unsigned int vbblk_batch_max_kb;

/* Debug builds' knobs in debugfs (virtio_blk_core.c), else constants. */
#ifdef VBBLK_DEBUG
extern bool vbblk_debug_skip_fua_flush;
extern atomic_t vbblk_debug_uring_polled_foreign;
#define vbblk_skip_fua_flush()	READ_ONCE(vbblk_debug_skip_fua_flush)
#else
#define vbblk_skip_fua_flush()	false
#endif

/* Per-disk counters, exact once I/O is idle: /sys/block/vdX/vbblk/. */
enum vbblk_stat {
	VBBLK_STAT_BIOS,		/* bios taken by submit_bio (after split) */
	VBBLK_STAT_REQUESTS,		/* I/O commands put on the ring */
	VBBLK_STAT_FLUSHES,		/* of which FLUSH commands */
	VBBLK_STAT_MERGED,		/* bios added to an existing batch */
	VBBLK_STAT_DISPATCH_DIRECT,	/* sent at once: nothing to wait for */
	VBBLK_STAT_DISPATCH_NONCONTIG,	/* next bio not contiguous/same op */
	VBBLK_STAT_DISPATCH_LIMIT,	/* segment, byte or bio limit reached */
	VBBLK_STAT_DISPATCH_PLUG,	/* submitter's plug flushed */
	VBBLK_STAT_DISPATCH_COMPLETION,	/* a completion on the queue */
	VBBLK_STAT_DISPATCH_FLUSH,	/* a FLUSH/FUA bio arrived */
	VBBLK_STAT_DISPATCH_DRAIN,	/* removal, freeze, batch set to 0 */
	VBBLK_STAT_DISPATCH_CPU_OFFLINE,
	VBBLK_STAT_NOTIFIES,		/* virtqueue notifies sent */
	VBBLK_STAT_PLUG_DEFERRED,	/* commands whose notify waited for unplug */
	VBBLK_STAT_PLUG_CALLBACKS,	/* plug callbacks allocated (and run) */
	VBBLK_STAT_RING_FULL_WAITS,	/* submitter slept for a free command */
	VBBLK_STAT_PARKED,		/* commands parked on a full ring */
	VBBLK_STAT_NOWAIT_EAGAIN,	/* REQ_NOWAIT bios ended with EAGAIN */
	VBBLK_STAT_RETRIED,		/* failed batches/merged requests retried bio by bio */
	VBBLK_STAT_QUEUE_RQS,		/* requests put on the ring by ->queue_rqs */
	VBBLK_STAT_POLL_BATCHED,	/* polled requests ended in an io_comp_batch */
	VBBLK_STAT_URING_CMDS,		/* io_uring passthrough commands sent */
	VBBLK_STAT_URING_POLLED_ELSEWHERE, /* polled, reaped by another poller */
	VBBLK_STAT_URING_DEFERRED,	/* passthrough queued from our worker */
	VBBLK_STAT_INDIRECT_RING,	/* paired: commands on the indirect ring */
	VBBLK_NR_STATS,
};

struct vbblk_stats {
	u64 c[VBBLK_NR_STATS];
};

/*
 * What a command puts on the ring: the device reads @out and writes @status.
 * @end, set by whoever issues the command, is called by the ring once the
 * device is done with it (interrupt context, no lock held). @done_next
 * chains completed commands so they are ended outside the lock.
 */
struct vbblk_iohdr {
	struct virtio_blk_outhdr out;
	u8 status;
	void (*end)(struct vbblk_iohdr *hdr);
	struct vbblk_iohdr *done_next;
	/* Built once by vbblk_iohdr_setup(): the ring only reads them. */
	struct scatterlist out_sg, status_sg;
	/* The parts the ring is given: out_sg, then set per add. */
	struct scatterlist *sgs[3];
};

struct vbblk;
struct vbblk_vq;
struct vbblk_bio_cmd;
struct vbblk_bio_vq;
struct vbblk_uring;

/* Called by the ring for a virtqueue: room was freed, or a reap ended I/O. */
typedef void (*vbblk_vq_fn)(struct vbblk_vq *vq);
/* Take a reaped command into a poller's completion batch, or refuse. */
typedef bool (*vbblk_batch_fn)(struct vbblk_iohdr *hdr, void *batch);
/* Paths that may wait for room on one ring at once: bio, request, uring. */
#define VBBLK_ROOM_WAITERS	3

/* A vbblk_vq's rings: its ->added, and what a kick prepared. */
#define VBBLK_KICK_DIRECT	BIT(0)
#define VBBLK_KICK_BIG		BIT(1)

/*
 * Bio mode: device FLUSHes shared by concurrent flush stages (see
 * vbblk_flush_stage()). @running leads the FLUSH on the ring, @covered
 * share it, @waiting arrived after it started and share the next.
 */
struct vbblk_flush {
	spinlock_t lock;		/* taken from completion irqs */
	struct vbblk_bio_cmd *running;
	u64 started;			/* @running's, ns: flush statistics */
	struct list_head covered;
	struct list_head waiting;
};

/* One virtqueue: the ring layer's (virtio_ring_split.c). */
struct vbblk_vq {
	spinlock_t lock;		/* serialises add, kick_prepare, get_buf */
	struct virtqueue *vq;		/* with @big: direct descriptors only */
	/*
	 * Where the device has two queues per queue used: an indirect queue
	 * beside @vq for the commands @vq cannot take, large or refused for
	 * room. Both are one vbblk_vq to the layers above.
	 */
	struct virtqueue *big;
	unsigned int big_size;		/* its descriptors: all free when idle */
	u8 added;			/* with @big: VBBLK_KICK_* rings added to; under lock */
	struct vbblk *vblk;
	unsigned int index;
	unsigned int inflight;		/* on the ring; written under lock */
	unsigned long completed;	/* taken off the ring; under lock */
	/*
	 * A reap's scratch, under lock: kept here, not on the interrupt's
	 * stack, where their addresses would cost it a stack protector.
	 */
	struct vbblk_iohdr *reaped;	/* the chain it takes off the rings */
	unsigned int used_len;		/* virtqueue_get_buf()'s, unused */
	/* paths refused for lack of room, called after the next reap; under lock */
	vbblk_vq_fn room[VBBLK_ROOM_WAITERS];
	char name[16];
	char big_name[16];
} ____cacheline_aligned_in_smp;

struct vbblk {
	struct virtio_device *vdev;	/* NULL once removed; see vdev_mutex */
	struct mutex vdev_mutex;	/* guards config access against remove */
	struct gendisk *disk;
	enum vbblk_mode mode;
	struct blk_mq_tag_set tag_set;
	/*
	 * The blk-mq queue: the disk's in request mode; in bio mode a queue
	 * with no disk that carries passthrough commands (GET_ID).
	 */
	struct request_queue *rq_queue;

	struct vbblk_bio_vq *bio_vqs;	/* bio mode: one per vq */
	struct vbblk_batch __percpu *batch;
	struct vbblk_flush flush;
	/* bios that found no command where they could not sleep (softirq) */
	spinlock_t defer_lock;
	struct bio_list deferred;
	struct work_struct defer_work;
	/* suspend: bios wait here while the rings are gone */
	struct bio_list parked;
	bool suspended;
	struct vbblk_stats __percpu *stats;
	atomic_t plug_refs;		/* plug callbacks that still use us */
	struct hlist_node cpuhp_node;
	struct list_head batch_node;	/* bio-mode disks (batching) */
	bool draining;			/* remove/freeze: hold nothing back */
	unsigned int depth;		/* bio commands per queue */

	struct work_struct config_work;	/* capacity change */
	struct work_struct dead_mark_work; /* a failed restore: disk dead */
	/* remove: a device that stopped answering (vbblk_dead_check()) */
	struct delayed_work dead_work;
	unsigned long dead_seen;	/* completions at the last check */
	unsigned int dead_stalled;	/* checks in a row without one */
	bool broken;			/* given up on: fail all I/O at once */
	bool rings_gone;		/* freeze deleted the virtqueues, restore made none */

	unsigned int num_vqs;		/* interrupt-driven, then polled */
	unsigned int num_poll_vqs;	/* the last ones; callbacks off */
	bool paired;			/* each with an indirect ring (->big) */
	struct vbblk_vq *vqs;

	unsigned int sg_elems;		/* data segments per command */
	unsigned int index;		/* name and minor allocation */
	bool read_only;			/* VIRTIO_BLK_F_RO: never send writes */
	bool wz_may_unmap;

	/*
	 * SG_IO (vbblk_sg.c). Features are copied here so that SG_IO never
	 * touches vdev, which goes away at remove while the disk is open.
	 */
	bool scsi_passthrough;		/* VIRTIO_BLK_F_SCSI (legacy devices) */
	bool has_flush;			/* VIRTIO_BLK_F_FLUSH */
	bool has_discard;		/* VIRTIO_BLK_F_DISCARD */
	bool has_write_zeroes;		/* VIRTIO_BLK_F_WRITE_ZEROES */
	bool wce_changeable;		/* VIRTIO_BLK_F_CONFIG_WCE */
	unsigned int scsi_max_segs;	/* data segments beside the SCSI parts */
	unsigned int sg_timeout;	/* SG_SET_TIMEOUT, jiffies; 0: default */
	unsigned int sg_reserved;	/* SG_SET_RESERVED_SIZE, bytes */

	/* io_uring passthrough (vbblk_uring.c); NULL from remove on */
	struct vbblk_uring *uring;
};

/* Interrupt-driven virtqueues come first; the poll queues follow them. */
static inline unsigned int vbblk_io_vqs(const struct vbblk *vblk)
{
	return vblk->num_vqs - vblk->num_poll_vqs;
}

static inline void vbblk_stat_add(struct vbblk *vblk, enum vbblk_stat s,
				  u64 n)
{
	this_cpu_add(vblk->stats->c[s], n);
}

static inline void vbblk_stat_inc(struct vbblk *vblk, enum vbblk_stat s)
{
	vbblk_stat_add(vblk, s, 1);
}


/* Is the device's write cache on? Its configuration says; any layer asks. */
static inline bool vbblk_config_writeback(struct virtio_device *vdev)
{
	u8 wce;

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_CONFIG_WCE)) {
		virtio_cread(vdev, struct virtio_blk_config, wce, &wce);
		return wce;
	}
	return virtio_has_feature(vdev, VIRTIO_BLK_F_FLUSH);
}

/* The same for a disk whose device may be gone (then false). */
static inline bool vbblk_write_cache_on(struct vbblk *vblk)
{
	bool wb;

	mutex_lock(&vblk->vdev_mutex);
	wb = vblk->vdev && vbblk_config_writeback(vblk->vdev);
	mutex_unlock(&vblk->vdev_mutex);
	return wb;
}

/* ---- ring (virtio_ring_split.c) ---- */

/*
 * sg_init_table(), with the usual single entry cleared inline: the
 * library's memset costs more than the rest of setting up a 4k I/O's
 * entry.
 */
static inline void vbblk_sg_init(struct scatterlist *sg, unsigned int n)
{
	if (n == 1) {
		*sg = (struct scatterlist){};
		sg_init_marker(sg, 1);
	} else {
		sg_init_table(sg, n);
	}
}

/*
 * @sg as sg_set_page() and, for the @last, sg_mark_end() leave an entry
 * of a zeroed table (kzalloc(), kcalloc()): a command's pieces are set on
 * every I/O, and its DMA fields stay zero, as the ring neither reads nor
 * writes them (it maps each piece from its page). With CONFIG_DEBUG_SG,
 * the kernel's own steps, which keep whatever markers its checks want
 * (some kernels have none).
 */
static inline void vbblk_sg_set(struct scatterlist *sg, struct page *page,
				unsigned int len, unsigned int off, bool last)
{
#ifdef CONFIG_DEBUG_SG
	sg_init_table(sg, 1);
	if (!last)
		sg_unmark_end(sg);
	sg_set_page(sg, page, len, off);
#else
	sg->page_link = (unsigned long)page | (last ? SG_END : 0);
	sg->offset = off;
	sg->length = len;
#endif
}

static inline void vbblk_sg_one(struct scatterlist *sg, void *buf,
				unsigned int len)
{
	vbblk_sg_init(sg, 1);
	sg_set_buf(sg, buf, len);
}

struct vbblk_scsi_io;
int vbblk_vq_add_scsi(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
		      struct vbblk_scsi_io *sio, struct scatterlist *data,
		      bool data_out);
void vbblk_vq_want_room(struct vbblk_vq *vq, vbblk_vq_fn fn);

/*
 * First half of a kick; caller holds vq->lock. Returns the rings to
 * notify (VBBLK_KICK_*), for vbblk_vq_notify(): a pair prepares only the
 * rings added to since its last kick. Inline: every command kicks.
 */
static inline unsigned int vbblk_vq_kick_prepare(struct vbblk_vq *vq)
{
	unsigned int added = vq->added, rings = 0;

	lockdep_assert_held(&vq->lock);
	if (!vq->big)
		return virtqueue_kick_prepare(vq->vq) ? VBBLK_KICK_DIRECT : 0;
	vq->added = 0;
	if ((added & VBBLK_KICK_DIRECT) && virtqueue_kick_prepare(vq->vq))
		rings = VBBLK_KICK_DIRECT;
	if (unlikely(added & VBBLK_KICK_BIG) && virtqueue_kick_prepare(vq->big))
		rings |= VBBLK_KICK_BIG;
	return rings;
}
void vbblk_vq_kick(struct vbblk_vq *vq);
int vbblk_vq_poll(struct vbblk_vq *vq);
void vbblk_vqs_poll_all(struct vbblk *vblk);
int vbblk_vq_poll_batch(struct vbblk_vq *vq, vbblk_batch_fn add, void *batch);
int vbblk_init_vqs(struct vbblk *vblk, unsigned int want, unsigned int npoll,
		   bool paired);
void vbblk_del_vqs(struct vbblk *vblk);
unsigned int vbblk_vqs_inflight(struct vbblk *vblk);
unsigned long vbblk_vqs_completed(struct vbblk *vblk);
void vbblk_vqs_abort(struct vbblk *vblk);

/* ---- command building (vbblk_cmd.c) ---- */

/* No virtio-blk command for this operation. */
#define VBBLK_T_NONE	U32_MAX

/* The virtio-blk command for a block-layer operation, or VBBLK_T_NONE. */
static inline u32 vbblk_op_type(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return VIRTIO_BLK_T_IN;
	case REQ_OP_WRITE:
		return VIRTIO_BLK_T_OUT;
	case REQ_OP_FLUSH:
		return VIRTIO_BLK_T_FLUSH;
	case REQ_OP_DISCARD:
		return VIRTIO_BLK_T_DISCARD;
	case REQ_OP_WRITE_ZEROES:
		return VIRTIO_BLK_T_WRITE_ZEROES;
	case REQ_OP_SECURE_ERASE:
		return VIRTIO_BLK_T_SECURE_ERASE;
	default:
		return VBBLK_T_NONE;
	}
}

/* Flags of a discard/write-zeroes range: unmap where allowed and wanted. */
static inline u32 vbblk_range_flags(const struct vbblk *vblk, blk_opf_t opf)
{
	if ((opf & REQ_OP_MASK) == REQ_OP_WRITE_ZEROES && vblk->wz_may_unmap &&
	    !(opf & REQ_NOUNMAP))
		return VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP;
	return 0;
}

/* One discard/write-zeroes/secure-erase range, as the device reads it. */
static inline void vbblk_range_set(struct virtio_blk_discard_write_zeroes *r,
				   sector_t sector, u32 sectors, u32 flags)
{
	r->sector = cpu_to_le64(sector);
	r->num_sectors = cpu_to_le32(sectors);
	r->flags = cpu_to_le32(flags);
}

/* A failed merged command being sent again bio by bio. */
struct vbblk_retry {
	bool active;
};

void vbblk_iohdr_setup(struct vbblk_iohdr *hdr,
		       void (*end)(struct vbblk_iohdr *hdr));

/* Inline: every command sets its header, every completion reads it. */
static inline void vbblk_iohdr_init(struct vbblk *vblk,
				    struct vbblk_iohdr *hdr, u32 type,
				    sector_t sector)
{
	struct virtio_device *vdev = vblk->vdev;

	hdr->out.type = cpu_to_virtio32(vdev, type);
	hdr->out.ioprio = 0;
	hdr->out.sector = cpu_to_virtio64(vdev, sector);
	/* A device that completes without writing status must not look OK. */
	hdr->status = VIRTIO_BLK_S_IOERR;
}

/* The header's VIRTIO_BLK_T_*, for a caller that does not keep it. */
static inline u32 vbblk_iohdr_type(struct vbblk *vblk,
				   const struct vbblk_iohdr *hdr)
{
	return virtio32_to_cpu(vblk->vdev, hdr->out.type);
}

static inline blk_status_t vbblk_status(const struct vbblk_iohdr *hdr)
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
unsigned int vbblk_bio_map(struct request_queue *q, struct bio *bio,
			   struct scatterlist *sg);
bool vbblk_retry_begin(struct vbblk_retry *r, struct vbblk *vblk,
		       blk_status_t st, bool merged, sector_t sector);
int vbblk_flush_sync(struct vbblk_vq *vq);

/*
 * Data scatterlist entries of a bio on the bio-mode disk. Data within one
 * page, as most I/O is, is one entry whatever the limits: the block layer
 * keeps max_segment_size and the segment boundary at least a page.
 */
static inline unsigned int vbblk_bio_segs(struct vbblk *vblk, struct bio *bio)
{
	struct bio_vec bv;

	/* An empty bio (a flush) may have no vector table at all. */
	if (!bio->bi_iter.bi_size)
		return 0;
	bv = mp_bvec_iter_bvec(bio->bi_io_vec, bio->bi_iter);
	if (bv.bv_len == bio->bi_iter.bi_size &&
	    offset_in_page(bv.bv_offset) + bv.bv_len <= PAGE_SIZE)
		return 1;
	return vbblk_bio_map(vblk->disk->queue, bio, NULL);
}

/*
 * Map a bio that vbblk_bio_map() counted as one entry: its first bvec is
 * all of it and within the limits, so nothing is checked again.
 */
static inline void vbblk_bio_map_one(struct bio *bio, struct scatterlist *sg)
{
	struct bio_vec bv = mp_bvec_iter_bvec(bio->bi_io_vec, bio->bi_iter);

	sg_set_page(sg, bv.bv_page + (bv.bv_offset >> PAGE_SHIFT), bv.bv_len,
		    offset_in_page(bv.bv_offset));
}

/* ---- bio commands (virtio_blk_bio_cmd.c) ---- */

/* The bio path's state of one virtqueue. */
struct vbblk_bio_vq {
	struct vbblk_vq *vq;
	struct list_head parked;	/* ring was full; under vq->lock */
	struct delayed_work park_work;	/* re-adds what no reap will */
	atomic_t nr_cmds;		/* commands in use (<= depth) */
	struct vbblk_bio_cmd **cmds;	/* depth commands, preallocated */
	struct llist_head free_cmds;	/* pushed lock-free on completion */
	spinlock_t free_lock;		/* serialises pops of free_cmds */
	wait_queue_head_t wait;		/* for a free command */
	struct scatterlist *sg;		/* scratch for one add; under vq->lock */
} ____cacheline_aligned_in_smp;

/* A bio command's step through FLUSH/FUA emulation (virtio_blk_bio.c). */
enum vbblk_stage {
	VBBLK_STAGE_DATA,
	VBBLK_STAGE_PREFLUSH,
	VBBLK_STAGE_POSTFLUSH,
};

struct vbblk_bio_cmd {
	struct vbblk_iohdr hdr;
	struct vbblk_vq *vq;
	struct vbblk_bio_vq *bvq;	/* vq's; where the command is freed */
	struct bio *bio, *tail;		/* the bios, chained by bi_next */
	unsigned int nr_bios;
	unsigned int nr_segs;		/* data scatterlist entries */
	unsigned int bytes;
	sector_t end;			/* first sector after the data */
	unsigned long start_time;	/* I/O accounting, when accounted */
	unsigned int acct_sectors;	/* what start_time accounted */
	bool accounted;
	u8 stage;			/* flush emulation step */
	bool postflush;			/* FUA: flush after the data */
	struct vbblk_retry retry;	/* sending ->bio alone, then the next */
	struct vbblk_batch *batch;	/* the CPU's batch that counts it */
	struct list_head park;
	struct list_head flush_node;	/* waits for, or shares, a FLUSH */
	struct scatterlist sg1;		/* the data of one bio in one piece */
	struct llist_node free_node;	/* on free_cmds */
	struct virtio_blk_discard_write_zeroes range;
};

static inline struct vbblk_bio_vq *vbblk_bvq(struct vbblk_vq *vq)
{
	return &vq->vblk->bio_vqs[vq->index];
}

/*
 * A free command, or NULL. Completions push lock-free; pops are
 * serialised because llist_del_first needs one consumer at a time, and
 * several CPUs may share a queue. submit_bio may run in softirq context
 * (dm-crypt completing a write from its cipher's callback) and interrupt
 * a submitter that holds the lock on this CPU: interrupts stay off while
 * it is held. Inline, as is vbblk_bio_cmd_free(): each is once per bio.
 */
static inline struct vbblk_bio_cmd *vbblk_bio_cmd_get(struct vbblk_bio_vq *bvq)
{
	struct vbblk_bio_cmd *cmd;
	struct llist_node *node;
	unsigned long flags;

	spin_lock_irqsave(&bvq->free_lock, flags);
	node = llist_del_first(&bvq->free_cmds);
	spin_unlock_irqrestore(&bvq->free_lock, flags);
	if (!node)
		return NULL;
	atomic_inc(&bvq->nr_cmds);

	/*
	 * Every field a command reads before writing it, but for those
	 * vbblk_bio_cmd_first() sets, as every getter does next; no memset.
	 */
	cmd = llist_entry(node, struct vbblk_bio_cmd, free_node);
	cmd->accounted = false;
	cmd->stage = 0;
	cmd->postflush = false;
	cmd->retry.active = false;
	cmd->batch = NULL;
	INIT_LIST_HEAD(&cmd->park);
	return cmd;
}

static inline void vbblk_bio_cmd_free(struct vbblk_bio_cmd *cmd)
{
	struct vbblk_bio_vq *bvq = cmd->bvq;

	llist_add(&cmd->free_node, &bvq->free_cmds);
	atomic_dec(&bvq->nr_cmds);
	/* Submitters waiting for a command, or a drain waiting for zero. */
	if (wq_has_sleeper(&bvq->wait))
		wake_up(&bvq->wait);
}

/*
 * End the command's I/O accounting, against the block device its bios were
 * sent to (a partition's statistics include its I/O), while they are
 * still alive to name it.
 */
static inline void vbblk_bio_cmd_end_acct(struct vbblk_bio_cmd *cmd)
{
	if (cmd->accounted)
		vbblk_end_io_acct(cmd->bio->bi_bdev, bio_op(cmd->bio),
				  cmd->acct_sectors, cmd->start_time);
}

struct vbblk_bio_cmd *vbblk_bio_cmd_wait(struct vbblk_bio_vq *bvq);

/* A command just got: @bio, @segs data segments, is its first and only. */
static inline void vbblk_bio_cmd_first(struct vbblk_bio_cmd *cmd,
				       struct bio *bio, unsigned int segs)
{
	bio->bi_next = NULL;
	cmd->bio = bio;
	cmd->tail = bio;
	cmd->nr_bios = 1;
	cmd->nr_segs = segs;
	cmd->bytes = bio->bi_iter.bi_size;
	cmd->end = bio_end_sector(bio);
}

/*
 * Append @bio, @segs data segments, to the chain vbblk_bio_cmd_first()
 * began: a command has its first bio before any other.
 */
static inline void vbblk_bio_cmd_add_bio(struct vbblk_bio_cmd *cmd,
					 struct bio *bio, unsigned int segs)
{
	bio->bi_next = NULL;
	cmd->tail->bi_next = bio;
	cmd->tail = bio;
	cmd->nr_bios++;
	cmd->nr_segs += segs;
	cmd->bytes += bio->bi_iter.bi_size;
	cmd->end = bio_end_sector(bio);
}

void vbblk_bio_cmd_dispatch(struct vbblk_bio_cmd *cmd, bool plugged);
void vbblk_bio_cmd_acct_flush(struct vbblk_bio_cmd *cmd, u64 started);
void vbblk_bio_cmds_drain(struct vbblk *vblk);
int vbblk_bio_cmds_init(struct vbblk *vblk, void (*end)(struct vbblk_iohdr *));
void vbblk_bio_cmds_exit(struct vbblk *vblk);

/* ---- batching and plugs (virtio_blk_batch.c) ---- */

struct vbblk_batch {
	spinlock_t lock;		/* taken from the completion irq too */
	struct vbblk_bio_cmd *cmd;	/* held, not yet on the ring */
	bool plugged;			/* a plug holds it: its unplug sends it */
	bool stream;			/* it continues a sequential stream */
	sector_t last_end;		/* last bio's end, for streams; lockless */
	atomic_t inflight;		/* its commands on the ring */
	struct vbblk_vq *vq;
};

/* This CPU's batch; its queue, b->vq, is where its commands go. */
static inline struct vbblk_batch *vbblk_batch_this(struct vbblk *vblk)
{
	return raw_cpu_ptr(vblk->batch);
}

void vbblk_batch_init(struct vbblk *vblk);
bool vbblk_plug_note_plugged(struct vbblk *vblk, struct vbblk_vq *vq,
			     struct vbblk_batch *b);

/*
 * If the submitter holds a plug, make its unplug notify @vq and flush
 * batch @b (either may be NULL) and return true. Without a plug (or if
 * the callback cannot be allocated) return false: act now. Most bios
 * come without a plug: that is decided inline.
 */
static inline bool vbblk_plug_note(struct vbblk *vblk, struct vbblk_vq *vq,
				   struct vbblk_batch *b)
{
	if (!current->plug)
		return false;
	return vbblk_plug_note_plugged(vblk, vq, b);
}

bool vbblk_batch_merge_held(struct vbblk *vblk, struct vbblk_batch *b,
			    struct bio *bio, unsigned int segs);

/*
 * Add @bio to the command @b (this CPU's batch) holds if it fits: true,
 * the bio is taken. Otherwise the held command goes out, and the caller
 * brings a command of its own on b->vq to vbblk_batch_add(), having read
 * before this whether @bio continues the stream (b->last_end, which this
 * moves to @bio's end). Nothing held, as for random I/O, is decided
 * inline: only the stream's end to note, without the lock. A command
 * another task holds meanwhile (one preempted here, or that moved to this
 * CPU) is left as it is.
 */
static inline bool vbblk_batch_merge(struct vbblk *vblk, struct vbblk_batch *b,
				     struct bio *bio, unsigned int segs)
{
	if (READ_ONCE(b->cmd))
		return vbblk_batch_merge_held(vblk, b, bio, segs);
	WRITE_ONCE(b->last_end, bio_end_sector(bio));
	return false;
}

void vbblk_batch_cut(struct vbblk *vblk);
void vbblk_batch_send_after(struct vbblk_batch *b);

/*
 * A command ended (its bios have): its CPU's count falls, and a stream
 * batch held for that count may go now. Only this CPU's own commands
 * count, and each ends here, from a reap or failed in dispatch (the
 * device was given up on): so the hold is re-checked exactly where the
 * count drops, and nothing else need look. The barrier pairs with the
 * one in vbblk_batch_hold(): the holder sees the lower count, or we its
 * command. Inline: once per command, and most find nothing held.
 */
static inline void vbblk_batch_cmd_done(struct vbblk_bio_cmd *cmd)
{
	struct vbblk_batch *b = cmd->batch;

	if (!b)
		return;
	atomic_dec(&b->inflight);
	/* Pairs with vbblk_batch_hold(): the count falls, then we look. */
	smp_mb__after_atomic();
	if (READ_ONCE(b->cmd))
		vbblk_batch_send_after(b);
}
void vbblk_batch_flush_all(struct vbblk *vblk, enum vbblk_stat reason);
void vbblk_batch_wait_plugs(struct vbblk *vblk);
int vbblk_batch_cpuhp_init(void);
void vbblk_batch_cpuhp_exit(void);
int vbblk_batch_add_disk(struct vbblk *vblk);
void vbblk_batch_remove_disk(struct vbblk *vblk);
void vbblk_batch_release_all(void);

/* ---- the I/O paths (virtio_blk_bio.c, virtio_blk_rq.c) ---- */

/* The virtio-blk command for a read or write bio's data. */
static inline u32 vbblk_rw_type(const struct bio *bio)
{
	return vbblk_op_type(op_is_write(bio_op(bio)) ? REQ_OP_WRITE :
							REQ_OP_READ);
}

void vbblk_submit_bio(struct bio *bio);
int vbblk_poll_bio(struct bio *bio, struct io_comp_batch *iob,
		   unsigned int flags);
int vbblk_bio_init(struct vbblk *vblk);
void vbblk_bio_exit(struct vbblk *vblk);
void vbblk_bio_drain(struct vbblk *vblk);
void vbblk_bio_suspend(struct vbblk *vblk);
void vbblk_bio_resume(struct vbblk *vblk);

/* io_uring passthrough: /dev/vbblk/<disk> (vbblk_uring.c) */
int vbblk_uring_add(struct vbblk *vblk);
void vbblk_uring_remove(struct vbblk *vblk);
void vbblk_uring_freeze(struct vbblk *vblk);
void vbblk_uring_restore(struct vbblk *vblk);
int vbblk_uring_register(void);
void vbblk_uring_unregister(void);

/*
 * The blk-mq request path. A REQ_OP_DRV_IN/OUT request (GET_ID, SG_IO)
 * names its virtio command itself: whoever allocates it sets @drv_type,
 * @drv_sector and, for VIRTIO_BLK_T_SCSI_CMD, @scsi.
 */
struct vbblk_cmd {
	struct vbblk_iohdr hdr;
	struct vbblk_retry retry;	/* sending req->bio alone, then the next */
	u32 drv_type;
	sector_t drv_sector;
	struct vbblk_scsi_io *scsi;
	int nents;			/* data entries, from prep to add */
	struct sg_table sg_table;
	struct scatterlist sg[];
};

int vbblk_rq_init_tag_set(struct vbblk *vblk);
struct request *vbblk_rq_alloc_drv(struct vbblk *vblk, bool data_out,
				   u32 type, sector_t sector);
int vbblk_rq_get_id(struct vbblk *vblk, char *buf);

/*
 * ---- SG_IO (vbblk_sg.c, vbblk_scsi.c, vbblk_ioctl.c) ----
 * The device writes @sense and @inhdr, so this lives in kmalloc'ed memory.
 */
#define VBBLK_CDB_MAX		32
#define VBBLK_SENSE_BYTES	96	/* the legacy virtio-blk sense buffer */

struct vbblk_scsi_io {
	u8 cdb[VBBLK_CDB_MAX];
	u8 sense[VBBLK_SENSE_BYTES];
	struct virtio_scsi_inhdr inhdr;
	unsigned int cdb_len;
};

/* The caller's view of one SG_IO and what it will be told. */
struct vbblk_sg {
	struct vbblk *vblk;
	struct vbblk_scsi_io *io;
	void __user *dxferp;
	unsigned int dxfer_len;
	int dxfer_dir;			/* SG_DXFER_* */
	unsigned int iovec_count;
	unsigned int timeout;		/* jiffies */
	bool at_head;
	/* device state read once per command */
	bool read_only;
	bool writeback;
	/* results */
	u8 status, msg_status, host_status, driver_status;
	unsigned int sense_len;
	unsigned int resid;
};

unsigned int vbblk_sg_max_bytes(const struct vbblk *vblk);
int vbblk_sg_exec(struct vbblk_sg *sg, u32 type, sector_t sector,
		  void *kbuf, unsigned int len, bool user_data, bool out,
		  struct vbblk_scsi_io *scsi);
int vbblk_sg_dev_io(struct vbblk_sg *sg, u32 type, sector_t sector,
		    void *kbuf, unsigned int len, bool user_data);
int vbblk_sg_copy_in(struct vbblk_sg *sg, void *buf, unsigned int len);
int vbblk_sg_copy_out(struct vbblk_sg *sg, const void *buf,
		      unsigned int len);
void vbblk_scsi_set_sense(struct vbblk_sg *sg, u8 key, u8 asc, u8 ascq);

/*
 * SCSI commands answered by translating them into virtio-blk commands.
 * Built with VBBLK_SCSI=y (the default); without it a disk whose device
 * has no legacy SCSI passthrough is no SCSI device: SG_IO gets -ENOTTY.
 */
#ifdef VBBLK_SCSI
int vbblk_scsi_translate(struct vbblk_sg *sg);
#else
static inline int vbblk_scsi_translate(struct vbblk_sg *sg)
{
	return -ENOTTY;
}
#endif

int vbblk_ioctl(struct block_device *bdev, vbblk_open_mode_t mode,
		unsigned int cmd, unsigned long arg);

/* ---- core (vbblk_stats.c) ---- */
extern const struct attribute_group vbblk_stats_group;

#endif /* VBBLK_H */
