// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring passthrough: a character device per disk, /dev/vbblk/<disk>,
 * whose IORING_OP_URING_CMD commands (include/uapi/linux/vbblk.h) become
 * virtio-blk commands on the submitting CPU's virtqueue with no block layer
 * in between, in either mode. It sits beside the I/O paths and calls only
 * the command and ring layers.
 *
 * A command takes a preallocated struct vbblk_ucmd of its virtqueue, pins
 * (or, for registered buffers, borrows) the user's pages straight into its
 * scatterlist and goes on the ring; under the submitter's plug (io_uring
 * plugs a batch of three or more) the notify waits for the unplug, one per
 * virtqueue. The ring's completion hands the result to the submitter's task
 * (pages are dirtied and unpinned there). A command on a poll queue may be
 * reaped by any poller, but only its own ring's poll ends it (see
 * vbblk_uring_iopoll()).
 *
 * Lifetime: an open file holds the character device, which holds the disk
 * (its own reference: removal's device_del() drops the parent's), which
 * holds struct vbblk. ur->ref counts commands past the gate (on the rings
 * or on their way) and plugs that will notify: freeze and remove kill it
 * and wait for it to drain, polling the poll queues meanwhile (their
 * owners may be frozen or gone), which vbblk_vqs_abort() guarantees for a
 * device that stopped answering; restore brings it back to life (so it may
 * be reinitialised). A submitter's notify, which may come after its
 * command ended, runs under rcu_read_lock(): the drain then waits for RCU,
 * so the rings outlive it. Nothing reads ur->vblk before the gate
 * (vbblk_uring_enter()) is passed.
 */
#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/ioprio.h>
#include <linux/llist.h>
#include <linux/percpu-refcount.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "vbblk.h"
#include "virtio_ring_split.h"
#include "include/uapi/linux/vbblk.h"

/* Pages kept inside each command (32 KiB); larger I/O allocates its tables. */
#define VBBLK_UCMD_INLINE	8
/* Minors: one per disk index (the disk's own minor >> VBBLK_PART_BITS). */
#define VBBLK_URING_MINORS	(1U << (MINORBITS - VBBLK_PART_BITS))

struct vbblk_uring_vq;

/*
 * What a command's end does beyond giving back its pages and itself to
 * the pool (vbblk_ucmd.extra): none of it for a plain READ or WRITE.
 */
#define VBBLK_UCMD_SPARE	BIT(0)	/* not from the pool: freed when put */
#define VBBLK_UCMD_TABLES	BIT(1)	/* its page and sg tables allocated */
#define VBBLK_UCMD_ID		BIT(2)	/* GET_ID: the serial to user space */

/* One passthrough command: what it put on the ring and what it holds. */
struct vbblk_ucmd {
	struct vbblk_iohdr hdr;
	struct vbblk_uring_vq *uvq;
	struct io_uring_cmd *ioucmd;
	int result;			/* bytes moved, or -errno */
	unsigned int bytes;
	unsigned int nr_pages;		/* pages to give back */
	u8 op;				/* VBBLK_OP_* */
	bool polled;			/* on a poll queue: its ring's poll ends it */
	bool done;			/* polled: reaped, result set */
	u8 extra;			/* VBBLK_UCMD_*: more for its end to do */
	/* queued later (vbblk_uvq_later()): what to put on the ring */
	bool gated;			/* holds its submit reference */
	bool out;
	struct scatterlist *data;
	struct list_head later;		/* on uvq->later, in arrival order */
	void __user *id_buf;		/* GET_ID: where the serial goes */
	struct page **pages;
	struct scatterlist *sg;
	struct llist_node free_node;
	union {
		struct virtio_blk_discard_write_zeroes range;
		u8 id[VIRTIO_BLK_ID_BYTES];
	};
	struct page *inline_pages[VBBLK_UCMD_INLINE];
	struct scatterlist inline_sg[VBBLK_UCMD_INLINE];
};

/* The passthrough state of one virtqueue: its commands. */
struct vbblk_uring_vq {
	struct vbblk_uring *ur;
	unsigned int index;		/* vblk->vqs[index] */
	struct vbblk_vq *vq;		/* that, read only past the gate */
	/*
	 * Free commands: anyone gives back (lock-free, from any context);
	 * takers hold the lock, so that each entry is taken once.
	 */
	spinlock_t lock;
	struct llist_head free;
	wait_queue_head_t wait;		/* for a free command or ring room */
	atomic_t room;			/* reaps that freed room, for waiters */
	atomic_t spares;		/* spare commands out (beyond the pool) */
	/*
	 * Commands that could not go on the ring at once, queued in order by
	 * one work item (vbblk_uvq_later()): a command issued while any
	 * waits goes behind them.
	 */
	spinlock_t later_lock;
	struct list_head later;
	unsigned int nr_later;		/* on the list, or being queued */
	bool later_busy;		/* later_work queued or running */
	struct work_struct later_work;
	unsigned int nr_cmds;
	struct vbblk_ucmd **cmds;
} ____cacheline_aligned_in_smp;

struct vbblk_uring {
	struct device dev;
	struct cdev cdev;
	struct vbblk *vblk;		/* only once the gate is passed */
	struct device *disk_dev;	/* held: vblk lives as long as we do */
	unsigned int depth;		/* commands per virtqueue */
	/* commands on the rings and plugs yet to notify; killed to drain */
	struct percpu_ref ref;
	wait_queue_head_t gate_wait;	/* ref drained, or the gate opened */
	bool frozen;			/* freeze: submitters wait */
	bool dead;			/* removed: submitters fail */
	bool killed;
	struct mutex pool_lock;		/* first open allocates the commands */
	bool pool_ready;
	unsigned int nr_vqs;
	struct vbblk_uring_vq *uvqs;
	/*
	 * The disk's limits, final once it is added and never changed by a
	 * virtio disk: every command checks against them, so they are read
	 * here, not from the queue each time. (Its capacity may change.)
	 */
	u64 max_bytes;			/* max_hw_sectors, in bytes */
	u32 lbs_mask;			/* logical block size - 1 */
	u32 dma_mask;			/* the DMA alignment asked of a piece */
	u32 max_pages;			/* one scatterlist entry each */
	/* A plain buffer of at most this many pages takes the fast path. */
	u32 fast_pages;
};

/* What io_uring keeps for us in the command: valid until it is done. */
struct vbblk_uring_pdu {
	struct vbblk_ucmd *ucmd;
	bool polled;		/* if so, ucmd is ours until its poll ends it */
};

static dev_t vbblk_uring_devt;
static struct class vbblk_uring_class = {
	.name = "vbblk",
};

static struct vbblk_uring_pdu *vbblk_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct vbblk_uring_pdu) > sizeof(ioucmd->pdu));
	return (struct vbblk_uring_pdu *)ioucmd->pdu;
}

/* ---- commands ---- */

static struct vbblk_ucmd *vbblk_ucmd_get(struct vbblk_uring_vq *uvq)
{
	struct llist_node *node;

	spin_lock(&uvq->lock);
	node = llist_del_first(&uvq->free);
	spin_unlock(&uvq->lock);
	return node ? llist_entry(node, struct vbblk_ucmd, free_node) : NULL;
}

/*
 * Give back the pages a command holds, marked dirty if @dirty (the device
 * wrote them). That may sleep.
 */
static __always_inline void vbblk_ucmd_unpin(struct vbblk_ucmd *uc,
					     bool dirty)
{
	if (uc->nr_pages)
		vbblk_iter_release_pages(uc->pages, uc->nr_pages, dirty);
	uc->nr_pages = 0;
}

/* Its pages, and the tables that held them if they were allocated. */
static void vbblk_ucmd_unmap(struct vbblk_ucmd *uc, bool dirty)
{
	vbblk_ucmd_unpin(uc, dirty);
	if (uc->extra & VBBLK_UCMD_TABLES) {
		kfree(uc->pages);
		kfree(uc->sg);
		uc->pages = uc->inline_pages;
		uc->sg = uc->inline_sg;
		uc->extra &= ~VBBLK_UCMD_TABLES;
	}
}

/* Back to its pool, and a submitter waiting for one told. */
static __always_inline void vbblk_ucmd_free(struct vbblk_ucmd *uc)
{
	struct vbblk_uring_vq *uvq = uc->uvq;

	llist_add(&uc->free_node, &uvq->free);
	/*
	 * llist_add()'s cmpxchg is a full barrier: it orders the free entry
	 * before this test, as wq_has_sleeper()'s smp_mb() would; the waiter
	 * is queued before it tests the list (wait_event()).
	 */
	if (waitqueue_active(&uvq->wait))
		wake_up(&uvq->wait);
}

/*
 * Give back everything a command holds, and the command. Out of line:
 * what a plain command's end does not need, and the error paths (a
 * command the device never saw).
 */
static noinline void vbblk_ucmd_put_all(struct vbblk_ucmd *uc, bool dirty)
{
	vbblk_ucmd_unmap(uc, dirty);
	if (uc->extra & VBBLK_UCMD_SPARE) {
		atomic_dec(&uc->uvq->spares);
		kfree(uc);
		return;
	}
	uc->extra = 0;
	vbblk_ucmd_free(uc);
}

/* A command the device never saw, on an error path. */
static void vbblk_ucmd_drop(struct vbblk_ucmd *uc)
{
	vbblk_ucmd_put_all(uc, false);
}

/* The completion's: its common case decided in one test. */
static __always_inline void vbblk_ucmd_put(struct vbblk_ucmd *uc, bool dirty)
{
	if (unlikely(uc->extra)) {
		vbblk_ucmd_put_all(uc, dirty);
		return;
	}
	vbblk_ucmd_unpin(uc, dirty);
	vbblk_ucmd_free(uc);
}

/* In the submitter's task (or its poller): results to user space. */
#ifdef VBBLK_DEBUG
/* Polled commands ended outside their own ring's poll: must stay 0. */
atomic_t vbblk_debug_uring_polled_foreign = ATOMIC_INIT(0);
#endif

/*
 * Results to user space: in the submitter's task (task work), or for a
 * polled command in its own ring's poll (@own_poll).
 */
static void vbblk_ucmd_complete(struct io_uring_cmd *ioucmd,
				unsigned int issue_flags, bool own_poll)
{
	struct vbblk_ucmd *uc = vbblk_pdu(ioucmd)->ucmd;
	int res = uc->result;

#ifdef VBBLK_DEBUG
	if (uc->polled && !own_poll)
		atomic_inc(&vbblk_debug_uring_polled_foreign);
#endif

	if (unlikely(uc->extra & VBBLK_UCMD_ID) && res >= 0 &&
	    copy_to_user(uc->id_buf, uc->id, VBBLK_ID_BYTES))
		res = -EFAULT;
	vbblk_ucmd_put(uc, uc->op == VBBLK_OP_READ);
	vbblk_uring_cmd_done(ioucmd, res, issue_flags);
}

static void vbblk_ucmd_finish(struct io_uring_cmd *ioucmd,
			      unsigned int issue_flags)
{
	vbblk_ucmd_complete(ioucmd, issue_flags, false);
}

VBBLK_URING_TW(vbblk_ucmd_tw, vbblk_ucmd_finish)

/* Its result is set: on to the context that may post it. */
static void vbblk_ucmd_ended(struct vbblk_ucmd *uc)
{
	if (uc->polled) {
		/*
		 * Whoever reaped it (another ring's poll, a block device
		 * poller, a drain) may hold another ring's lock or none: its
		 * own ring's poll ends it (vbblk_uring_iopoll()). Last.
		 */
		smp_store_release(&uc->done, true);
		return;
	}
	vbblk_uring_cmd_in_task(uc->ioucmd, vbblk_ucmd_tw);
}

/* The ring is done with it (interrupt, poller or abort; no lock held). */
static void vbblk_ucmd_end(struct vbblk_iohdr *hdr)
{
	struct vbblk_ucmd *uc = container_of(hdr, struct vbblk_ucmd, hdr);
	struct vbblk_uring *ur = uc->uvq->ur;
	blk_status_t st = vbblk_status(hdr);

	uc->result = st ? blk_status_to_errno(st) : uc->bytes;
	/*
	 * Off the ring: freeze and remove need not wait for the rest. Until
	 * it is done, the command's file holds ur (and so uc): after that,
	 * nothing of ur may be touched here.
	 */
	percpu_ref_put(&ur->ref);
	vbblk_ucmd_ended(uc);
}

/* ---- the gate: freeze waits, remove fails ---- */

static noinline int vbblk_uring_enter_wait(struct vbblk_uring *ur,
					   bool nowait)
{
	while (!percpu_ref_tryget_live(&ur->ref)) {
		if (READ_ONCE(ur->dead))
			return -ENODEV;
		if (nowait)
			return -EAGAIN;
		if (wait_event_interruptible(ur->gate_wait,
					     !READ_ONCE(ur->frozen) ||
					     READ_ONCE(ur->dead)))
			return -EINTR;
	}
	return 0;
}

/* Open, most of the time: decided inline. */
static inline int vbblk_uring_enter(struct vbblk_uring *ur, bool nowait)
{
	if (likely(percpu_ref_tryget_live(&ur->ref)))
		return 0;
	return vbblk_uring_enter_wait(ur, nowait);
}

static void vbblk_uring_ref_release(struct percpu_ref *ref)
{
	struct vbblk_uring *ur = container_of(ref, struct vbblk_uring, ref);

	wake_up_all(&ur->gate_wait);
}

/*
 * Stop new commands and wait for those on the rings. Polled ones raise no
 * interrupt and their owners may never poll again (frozen tasks, a ring
 * refused by the dead gate): reap the poll queues here meanwhile.
 */
static void vbblk_uring_drain(struct vbblk_uring *ur)
{
	if (!ur->killed) {
		ur->killed = true;
		percpu_ref_kill(&ur->ref);
	}
	while (!wait_event_timeout(ur->gate_wait, percpu_ref_is_zero(&ur->ref),
				   msecs_to_jiffies(10)))
		vbblk_vqs_poll_all(ur->vblk);
	/* Submitters may still notify for ended commands (vbblk_ucmd_queue()) */
	synchronize_rcu();
}

/* ---- plugs: one notify per virtqueue per submission batch ---- */

struct vbblk_uring_plug {
	struct blk_plug_cb cb;
	bool held;			/* holds ur->ref until it runs */
	DECLARE_BITMAP(kick, VBBLK_MAX_QUEUES);
};

static void vbblk_uring_unplug(struct blk_plug_cb *cb, bool from_schedule)
{
	struct vbblk_uring_plug *p = container_of(cb, struct vbblk_uring_plug,
						  cb);
	struct vbblk_uring *ur = cb->data;
	struct vbblk *vblk = ur->vblk;
	unsigned int i;

	for_each_set_bit(i, p->kick, ur->nr_vqs)
		vbblk_vq_kick(&vblk->vqs[i]);
	vbblk_stat_inc(vblk, VBBLK_STAT_PLUG_CALLBACKS);
	kfree(p);
	percpu_ref_put(&ur->ref);
}

/* Under the submitter's plug, leave @index's notify to the unplug. */
static __always_inline bool vbblk_uring_plug_note(struct vbblk_uring *ur, unsigned int index)
{
	struct vbblk_uring_plug *p;
	struct blk_plug_cb *cb;

	if (!current->plug)
		return false;
	cb = blk_check_plugged(vbblk_uring_unplug, ur, sizeof(*p));
	if (!cb)
		return false;
	p = container_of(cb, struct vbblk_uring_plug, cb);
	/* A new callback is zeroed: it holds the virtqueues until it runs. */
	if (!p->held) {
		p->held = true;
		percpu_ref_get(&ur->ref);
	}
	__set_bit(index, p->kick);
	return true;
}

/* ---- building a command ---- */

static bool vbblk_op_writes(u8 op)
{
	return op == VBBLK_OP_WRITE || op == VBBLK_OP_DISCARD ||
	       op == VBBLK_OP_WRITE_ZEROES;
}

/*
 * What a command asks, read once from its SQE, which user space shares.
 * Passed by value, never by address, and with no array: a copy of the
 * uapi struct on the submitter's stack would cost every command a stack
 * canary and, where the kernel zeroes locals, a zeroing.
 */
struct vbblk_ucmd_args {
	u64 sector;
	u64 addr;
	u32 flags;
	u32 len;
	u32 nr_sectors;
	u16 ioprio;
	u8 opcode;
};

static __always_inline struct vbblk_ucmd_args
vbblk_uring_args(const struct vbblk_uring_cmd *sqe)
{
	return (struct vbblk_ucmd_args){
		.opcode		= READ_ONCE(sqe->opcode),
		.ioprio		= READ_ONCE(sqe->ioprio),
		.flags		= READ_ONCE(sqe->flags),
		.sector		= READ_ONCE(sqe->sector),
		.addr		= READ_ONCE(sqe->addr),
		.len		= READ_ONCE(sqe->len),
		.nr_sectors	= READ_ONCE(sqe->nr_sectors),
	};
}

/* Everything about a command that does not need the device. */
static __always_inline int vbblk_uring_check(struct file *file,
					     const struct vbblk_ucmd_args c)
{
	u32 flags_ok = 0;

	switch (c.opcode) {
	case VBBLK_OP_READ:
	case VBBLK_OP_WRITE:
		flags_ok = VBBLK_F_VEC;
		if (c.nr_sectors)
			return -EINVAL;
		break;
	case VBBLK_OP_FLUSH:
		if (c.addr || c.len || c.nr_sectors || c.sector)
			return -EINVAL;
		break;
	case VBBLK_OP_WRITE_ZEROES:
		flags_ok = VBBLK_F_UNMAP;
		fallthrough;
	case VBBLK_OP_DISCARD:
		if (c.addr || c.len || !c.nr_sectors)
			return -EINVAL;
		break;
	case VBBLK_OP_GET_ID:
		if (c.len != VBBLK_ID_BYTES || c.sector || c.nr_sectors)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (c.flags & ~flags_ok)
		return -EINVAL;

	if (c.ioprio) {
		int class = IOPRIO_PRIO_CLASS(c.ioprio);

		if (class > IOPRIO_CLASS_IDLE || class == IOPRIO_CLASS_NONE)
			return -EINVAL;
		if (class == IOPRIO_CLASS_RT && !capable(CAP_SYS_NICE) &&
		    !capable(CAP_SYS_ADMIN))
			return -EPERM;
	}

	if (vbblk_op_writes(c.opcode) && !(file->f_mode & FMODE_WRITE))
		return -EBADF;
	return 0;
}

/*
 * @bytes at @sector, both aligned to the disk's blocks (the shift keeps
 * the bits that matter), and on the disk. Past the gate: reads the disk.
 */
static inline int vbblk_uring_check_range(struct vbblk_uring *ur, u64 sector,
					  u64 bytes)
{
	u64 cap = get_capacity(ur->vblk->disk);
	u64 n = bytes >> SECTOR_SHIFT;

	if (((sector << SECTOR_SHIFT) | bytes) & ur->lbs_mask)
		return -EINVAL;
	if (sector > cap || n > cap - sector)
		return -ERANGE;
	return 0;
}

/* @bytes of data at @sector: a transfer the disk takes. */
static inline int vbblk_uring_check_bytes(struct vbblk_uring *ur, u64 sector,
					  size_t bytes)
{
	/* One compare: no bytes wrap around to the largest size_t. */
	if (bytes - 1 >= ur->max_bytes)
		return -EINVAL;
	return vbblk_uring_check_range(ur, sector, bytes);
}

/*
 * The user's iovec array, in the layout of the ring's task, copied into
 * @v (UIO_FASTIOV entries) or an array put in *@alloc for the caller to
 * free. import_iovec() would ask in_compat_syscall() instead, which from
 * task work is not the ring's (vbblk_uring_cmd_compat()): 64-bit iovecs
 * were read as 32-bit ones, a length from a pointer's upper half.
 */
static int vbblk_uring_import_vec(struct io_uring_cmd *ioucmd,
				  const void __user *addr, u32 nr, int rw,
				  struct iov_iter *iter, struct iovec *v,
				  struct iovec **alloc, unsigned int issue_flags)
{
	size_t total = 0;
	u32 i;

	if (!nr || nr > UIO_MAXIOV)
		return -EINVAL;
	if (nr > UIO_FASTIOV) {
		v = kmalloc_array(nr, sizeof(*v), GFP_KERNEL_ACCOUNT);
		if (!v)
			return -ENOMEM;
		*alloc = v;
	}
	if (vbblk_uring_cmd_compat(ioucmd, issue_flags)) {
#ifdef CONFIG_COMPAT
		const struct compat_iovec __user *u = addr;

		for (i = 0; i < nr; i++) {
			compat_uptr_t base;
			compat_ssize_t len;

			if (get_user(base, &u[i].iov_base) ||
			    get_user(len, &u[i].iov_len))
				return -EFAULT;
			v[i].iov_base = compat_ptr(base);
			v[i].iov_len = len;
		}
#else
		return -EINVAL;
#endif
	} else if (copy_from_user(v, addr, nr * sizeof(*v))) {
		return -EFAULT;
	}
	for (i = 0; i < nr; i++) {
		if ((ssize_t)v[i].iov_len < 0 ||
		    v[i].iov_len > MAX_RW_COUNT - total)
			return -EINVAL;
		if (!access_ok(v[i].iov_base, v[i].iov_len))
			return -EFAULT;
		total += v[i].iov_len;
	}
	iov_iter_init(iter, rw, v, nr, total);
	return 0;
}

/* The data's iterator: user memory, an iovec array, or registered. */
static int vbblk_uring_import(struct io_uring_cmd *ioucmd,
			      const struct vbblk_ucmd_args *c, int rw,
			      struct iov_iter *iter, struct iovec **iov,
			      unsigned int issue_flags)
{
	void __user *addr = u64_to_user_ptr(c->addr);
	bool fixed = ioucmd->flags & IORING_URING_CMD_FIXED;
	struct iovec *fast = *iov;

	*iov = NULL;
	if (c->flags & VBBLK_F_VEC) {
		if (fixed)
			return vbblk_uring_import_fixed_vec(ioucmd, addr, c->len,
							    rw, iter,
							    issue_flags);
		return vbblk_uring_import_vec(ioucmd, addr, c->len, rw, iter,
					      fast, iov, issue_flags);
	}
	if (fixed)
		return vbblk_uring_import_fixed(c->addr, c->len, rw, iter, ioucmd,
						issue_flags);
	if (!access_ok(addr, c->len))
		return -EFAULT;
	iov_iter_ubuf(iter, rw, addr, c->len);
	return 0;
}

/*
 * Scatterlist entries for @uc's pages [@first, @first + @cnt): @bytes of
 * data, from @off into the first page, each entry written whole; the last
 * of them ends the table if @end. False if a piece breaks @align.
 */
static __always_inline bool vbblk_ucmd_set_sg(struct vbblk_ucmd *uc,
					      unsigned int first,
					      unsigned int cnt, size_t off,
					      size_t bytes, unsigned int align,
					      bool end)
{
	bool ok = true;
	unsigned int i;

	/*
	 * One page, as most small I/O is: one entry, with no loop (as
	 * nvme's simple mappings). All @bytes fit in it.
	 */
	if (cnt == 1) {
		vbblk_sg_set(&uc->sg[first], uc->pages[first], bytes, off, end);
		return !((off | bytes) & align);
	}
	for (i = first; i < first + cnt; i++) {
		unsigned int len = min_t(size_t, bytes, PAGE_SIZE - off);

		if ((off | len) & align)
			ok = false;
		vbblk_sg_set(&uc->sg[i], uc->pages[i], len, off,
			     end && i == first + cnt - 1);
		bytes -= len;
		off = 0;
	}
	return ok;
}

/*
 * Take the data's pages into @uc's scatterlist, one entry per page, each
 * piece aligned as the disk's DMA alignment asks, within max_segments.
 */
static int vbblk_ucmd_map(struct vbblk_ucmd *uc, struct iov_iter *iter)
{
	struct vbblk_uring *ur = uc->uvq->ur;
	unsigned int max = ur->max_pages, align = ur->dma_mask;
	unsigned int want, n = 0;
	int err = 0;

	want = iov_iter_npages(iter, max + 1);
	if (!want || want > max)
		return -EINVAL;
	if (want > VBBLK_UCMD_INLINE) {
		/* Even under IO_URING_F_NONBLOCK: see vbblk_ucmd_later(). */
		uc->extra |= VBBLK_UCMD_TABLES;
		uc->pages = kmalloc_array(want, sizeof(*uc->pages),
					  GFP_KERNEL_ACCOUNT);
		/* Zeroed: vbblk_sg_set() leaves the DMA fields alone. */
		uc->sg = kcalloc(want, sizeof(*uc->sg), GFP_KERNEL_ACCOUNT);
		if (!uc->pages || !uc->sg) {
			err = -ENOMEM;
			goto out;
		}
	}
	while (iov_iter_count(iter)) {
		bool hold = vbblk_iter_holds_pages(iter);
		size_t off;
		ssize_t got;
		unsigned int cnt;

		if (n == want) {
			err = -EINVAL;
			break;
		}
		got = vbblk_iter_get_pages(iter, uc->pages + n, SIZE_MAX,
					   want - n, &off);
		if (got <= 0) {
			err = got ? got : -EFAULT;
			break;
		}
		cnt = DIV_ROUND_UP(off + got, PAGE_SIZE);
		if (!vbblk_ucmd_set_sg(uc, n, cnt, off, got, align, false))
			err = -EINVAL;
		n += cnt;
		/* Registered buffers are io_uring's: nothing to give back. */
		if (hold)
			uc->nr_pages = n;
		if (err)
			break;
	}
	if (!err)
		sg_mark_end(&uc->sg[n - 1]);
out:
	if (err)
		vbblk_ucmd_unmap(uc, false);
	return err;
}

/*
 * The common case, a plain buffer of a few pages (at most fast_pages, so
 * within max_segments): its pages go straight into the inline tables,
 * without an iterator. The pieces are aligned as the disk asks exactly
 * when the buffer's start and length are (the alignment divides a page).
 * No access_ok() of ours: pinning checks the pages are the user's, and a
 * range that is not is -EFAULT, as on the import path (where a range
 * that wraps is too: newer kernels' pinning says -EOVERFLOW).
 */
static __always_inline int vbblk_ucmd_user_pages(struct vbblk_ucmd *uc,
						 unsigned long addr,
						 unsigned int len,
						 unsigned int nr, bool out)
{
	struct vbblk_uring *ur = uc->uvq->ur;
	int got;

	if ((addr | len) & ur->dma_mask)
		return -EINVAL;
	/* The device writes what a READ brings into these pages. */
	got = vbblk_user_pages(addr & PAGE_MASK, nr, !out, uc->pages);
	if (got != nr) {
		if (got > 0)
			vbblk_iter_release_pages(uc->pages, got, false);
		return got < 0 && got != -EOVERFLOW ? got : -EFAULT;
	}
	uc->nr_pages = nr;
	/* Alignment checked above, before taking the pages: 0 here. */
	vbblk_ucmd_set_sg(uc, 0, nr, offset_in_page(addr), len, 0, true);
	return 0;
}

/*
 * Anything else: an iovec array, registered buffers, or many pages. The
 * command's fields come as values: the submitter's copy then stays in
 * registers, with no address taken, so its stack needs no canary (nor,
 * where the kernel zeroes locals, a zeroing) on every command.
 */
static noinline int vbblk_ucmd_import_map(struct vbblk_ucmd *uc,
					  struct io_uring_cmd *ioucmd,
					  u64 addr, u32 len, u32 flags,
					  u64 sector, int rw,
					  unsigned int issue_flags)
{
	const struct vbblk_ucmd_args c = {
		.addr = addr, .len = len, .flags = flags, .sector = sector,
	};
	struct iovec fast[UIO_FASTIOV], *iov = fast;
	struct iov_iter iter;
	int err;

	err = vbblk_uring_import(ioucmd, &c, rw, &iter, &iov, issue_flags);
	if (err)
		return err;
	uc->bytes = iov_iter_count(&iter);
	err = vbblk_uring_check_bytes(uc->uvq->ur, sector, uc->bytes);
	if (!err)
		err = vbblk_ucmd_map(uc, &iter);
	kfree(iov);
	return err;
}

/* READ or WRITE: the data's pages in @uc's scatterlist. */
static __always_inline int vbblk_ucmd_data(struct vbblk_ucmd *uc,
					   struct io_uring_cmd *ioucmd,
					   const struct vbblk_ucmd_args c,
					   unsigned int issue_flags, bool out)
{
	unsigned long addr = c.addr;
	unsigned int nr;
	int err;

	nr = DIV_ROUND_UP(offset_in_page(addr) + (u64)c.len, PAGE_SIZE);
	if ((c.flags & VBBLK_F_VEC) ||
	    (ioucmd->flags & IORING_URING_CMD_FIXED) ||
	    nr > uc->uvq->ur->fast_pages)
		return vbblk_ucmd_import_map(uc, ioucmd, c.addr, c.len,
					     c.flags, c.sector,
					     out ? WRITE : READ, issue_flags);
	uc->bytes = c.len;
	err = vbblk_uring_check_bytes(uc->uvq->ur, c.sector, c.len);
	if (err)
		return err;
	return vbblk_ucmd_user_pages(uc, addr, c.len, nr, out);
}

/* Fill in @uc for command @c: header (its *@type), data or range. */
static __always_inline int vbblk_ucmd_build(struct vbblk_ucmd *uc,
					    struct io_uring_cmd *ioucmd,
					    const struct vbblk_ucmd_args c,
					    unsigned int issue_flags,
					    u32 *type,
					    struct scatterlist **data,
					    bool *out)
{
	struct vbblk *vblk = uc->uvq->ur->vblk;
	struct request_queue *q = vblk->disk->queue;
	u32 max;
	int err;

	uc->op = c.opcode;
	*data = NULL;
	*out = false;
	switch (c.opcode) {
	case VBBLK_OP_READ:
	case VBBLK_OP_WRITE:
		*out = c.opcode == VBBLK_OP_WRITE;
		*type = *out ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN;
		err = vbblk_ucmd_data(uc, ioucmd, c, issue_flags, *out);
		if (err)
			return err;
		*data = uc->sg;
		vbblk_iohdr_init(vblk, &uc->hdr, *type, c.sector);
		break;
	case VBBLK_OP_FLUSH:
		uc->bytes = 0;
		*type = VIRTIO_BLK_T_FLUSH;
		vbblk_iohdr_init(vblk, &uc->hdr, *type, 0);
		break;
	case VBBLK_OP_DISCARD:
	case VBBLK_OP_WRITE_ZEROES:
		if (c.opcode == VBBLK_OP_DISCARD) {
			if (!vblk->has_discard)
				return -EOPNOTSUPP;
			*type = VIRTIO_BLK_T_DISCARD;
			max = q->limits.max_discard_sectors;
		} else {
			if (!vblk->has_write_zeroes)
				return -EOPNOTSUPP;
			*type = VIRTIO_BLK_T_WRITE_ZEROES;
			max = q->limits.max_write_zeroes_sectors;
		}
		if (c.nr_sectors > max)
			return -EINVAL;
		err = vbblk_uring_check_range(uc->uvq->ur, c.sector,
					      (u64)c.nr_sectors << SECTOR_SHIFT);
		if (err)
			return err;
		vbblk_range_set(&uc->range, c.sector, c.nr_sectors,
				(c.flags & VBBLK_F_UNMAP) && vblk->wz_may_unmap ?
				VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP : 0);
		vbblk_sg_one(uc->inline_sg, &uc->range, sizeof(uc->range));
		uc->bytes = 0;
		*data = uc->inline_sg;
		*out = true;
		vbblk_iohdr_init(vblk, &uc->hdr, *type, 0);
		break;
	case VBBLK_OP_GET_ID:
		uc->id_buf = u64_to_user_ptr(c.addr);
		if (!access_ok(uc->id_buf, VBBLK_ID_BYTES))
			return -EFAULT;
		uc->bytes = VBBLK_ID_BYTES;
		uc->extra |= VBBLK_UCMD_ID;
		/* The device writes the serial and its NUL only. */
		memset(uc->id, 0, sizeof(uc->id));
		vbblk_sg_one(uc->inline_sg, uc->id, sizeof(uc->id));
		*data = uc->inline_sg;
		*type = VIRTIO_BLK_T_GET_ID;
		vbblk_iohdr_init(vblk, &uc->hdr, *type, 0);
		break;
	}
	uc->hdr.out.ioprio = cpu_to_virtio32(vblk->vdev, c.ioprio);
	return 0;
}

/* ---- submission ---- */

/* The virtqueue the submitting CPU's block I/O uses (poll or default). */
static struct vbblk_uring_vq *vbblk_uring_pick(struct vbblk_uring *ur,
					       bool poll)
{
	struct blk_mq_tag_set *set = &ur->vblk->tag_set;
	enum hctx_type t = poll ? HCTX_TYPE_POLL : HCTX_TYPE_DEFAULT;

	return &ur->uvqs[set->map[t].mq_map[raw_smp_processor_id()]];
}

/* A reap on the virtqueue freed room: let waiters try again. */
static void vbblk_uring_room(struct vbblk_vq *vq)
{
	struct vbblk_uring *ur;

	/* A waiter that gave up may leave this behind: remove syncs RCU. */
	rcu_read_lock();
	ur = READ_ONCE(vq->vblk->uring);
	if (ur) {
		atomic_inc(&ur->uvqs[vq->index].room);
		wake_up(&ur->uvqs[vq->index].wait);
	}
	rcu_read_unlock();
}

/*
 * Put @uc on its ring, once. The caller's gate reference becomes the
 * command's own once it is on the ring: vbblk_ucmd_end() may drop it
 * before our notify, which RCU covers (vbblk_uring_drain()). One reference
 * per command, not two. -ENOSPC: the ring is full; with @room, a reap that
 * frees room is asked for (under the lock, so none is missed), and
 * *@room is what uvq->room read before it.
 */
static __always_inline int vbblk_ucmd_add(struct vbblk_ucmd *uc, u32 type,
					  struct scatterlist *data, bool out,
					  int *room)
{
	struct vbblk_uring_vq *uvq = uc->uvq;
	struct vbblk_vq *vq = uvq->vq;
	unsigned long flags;
	unsigned int notify;
	bool plugged;
	int err;

	plugged = vbblk_uring_plug_note(uvq->ur, uvq->index);
	spin_lock_irqsave(&vq->lock, flags);
	err = vbblk_vq_add(vq, &uc->hdr, type, data, out);
	if (likely(!err && !plugged)) {
		notify = vbblk_vq_kick_prepare(vq);
		/*
		 * Nothing ends a command still on the ring, which our lock
		 * holds: entered before it is released, RCU keeps the rings
		 * for the notify even if it ends at once. A plugged command
		 * leaves the notify to the unplug.
		 */
		rcu_read_lock();
		spin_unlock_irqrestore(&vq->lock, flags);
		if (notify)
			vbblk_vq_notify(vq, notify);
		rcu_read_unlock();
		return 0;
	}
	if (!err) {
		vbblk_stat_inc(vq->vblk, VBBLK_STAT_PLUG_DEFERRED);
	} else if (err == -ENOSPC && room) {
		/* Reaps that free room run it once we unlock. */
		*room = atomic_read(&uvq->room);
		vbblk_vq_want_room(vq, vbblk_uring_room);
	}
	spin_unlock_irqrestore(&vq->lock, flags);
	return err;
}

/*
 * The ring was full and we may wait: for a reap that frees room, and
 * again. Ours or the other paths' commands fill it: the next reap helps.
 * An empty ring refused it too if virtio_ring could not allocate an
 * indirect table: no reap comes, so try again soon (the wait's timeout).
 * Out of line: a wait entry on the submitter's stack would cost every
 * command a stack canary.
 */
static noinline int vbblk_ucmd_queue_wait(struct vbblk_ucmd *uc, u32 type,
					  struct scatterlist *data, bool out)
{
	struct vbblk_uring_vq *uvq = uc->uvq;
	int err, room = 0;

	do {
		/* Sleeping flushes the plug: each try notes it again. */
		err = vbblk_ucmd_add(uc, type, data, out, &room);
		if (err != -ENOSPC)
			return err;
		vbblk_stat_inc(uvq->vq->vblk, VBBLK_STAT_RING_FULL_WAITS);
	} while (wait_event_interruptible_timeout(uvq->wait,
					atomic_read(&uvq->room) != room,
					HZ / 10) >= 0);
	return -EINTR;
}

/*
 * Put @uc on its ring (vbblk_ucmd_add()). A full ring is waited for, out
 * of line, by our worker; or is -EAGAIN with @nowait, for a submitter, which
 * then hands the command to that worker (vbblk_ucmd_defer()).
 */
static __always_inline int vbblk_ucmd_queue(struct vbblk_ucmd *uc, u32 type,
					    struct scatterlist *data,
					    bool out, bool nowait)
{
	int err = vbblk_ucmd_add(uc, type, data, out, NULL);

	if (likely(err != -ENOSPC))
		return err;
	if (nowait) {
		vbblk_stat_inc(uc->uvq->vq->vblk, VBBLK_STAT_RING_FULL_WAITS);
		return -EAGAIN;
	}
	return vbblk_ucmd_queue_wait(uc, type, data, out);
}

static struct workqueue_struct *vbblk_uring_wq;

/*
 * Never -EAGAIN once the SQE is read: io_uring would issue the command
 * again from its worker, and some kernels (Debian's 6.12) then give us
 * the SQE slot as user space has refilled it, so that another command's
 * bytes go out twice and this one's never (a write lost, its completion a
 * success). What may not wait in the submitter (IO_URING_F_NONBLOCK: a
 * full ring, a frozen gate) waits here. The command is built, holds its
 * pages and has passed the gate: only the ring is left.
 */
static void vbblk_ucmd_later(struct vbblk_ucmd *uc)
{
	struct vbblk_uring *ur = uc->uvq->ur;
	int err;

	err = vbblk_ucmd_queue(uc, vbblk_iohdr_type(ur->vblk, &uc->hdr),
			       uc->data, uc->out, false);
	if (err) {
		percpu_ref_put(&ur->ref);
		/* The device moved nothing. */
		uc->result = err;
		vbblk_ucmd_ended(uc);
	}
	put_device(&ur->dev);
}

/*
 * The next deferred command to queue, gated. Commands go in the order
 * they passed the gate: in list order, except that while the gate is
 * frozen those that came without passing it stay parked, and those that
 * had passed it go past them (the freeze waits for those). Removal ends
 * the parked ones. Called with later_lock held.
 */
static struct vbblk_ucmd *vbblk_uvq_next(struct vbblk_uring_vq *uvq)
{
	struct vbblk_ucmd *uc, *end = NULL;
	bool frozen = false;

	list_for_each_entry(uc, &uvq->later, later) {
		if (!uc->gated && !frozen) {
			int err = vbblk_uring_enter(uvq->ur, true);

			if (err == -EAGAIN) {
				frozen = true;
				continue;
			}
			if (err) {
				uc->result = err;
				end = uc;
				break;
			}
			uc->gated = true;
		}
		if (uc->gated) {
			end = uc;
			break;
		}
	}
	if (end)
		list_del_init(&end->later);
	return end;
}

/*
 * One work item per virtqueue queues its deferred commands in turn, each
 * waiting for ring room: none is overtaken by a later one, none starves.
 * It holds the device while it runs, as its commands may be the last to.
 */
static void vbblk_uvq_later(struct work_struct *work)
{
	struct vbblk_uring_vq *uvq = container_of(work, struct vbblk_uring_vq,
						  later_work);
	struct device *dev = &uvq->ur->dev;
	struct vbblk_ucmd *uc;

	for (;;) {
		spin_lock(&uvq->later_lock);
		uc = vbblk_uvq_next(uvq);
		if (!uc) {
			uvq->later_busy = false;
			spin_unlock(&uvq->later_lock);
			break;
		}
		spin_unlock(&uvq->later_lock);
		if (uc->gated) {
			vbblk_ucmd_later(uc);
		} else {
			/* Removed: the device moved nothing. */
			vbblk_ucmd_ended(uc);
			put_device(dev);
		}
		spin_lock(&uvq->later_lock);
		uvq->nr_later--;
		spin_unlock(&uvq->later_lock);
		cond_resched();
	}
	put_device(dev);
}

/* Run the work item unless it runs; with later_lock held. */
static bool vbblk_uvq_kick_locked(struct vbblk_uring_vq *uvq)
{
	if (uvq->later_busy || !uvq->nr_later)
		return false;
	uvq->later_busy = true;
	get_device(&uvq->ur->dev);	/* the work's, put when it is idle */
	return true;
}

/* The gate opened, or is gone: parked commands may go on. */
static void vbblk_uvqs_kick(struct vbblk_uring *ur)
{
	unsigned int i;

	for (i = 0; i < ur->nr_vqs; i++) {
		struct vbblk_uring_vq *uvq = &ur->uvqs[i];
		bool start;

		spin_lock(&uvq->later_lock);
		start = vbblk_uvq_kick_locked(uvq);
		spin_unlock(&uvq->later_lock);
		if (start)
			queue_work(vbblk_uring_wq, &uvq->later_work);
	}
}

/* @gated: @uc holds the submit reference already. */
static noinline void vbblk_ucmd_defer(struct vbblk_ucmd *uc,
				      struct scatterlist *data, bool out,
				      bool gated)
{
	struct vbblk_uring_vq *uvq = uc->uvq;
	bool start;

	uc->data = data;
	uc->out = out;
	uc->gated = gated;
	/* The file may go as soon as the command ends: ur must not. */
	get_device(&uvq->ur->dev);
	vbblk_stat_inc(uvq->ur->vblk, VBBLK_STAT_URING_DEFERRED);
	spin_lock(&uvq->later_lock);
	list_add_tail(&uc->later, &uvq->later);
	uvq->nr_later++;
	start = vbblk_uvq_kick_locked(uvq);
	spin_unlock(&uvq->later_lock);
	if (start)
		queue_work(vbblk_uring_wq, &uvq->later_work);
}

/* Commands wait on this virtqueue's worker: a new one goes behind them. */
static inline bool vbblk_uvq_deferring(struct vbblk_uring_vq *uvq)
{
	return READ_ONCE(uvq->nr_later);
}

static void vbblk_ucmd_init(struct vbblk_ucmd *uc, struct vbblk_uring_vq *uvq)
{
	uc->uvq = uvq;
	vbblk_iohdr_setup(&uc->hdr, vbblk_ucmd_end);
	uc->pages = uc->inline_pages;
	uc->sg = uc->inline_sg;
	INIT_LIST_HEAD(&uc->later);
}

/*
 * The pool is empty and the submitter may not wait for it: one more, up
 * to four pools' worth (at least 256) per virtqueue, charged to the
 * submitter's memory cgroup. That bounds what unreaped commands (polled
 * ones nobody polls) make us allocate; beyond it the command gets ENOMEM.
 */
static struct vbblk_ucmd *vbblk_ucmd_spare(struct vbblk_uring_vq *uvq)
{
	unsigned int max = max(4 * uvq->ur->depth, 256U);
	struct vbblk_ucmd *uc;

	if (atomic_inc_return(&uvq->spares) > max) {
		atomic_dec(&uvq->spares);
		return NULL;
	}
	uc = kzalloc(sizeof(*uc), GFP_KERNEL_ACCOUNT);
	if (!uc) {
		atomic_dec(&uvq->spares);
		return NULL;
	}
	vbblk_ucmd_init(uc, uvq);
	uc->extra = VBBLK_UCMD_SPARE;
	return uc;
}

/*
 * A free command of @uvq's pool, once the ring's completions give one back,
 * or a spare one when we may not wait (@nowait). Out of line, as above.
 * The pool refills only as the rings' owners reap their completions, which
 * a drain (removal, suspend) cannot do for them: so the wait holds no gate
 * (*@gated drops it), and passes the gate again with a command in hand.
 */
static noinline struct vbblk_ucmd *vbblk_ucmd_wait(struct vbblk_uring_vq *uvq,
						   bool nowait, bool *gated)
{
	struct vbblk_uring *ur = uvq->ur;
	struct vbblk_ucmd *uc;
	int err;

	if (nowait)
		return vbblk_ucmd_spare(uvq) ?: ERR_PTR(-ENOMEM);
	vbblk_stat_inc(ur->vblk, VBBLK_STAT_RING_FULL_WAITS);
	if (*gated)
		percpu_ref_put(&ur->ref);
	*gated = false;
	while (!(uc = vbblk_ucmd_get(uvq))) {
		/*
		 * Freezable: holding nothing, the waiter may be frozen where
		 * it sleeps, not woken by the freezer's fake signal into an
		 * EINTR the uAPI does not give for a suspend. A real signal,
		 * or io_uring cancelling its worker, still ends the wait.
		 */
		if (wait_event_freezable(uvq->wait,
					 !llist_empty(&uvq->free) ||
					 READ_ONCE(ur->dead)))
			return ERR_PTR(-EINTR);
		if (READ_ONCE(ur->dead))
			return ERR_PTR(-ENODEV);
	}
	err = vbblk_uring_enter(ur, false);
	if (err) {
		vbblk_ucmd_drop(uc);
		return ERR_PTR(err);
	}
	*gated = true;
	return uc;
}

/*
 * A command that succeeds without reaching the device. On an IOPOLL ring
 * it may not return its result: 6.1's io_issue_sqe() would both post it
 * and queue it for polling, on one list node (a CPU then spins for ever in
 * io_do_iopoll()). Done at once and queued, it is found done there.
 */
static noinline int vbblk_uring_end_now(struct io_uring_cmd *ioucmd,
					unsigned int issue_flags)
{
	if (!(issue_flags & IO_URING_F_IOPOLL))
		return 0;
	/* Never ours to poll: the PDU holds what its last user left. */
	vbblk_pdu(ioucmd)->polled = false;
	vbblk_uring_cmd_done(ioucmd, 0, issue_flags);
	return -EIOCBQUEUED;
}

/*
 * A command, once its SQE is read: @c is a parameter, not a local, as a
 * local the kernel's zeroing of the stack would write it on every command.
 * @gated: the caller passed the gate already (the plain command's copy,
 * whose caller then has nothing else to decide).
 */
static __always_inline int vbblk_uring_submit(struct io_uring_cmd *ioucmd,
					      unsigned int issue_flags,
					      const struct vbblk_ucmd_args c,
					      bool gated)
{
	struct vbblk_uring *ur = ioucmd->file->private_data;
	struct vbblk_uring_pdu *pdu = vbblk_pdu(ioucmd);
	bool nowait = issue_flags & IO_URING_F_NONBLOCK;
	struct vbblk_uring_vq *uvq;
	struct scatterlist *data;
	struct vbblk_ucmd *uc;
	struct vbblk *vblk;
	bool out, poll;
	u32 type;
	int err;

	err = vbblk_uring_check(ioucmd->file, c);
	if (err)
		goto out_put;

	if (!gated) {
		err = vbblk_uring_enter(ur, nowait);
		/* Frozen, and we may not wait: built now, queued later. */
		gated = !err;
		if (err && err != -EAGAIN)
			return err;
	}
	vblk = ur->vblk;
	if (vbblk_op_writes(c.opcode) &&
	    (vblk->read_only || get_disk_ro(vblk->disk))) {
		err = -EROFS;
		goto out_put;
	}
	if (c.opcode == VBBLK_OP_FLUSH && !vblk->has_flush) {
		/* No volatile cache: nothing to make durable. */
		if (gated)
			percpu_ref_put(&ur->ref);
		return vbblk_uring_end_now(ioucmd, issue_flags);
	}

	/* GET_ID copies out in the submitter's task: never polled. */
	poll = (issue_flags & IO_URING_F_IOPOLL) && vblk->num_poll_vqs &&
	       c.opcode != VBBLK_OP_GET_ID;
	uvq = vbblk_uring_pick(ur, poll);
	uc = vbblk_ucmd_get(uvq);
	if (unlikely(!uc)) {
		uc = vbblk_ucmd_wait(uvq, nowait, &gated);
		if (IS_ERR(uc)) {
			err = PTR_ERR(uc);
			goto out_put;
		}
	}
	uc->ioucmd = ioucmd;
	uc->polled = poll;
	uc->done = false;
	/* Before the build, which may sleep: less to keep across it. */
	pdu->ucmd = uc;
	pdu->polled = poll;
	err = vbblk_ucmd_build(uc, ioucmd, c, issue_flags, &type, &data, &out);
	if (err)
		goto out_cmd;

	vbblk_stat_inc(vblk, VBBLK_STAT_URING_CMDS);
	if (!gated) {
		vbblk_ucmd_defer(uc, data, out, false);
		return -EIOCBQUEUED;
	}
	/*
	 * On the ring, our reference is the command's, for vbblk_ucmd_end().
	 * A full ring is never waited for here, even where we may block
	 * (io-wq): that wait holds the gate, so it may not be frozen, and the
	 * freezer's fake signal would end it in EINTR. Our worker waits.
	 */
	err = unlikely(vbblk_uvq_deferring(uvq)) ? -EAGAIN :
	      vbblk_ucmd_queue(uc, type, data, out, true);
	if (err == -EAGAIN) {
		/* A full ring: the worker takes our reference with it. */
		vbblk_ucmd_defer(uc, data, out, true);
		return -EIOCBQUEUED;
	}
	if (err)
		goto out_cmd;
	return -EIOCBQUEUED;

out_cmd:
	vbblk_ucmd_drop(uc);		/* the device moved nothing */
out_put:
	if (gated)
		percpu_ref_put(&ur->ref);
	return err;
}

/*
 * Anything but a plain READ or WRITE: all the checks and builds. It reads
 * the SQE again, and uses only what it read and checked itself.
 */
static noinline int vbblk_uring_submit_any(struct io_uring_cmd *ioucmd,
					   unsigned int issue_flags,
					   const struct vbblk_uring_cmd *sqe)
{
	return vbblk_uring_submit(ioucmd, issue_flags, vbblk_uring_args(sqe),
				  false);
}

/*
 * The common command, a READ or WRITE of one buffer at the default
 * priority, with the gate open, is decided here, once: in its copy of
 * vbblk_uring_submit() the compiler folds every other opcode's checks and
 * builds away, and the gate's waits. Anything else, a shut gate too (its
 * reading again of the SQE is the general path's, not a second command),
 * takes the general path.
 */
static __always_inline int vbblk_uring_route(struct io_uring_cmd *ioucmd,
					     unsigned int issue_flags,
					     const struct vbblk_uring_cmd *sqe,
					     const struct vbblk_ucmd_args c)
{
	struct vbblk_uring *ur = ioucmd->file->private_data;

	if (likely((c.opcode == VBBLK_OP_READ || c.opcode == VBBLK_OP_WRITE) &&
		   !(c.flags | c.nr_sectors | c.ioprio) &&
		   percpu_ref_tryget_live(&ur->ref)))
		return vbblk_uring_submit(ioucmd, issue_flags, c, true);
	return vbblk_uring_submit_any(ioucmd, issue_flags, sqe);
}

static int vbblk_uring_cmd(struct io_uring_cmd *ioucmd,
			   unsigned int issue_flags)
{
	const struct vbblk_uring_cmd *sqe;

	if (ioucmd->cmd_op != VBBLK_URING_CMD_IO)
		return -ENOTTY;
	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;
	sqe = vbblk_uring_cmd_payload(ioucmd);
	/* One test, not three branches. */
	if (READ_ONCE(sqe->rsvd0) | READ_ONCE(sqe->rsvd[0]) |
	    READ_ONCE(sqe->rsvd[1]))
		return -EINVAL;
	return vbblk_uring_route(ioucmd, issue_flags, sqe, vbblk_uring_args(sqe));
}

/*
 * io_uring's IOPOLL loop, under the ring's lock, for one of its commands:
 * reap the poll queue it went to, and end it if it was reaped, here or by
 * anyone else. Only here: ending it posts to its ring, whose lock that
 * needs, and may sleep to dirty a read's pages (a process context). Once
 * the gate is shut, the drain reaps for us.
 */
static int vbblk_uring_iopoll(struct io_uring_cmd *ioucmd,
			      struct io_comp_batch *iob,
			      unsigned int poll_flags)
{
	struct vbblk_uring *ur = ioucmd->file->private_data;
	struct vbblk_uring_pdu *pdu = vbblk_pdu(ioucmd);
	struct vbblk_ucmd *uc = pdu->ucmd;
	int n = 0;

	if (!pdu->polled)
		return 0;
	/*
	 * Acquire pairs with vbblk_ucmd_end()'s release: a done command's
	 * result is set. The disk's memory is ours to touch (we hold it), its
	 * rings only past the gate.
	 */
	if (smp_load_acquire(&uc->done)) {
		vbblk_stat_inc(ur->vblk, VBBLK_STAT_URING_POLLED_ELSEWHERE);
	} else if (percpu_ref_tryget_live(&ur->ref)) {
		n = vbblk_vq_poll(&ur->vblk->vqs[uc->uvq->index]);
		percpu_ref_put(&ur->ref);
	}
	/* As above: reaped by us or by anyone meanwhile. */
	if (!smp_load_acquire(&uc->done))
		return n;
	vbblk_ucmd_complete(ioucmd, 0, true);
	return n ? n : 1;
}

/* ---- the character device ---- */

static void vbblk_uring_free_pool(struct vbblk_uring *ur)
{
	unsigned int i, j;

	for (i = 0; i < ur->nr_vqs; i++) {
		struct vbblk_uring_vq *uvq = &ur->uvqs[i];

		for (j = 0; uvq->cmds && j < uvq->nr_cmds; j++)
			kfree(uvq->cmds[j]);
		kfree(uvq->cmds);
		uvq->cmds = NULL;
		init_llist_head(&uvq->free);
	}
}

/* The commands, allocated when the device is first opened. */
static int vbblk_uring_alloc_pool(struct vbblk_uring *ur)
{
	unsigned int depth = ur->depth;
	unsigned int i, j;
	int err = 0;

	mutex_lock(&ur->pool_lock);
	if (ur->pool_ready)
		goto out;
	for (i = 0; i < ur->nr_vqs && !err; i++) {
		struct vbblk_uring_vq *uvq = &ur->uvqs[i];

		uvq->cmds = kcalloc(depth, sizeof(*uvq->cmds), GFP_KERNEL);
		if (!uvq->cmds) {
			err = -ENOMEM;
			break;
		}
		uvq->nr_cmds = depth;
		for (j = 0; j < depth; j++) {
			struct vbblk_ucmd *uc = kzalloc(sizeof(*uc), GFP_KERNEL);

			if (!uc) {
				err = -ENOMEM;
				break;
			}
			vbblk_ucmd_init(uc, uvq);
			uvq->cmds[j] = uc;
			llist_add(&uc->free_node, &uvq->free);
		}
	}
	if (err)
		vbblk_uring_free_pool(ur);
	else
		ur->pool_ready = true;
out:
	mutex_unlock(&ur->pool_lock);
	return err;
}

static int vbblk_uring_open(struct inode *inode, struct file *file)
{
	struct vbblk_uring *ur = container_of(inode->i_cdev, struct vbblk_uring,
					      cdev);
	int err;

	if (READ_ONCE(ur->dead))
		return -ENXIO;
	err = vbblk_uring_alloc_pool(ur);
	if (err)
		return err;
	file->private_data = ur;
	return 0;
}

static const struct file_operations vbblk_uring_fops = {
	.owner			= THIS_MODULE,
	.open			= vbblk_uring_open,
	.uring_cmd		= vbblk_uring_cmd,
	.uring_cmd_iopoll	= vbblk_uring_iopoll,
	.llseek			= noop_llseek,
};

/* The last reference (an open file's, or remove's) is gone. */
static void vbblk_uring_release(struct device *dev)
{
	struct vbblk_uring *ur = container_of(dev, struct vbblk_uring, dev);

	vbblk_uring_free_pool(ur);
	percpu_ref_exit(&ur->ref);
	mutex_destroy(&ur->pool_lock);
	kfree(ur->uvqs);
	/* May be the disk's last reference: it frees struct vbblk. */
	put_device(ur->disk_dev);
	kfree(ur);
}

/* Probe: /dev/vbblk/<disk>, once the disk is added (its child). */
int vbblk_uring_add(struct vbblk *vblk)
{
	struct request_queue *q;
	struct vbblk_uring *ur;
	unsigned int i;
	int err;

	ur = kzalloc(sizeof(*ur), GFP_KERNEL);
	if (!ur)
		return -ENOMEM;
	ur->vblk = vblk;
	ur->depth = vblk->tag_set.queue_depth;
	q = vblk->disk->queue;
	ur->max_bytes = (u64)queue_max_hw_sectors(q) << SECTOR_SHIFT;
	ur->lbs_mask = queue_logical_block_size(q) - 1;
	ur->dma_mask = queue_dma_alignment(q);
	ur->max_pages = min(vblk->sg_elems, queue_max_segments(q));
	ur->fast_pages = min_t(u32, ur->max_pages, VBBLK_UCMD_INLINE);
	ur->nr_vqs = vblk->num_vqs;
	ur->uvqs = kcalloc(ur->nr_vqs, sizeof(*ur->uvqs), GFP_KERNEL);
	if (!ur->uvqs ||
	    percpu_ref_init(&ur->ref, vbblk_uring_ref_release,
			    PERCPU_REF_ALLOW_REINIT, GFP_KERNEL)) {
		kfree(ur->uvqs);
		kfree(ur);
		return -ENOMEM;
	}
	ur->disk_dev = get_device(disk_to_dev(vblk->disk));
	init_waitqueue_head(&ur->gate_wait);
	mutex_init(&ur->pool_lock);
	device_initialize(&ur->dev);
	ur->dev.release = vbblk_uring_release;
	for (i = 0; i < ur->nr_vqs; i++) {
		struct vbblk_uring_vq *uvq = &ur->uvqs[i];

		uvq->ur = ur;
		uvq->index = i;
		/* Kept from probe to remove: restore remakes only the rings. */
		uvq->vq = &vblk->vqs[i];
		spin_lock_init(&uvq->lock);
		init_llist_head(&uvq->free);
		init_waitqueue_head(&uvq->wait);
		spin_lock_init(&uvq->later_lock);
		INIT_LIST_HEAD(&uvq->later);
		INIT_WORK(&uvq->later_work, vbblk_uvq_later);
	}

	ur->dev.class = &vbblk_uring_class;
	ur->dev.parent = disk_to_dev(vblk->disk);
	ur->dev.devt = MKDEV(MAJOR(vbblk_uring_devt), vblk->index);
	/* "!" is "/" in /dev: the node is /dev/vbblk/<disk>. */
	err = dev_set_name(&ur->dev, "vbblk!%s", vblk->disk->disk_name);
	if (err)
		goto out_put;
	cdev_init(&ur->cdev, &vbblk_uring_fops);
	ur->cdev.owner = THIS_MODULE;
	err = cdev_device_add(&ur->cdev, &ur->dev);
	if (err)
		goto out_put;
	vblk->uring = ur;
	return 0;

out_put:
	put_device(&ur->dev);
	return err;
}

/* Remove: no new opens or commands; those on the rings end first. */
void vbblk_uring_remove(struct vbblk *vblk)
{
	struct vbblk_uring *ur = vblk->uring;
	unsigned int i;

	if (!ur)
		return;
	cdev_device_del(&ur->cdev, &ur->dev);
	WRITE_ONCE(ur->dead, true);
	/* Submitters waiting for a free command, gate-less: it is gone. */
	for (i = 0; i < ur->nr_vqs; i++)
		wake_up_all(&ur->uvqs[i].wait);
	vbblk_uring_drain(ur);
	wake_up_all(&ur->gate_wait);	/* frozen submitters: it is gone */
	vbblk_uvqs_kick(ur);		/* and parked commands */
	WRITE_ONCE(vblk->uring, NULL);
	synchronize_rcu();		/* vbblk_uring_room() is done with it */
	put_device(&ur->dev);
}

/* Freeze: new commands wait; those on the rings end before they go. */
void vbblk_uring_freeze(struct vbblk *vblk)
{
	struct vbblk_uring *ur = vblk->uring;

	if (!ur)
		return;
	WRITE_ONCE(ur->frozen, true);
	vbblk_uring_drain(ur);
}

void vbblk_uring_restore(struct vbblk *vblk)
{
	struct vbblk_uring *ur = vblk->uring;

	if (!ur || !ur->killed)
		return;
	ur->killed = false;
	percpu_ref_resurrect(&ur->ref);
	WRITE_ONCE(ur->frozen, false);
	wake_up_all(&ur->gate_wait);
	vbblk_uvqs_kick(ur);
}

int vbblk_uring_register(void)
{
	int err;

	vbblk_uring_wq = alloc_workqueue("vbblk_uring", WQ_UNBOUND, 0);
	if (!vbblk_uring_wq)
		return -ENOMEM;
	err = alloc_chrdev_region(&vbblk_uring_devt, 0, VBBLK_URING_MINORS,
				  VBBLK_NAME "-uring");
	if (err)
		goto out_wq;
	err = class_register(&vbblk_uring_class);
	if (err)
		goto out_region;
	return 0;

out_region:
	unregister_chrdev_region(vbblk_uring_devt, VBBLK_URING_MINORS);
out_wq:
	destroy_workqueue(vbblk_uring_wq);
	return err;
}

/* After the last node went: deferred commands held their nodes. */
void vbblk_uring_unregister(void)
{
	class_unregister(&vbblk_uring_class);
	unregister_chrdev_region(vbblk_uring_devt, VBBLK_URING_MINORS);
	destroy_workqueue(vbblk_uring_wq);
}
