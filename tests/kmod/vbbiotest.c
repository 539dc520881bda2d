// SPDX-License-Identifier: GPL-2.0
/*
 * vbbiotest: crafted bios against one block device, for what user space
 * cannot submit. Test-only: tests/run builds it for the guest kernel and
 * puts it in the test initramfs; nothing installs it. It plays the part
 * null_blk plays for blktests, with a vbblk (or, for reference, a
 * virtio_blk) disk as the target.
 *
 *   insmod vbbiotest.ko dev=/dev/vdb
 *   echo fill > /sys/kernel/debug/vbbiotest/run
 *   echo read_preflush > /sys/kernel/debug/vbbiotest/run
 *   cat /sys/kernel/debug/vbbiotest/result
 *
 * A write to "run" runs one case on the device, opened for it, and fails
 * with EIO if the case failed. "result" holds the case's line, also
 * logged: "CASE PASS|FAIL|SKIP [key=value ...] [- why]".
 *
 * The cases; sectors in 512-byte units from VBT_AREA, one 128 KiB slot
 * each, and each checks what its bios brought back:
 *   fill               writes a fresh pattern over the 8 slots
 *   read_preflush      READ|PREFLUSH of slot 0: must return fill's data
 *   read_fua           READ|FUA of slot 1: the same
 *   read_preflush_fua  READ|PREFLUSH|FUA of slot 2: the same
 *   empty_preflush     WRITE|PREFLUSH without data: must succeed
 *   write_preflush_fua WRITE|PREFLUSH|FUA of slot 6, read back
 *   max_bio            one write of queue_max_sectors (one page per bvec,
 *                      so the block layer may split it) at VBT_MAX_AREA,
 *                      read back with one bio of the same size
 *   zero_write         a WRITE without data or flags at slot 7: it must
 *                      complete without error, and slot 7 keep its data
 *   nowait_full        32 REQ_NOWAIT 4 KiB reads in slots 4-5 submitted
 *                      at once: with a small queue_depth and the device
 *                      throttled some must end with EAGAIN, some must be
 *                      served with fill's data, nothing else, and every
 *                      one must complete
 *   softirq_read       a REQ_NOWAIT read of slot 3 submitted from a timer
 *                      callback (softirq): it must complete with the data
 *   softirq_full       16 reads in slots 4-5, without REQ_NOWAIT, all
 *                      submitted from one timer callback: with a small
 *                      queue_depth most find no free command, and none may
 *                      sleep in softirq or be lost; all complete with
 *                      fill's data (bio mode: blk-mq sleeps for a tag)
 *   polled_plug        16 REQ_POLLED reads in slots 4-5 under one plug,
 *                      then polled: with a small queue_depth the submitter
 *                      runs out of commands while its plug holds the
 *                      notify for those it sent; all complete with data
 *                      (bio mode: blk-mq sleeps for a tag only polling frees)
 *   mark N             a one-block read at sector 100000 + N, which the
 *                      host finds in QEMU's trace to cut it into cases
 * What the device saw is checked outside: tests/groups/bio/biotest.sh compares
 * QMP counters around each case, and the host reads QEMU's trace between
 * the marker reads around it (tests/lib/flushcheck.py).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/uaccess.h>

#include "vbtest_compat.h"

#define VBT_AREA		2048	/* fill's 1 MiB starts at 1 MiB */
#define VBT_SLOT_SECTORS	256
#define VBT_SLOT_BYTES		(VBT_SLOT_SECTORS << SECTOR_SHIFT)
#define VBT_SLOTS		8
#define VBT_READ_BYTES		16384	/* a few pages: several bvecs */
#define VBT_MAX_AREA		16384	/* max_bio writes from 8 MiB */
#define VBT_MAX_PAGES		1024	/* bio_kmalloc() takes UIO_MAXIOV */
#define VBT_MARK_BASE		100000	/* tests/lib/flushcheck.py MARK_BASE */
#define VBT_NOWAIT_BIOS		32
#define VBT_NOWAIT_STRIDE	16	/* sectors: reads that cannot merge */
#define VBT_TIMEOUT		(30 * HZ)
#define VBT_BURST_BIOS		16

static char *dev;
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the block device the cases run on, e.g. /dev/vdb");

enum vbt_verdict { VBT_PASS, VBT_FAIL, VBT_SKIP };

static const char * const vbt_verdicts[] = { "PASS", "FAIL", "SKIP" };

/* One case being run: its device and what it reports. */
struct vbt_ctx {
	struct block_device *bdev;
	char kv[96];
	char why[192];
};

/* Bios a case waits for together. */
struct vbt_group {
	atomic_t left;
	struct completion done;
};

/* One bio, its pages and how it ended. */
struct vbt_req {
	struct bio *bio;
	struct vbt_group *grp;		/* NULL: waited for alone, on @done */
	struct completion done;
	blk_status_t status;
	sector_t sector;		/* bi_iter is consumed by completion */
	unsigned int bytes;
	bool in_softirq;		/* softirq_read: where it was submitted */
	struct timer_list timer;
	unsigned int nr_pages;
	struct page *pages[];
};

static DEFINE_MUTEX(vbt_lock);		/* one case at a time; the state below */
static char vbt_result[320];
static u32 vbt_salt;			/* the last pattern written */
static u32 vbt_fill_salt;		/* the pattern fill left; 0: none yet */
static bool vbt_leaked;
static struct dentry *vbt_dir;

static __printf(2, 3) void vbt_kv(struct vbt_ctx *c, const char *fmt, ...)
{
	size_t n = strlen(c->kv);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->kv + n, sizeof(c->kv) - n, fmt, ap);
	va_end(ap);
}

static __printf(3, 4) enum vbt_verdict
vbt_say(struct vbt_ctx *c, enum vbt_verdict v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return v;
}

/*
 * A bio that never completed still points at its request and at our
 * end_io: both, and so the module, must stay for good.
 */
static void vbt_leak(void)
{
	if (!vbt_leaked)
		__module_get(THIS_MODULE);
	vbt_leaked = true;
}

static void vbt_end_io(struct bio *bio)
{
	struct vbt_req *r = bio->bi_private;

	r->status = bio->bi_status;
	if (!r->grp)
		complete(&r->done);
	else if (atomic_dec_and_test(&r->grp->left))
		complete(&r->grp->done);
}

static void vbt_req_free(struct vbt_req *r)
{
	unsigned int i;

	bio_uninit(r->bio);
	kfree(r->bio);
	for (i = 0; i < r->nr_pages; i++)
		__free_page(r->pages[i]);
	kfree(r);
}

/* A bio of @bytes at @sector, one page per bvec (none for 0 bytes). */
static struct vbt_req *vbt_req_alloc(struct block_device *bdev,
				     blk_opf_t opf, sector_t sector,
				     unsigned int bytes)
{
	unsigned int n = DIV_ROUND_UP(bytes, PAGE_SIZE), i;
	struct vbt_req *r;

	r = kzalloc(struct_size(r, pages, n), GFP_KERNEL);
	if (!r)
		return NULL;
	r->bio = bio_kmalloc(n, GFP_KERNEL);
	if (!r->bio) {
		kfree(r);
		return NULL;
	}
	/*
	 * An empty bio has no vector table, as bio_alloc() gives it:
	 * the split fast path (bio_may_need_split) reads the first vector of any
	 * bio that has a table (KASAN on 7.2: slab-out-of-bounds).
	 */
	bio_init(r->bio, bdev, n ? vbt_bio_inline_vecs(r->bio) : NULL, n, opf);
	r->bio->bi_iter.bi_sector = sector;
	r->bio->bi_end_io = vbt_end_io;
	r->bio->bi_private = r;
	r->sector = sector;
	r->bytes = bytes;
	init_completion(&r->done);
	for (i = 0; i < n; i++) {
		unsigned int len = min_t(unsigned int, bytes - i * PAGE_SIZE,
					 PAGE_SIZE);

		r->pages[i] = alloc_page(GFP_KERNEL);
		if (!r->pages[i])
			goto fail;
		r->nr_pages++;
		if (bio_add_page(r->bio, r->pages[i], len, 0) != len)
			goto fail;
	}
	return r;
fail:
	vbt_req_free(r);
	return NULL;
}

/* Word @i of 512-byte sector @sector as written with @salt: names both. */
static u64 vbt_word(u32 salt, sector_t sector, unsigned int i)
{
	return ((u64)salt << 40) ^ ((u64)sector << 8) ^ i;
}

#define VBT_WORDS_PER_SECTOR	(SECTOR_SIZE / sizeof(u64))

/*
 * Fill @r's pages with the pattern of @salt, or with poison for salt 0,
 * so that a read that never reached them cannot pass for one that did.
 */
static void vbt_pattern(struct vbt_req *r, u32 salt)
{
	unsigned int p, w;

	for (p = 0; p < r->nr_pages; p++) {
		unsigned int len = min_t(unsigned int,
					 r->bytes - p * PAGE_SIZE, PAGE_SIZE);
		sector_t first = r->sector + (p << (PAGE_SHIFT - SECTOR_SHIFT));
		u64 *v = kmap_local_page(r->pages[p]);

		for (w = 0; w < len / sizeof(u64); w++)
			v[w] = salt ? vbt_word(salt, first +
					       w / VBT_WORDS_PER_SECTOR,
					       w % VBT_WORDS_PER_SECTOR) :
				      0xa5a5a5a5a5a5a5a5ULL;
		kunmap_local(v);
	}
}

/* The byte offset of the first word that is not @salt's, or -1. */
static long vbt_verify(struct vbt_req *r, u32 salt)
{
	unsigned int p, w;

	for (p = 0; p < r->nr_pages; p++) {
		unsigned int len = min_t(unsigned int,
					 r->bytes - p * PAGE_SIZE, PAGE_SIZE);
		sector_t first = r->sector + (p << (PAGE_SHIFT - SECTOR_SHIFT));
		const u64 *v = kmap_local_page(r->pages[p]);

		for (w = 0; w < len / sizeof(u64); w++) {
			if (v[w] != vbt_word(salt, first +
					     w / VBT_WORDS_PER_SECTOR,
					     w % VBT_WORDS_PER_SECTOR)) {
				kunmap_local(v);
				return p * PAGE_SIZE + w * sizeof(u64);
			}
		}
		kunmap_local(v);
	}
	return -1;
}

/* @r has been read: did it bring @salt's pattern back? Says where not. */
static enum vbt_verdict vbt_check_read(struct vbt_ctx *c, struct vbt_req *r,
				       u32 salt)
{
	long bad = vbt_verify(r, salt);

	if (bad < 0)
		return VBT_PASS;
	return vbt_say(c, VBT_FAIL,
		       "byte %ld of the %u read at sector %llu is not the data written there",
		       bad, r->bytes, (unsigned long long)r->sector);
}

/* Wait for a lone bio; false (and @r leaked) if it never completed. */
static bool vbt_wait(struct vbt_ctx *c, struct vbt_req *r)
{
	if (wait_for_completion_io_timeout(&r->done, VBT_TIMEOUT))
		return true;
	vbt_leak();
	vbt_say(c, VBT_FAIL, "the bio at sector %llu did not complete in %u s",
		(unsigned long long)r->sector, VBT_TIMEOUT / HZ);
	return false;
}

/*
 * One bio of @bytes at @sector, waited for. A write carries @salt's
 * pattern; a read lands in poisoned pages and must bring @salt's pattern
 * back (salt 0: any data).
 */
static enum vbt_verdict vbt_io(struct vbt_ctx *c, blk_opf_t opf,
			       sector_t sector, unsigned int bytes, u32 salt)
{
	bool write = op_is_write(opf);
	enum vbt_verdict v = VBT_PASS;
	struct vbt_req *r;

	r = vbt_req_alloc(c->bdev, opf, sector, bytes);
	if (!r)
		return vbt_say(c, VBT_FAIL, "out of memory");
	vbt_pattern(r, write ? salt : 0);
	submit_bio(r->bio);
	if (!vbt_wait(c, r))
		return VBT_FAIL;
	if (r->status)
		v = vbt_say(c, VBT_FAIL, "the %s of %u bytes at sector %llu ended with error %d",
			    write ? "write" : "read", bytes,
			    (unsigned long long)sector,
			    blk_status_to_errno(r->status));
	else if (!write && salt)
		v = vbt_check_read(c, r, salt);
	vbt_req_free(r);
	return v;
}

static sector_t vbt_slot(unsigned int i)
{
	return VBT_AREA + i * VBT_SLOT_SECTORS;
}

static enum vbt_verdict vbt_case_fill(struct vbt_ctx *c, unsigned int arg)
{
	u32 salt = ++vbt_salt;
	enum vbt_verdict v;
	unsigned int i;

	vbt_fill_salt = 0;
	for (i = 0; i < VBT_SLOTS; i++) {
		v = vbt_io(c, REQ_OP_WRITE, vbt_slot(i), VBT_SLOT_BYTES, salt);
		if (v != VBT_PASS)
			return v;
	}
	vbt_fill_salt = salt;
	vbt_kv(c, " bytes=%u", VBT_SLOTS * VBT_SLOT_BYTES);
	return VBT_PASS;
}

/* Has fill written the pattern the reads expect? Says why not. */
static bool vbt_filled(struct vbt_ctx *c)
{
	if (!vbt_fill_salt)
		vbt_say(c, VBT_FAIL, "run fill first");
	return vbt_fill_salt;
}

/* A READ with PREFLUSH and/or FUA: the data fill wrote, whatever else. */
static enum vbt_verdict vbt_read_flush(struct vbt_ctx *c, blk_opf_t flags,
				       unsigned int slot)
{
	if (!VBT_READ_FLUSH_REACHES_DRIVER)
		return vbt_say(c, VBT_SKIP,
			       "from 6.3 submit_bio() refuses a READ with PREFLUSH or FUA");
	if (!vbt_filled(c))
		return VBT_FAIL;
	vbt_kv(c, " bytes=%u", VBT_READ_BYTES);
	return vbt_io(c, REQ_OP_READ | flags, vbt_slot(slot), VBT_READ_BYTES,
		      vbt_fill_salt);
}

static enum vbt_verdict vbt_case_read_preflush(struct vbt_ctx *c,
					       unsigned int arg)
{
	return vbt_read_flush(c, REQ_PREFLUSH, 0);
}

static enum vbt_verdict vbt_case_read_fua(struct vbt_ctx *c, unsigned int arg)
{
	return vbt_read_flush(c, REQ_FUA, 1);
}

static enum vbt_verdict vbt_case_read_preflush_fua(struct vbt_ctx *c,
						   unsigned int arg)
{
	return vbt_read_flush(c, REQ_PREFLUSH | REQ_FUA, 2);
}

static enum vbt_verdict vbt_case_empty_preflush(struct vbt_ctx *c,
						unsigned int arg)
{
	return vbt_io(c, REQ_OP_WRITE | REQ_PREFLUSH, 0, 0, 0);
}

static enum vbt_verdict vbt_case_write_preflush_fua(struct vbt_ctx *c,
						    unsigned int arg)
{
	u32 salt = ++vbt_salt;
	enum vbt_verdict v;

	vbt_kv(c, " bytes=%u", VBT_READ_BYTES);
	v = vbt_io(c, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, vbt_slot(6),
		   VBT_READ_BYTES, salt);
	if (v == VBT_PASS)
		v = vbt_io(c, REQ_OP_READ, vbt_slot(6), VBT_READ_BYTES, salt);
	return v;
}

static enum vbt_verdict vbt_case_max_bio(struct vbt_ctx *c, unsigned int arg)
{
	unsigned int max = queue_max_sectors(bdev_get_queue(c->bdev));
	u32 salt = ++vbt_salt;
	unsigned int bytes;
	enum vbt_verdict v;

	bytes = min_t(u64, (u64)max << SECTOR_SHIFT,
		      (u64)VBT_MAX_PAGES * PAGE_SIZE);
	bytes = round_down(bytes, PAGE_SIZE);
	vbt_kv(c, " bytes=%u max_sectors=%u", bytes, max);
	v = vbt_io(c, REQ_OP_WRITE, VBT_MAX_AREA, bytes, salt);
	if (v == VBT_PASS)
		v = vbt_io(c, REQ_OP_READ, VBT_MAX_AREA, bytes, salt);
	return v;
}

static enum vbt_verdict vbt_case_zero_write(struct vbt_ctx *c,
					    unsigned int arg)
{
	enum vbt_verdict v;

	if (!vbt_filled(c))
		return VBT_FAIL;
	v = vbt_io(c, REQ_OP_WRITE, vbt_slot(7), 0, 0);
	if (v == VBT_PASS)
		v = vbt_io(c, REQ_OP_READ, vbt_slot(7), PAGE_SIZE,
			   vbt_fill_salt);
	return v;
}

static enum vbt_verdict vbt_case_nowait_full(struct vbt_ctx *c,
					     unsigned int arg)
{
	struct vbt_req *r[VBT_NOWAIT_BIOS] = {};
	unsigned int i, ok = 0, again = 0, other = 0;
	enum vbt_verdict v = VBT_PASS, data = VBT_PASS;
	int first_err = 0, left;
	struct vbt_group *g;

	if (!vbt_filled(c))
		return VBT_FAIL;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return vbt_say(c, VBT_FAIL, "out of memory");
	/* Our own reference: no completion ends the group before we do. */
	atomic_set(&g->left, VBT_NOWAIT_BIOS + 1);
	init_completion(&g->done);
	for (i = 0; i < VBT_NOWAIT_BIOS; i++) {
		r[i] = vbt_req_alloc(c->bdev, REQ_OP_READ | REQ_NOWAIT,
				     vbt_slot(4) + i * VBT_NOWAIT_STRIDE,
				     PAGE_SIZE);
		if (!r[i]) {
			v = vbt_say(c, VBT_FAIL, "out of memory");
			goto out;
		}
		r[i]->grp = g;
		vbt_pattern(r[i], 0);
	}
	/* All at once, no plug: each meets the ring as the last one left it. */
	for (i = 0; i < VBT_NOWAIT_BIOS; i++)
		submit_bio(r[i]->bio);
	if (atomic_dec_and_test(&g->left))
		complete(&g->done);
	if (!wait_for_completion_io_timeout(&g->done, VBT_TIMEOUT)) {
		left = atomic_read(&g->left);
		vbt_leak();
		return vbt_say(c, VBT_FAIL, "%d of %u REQ_NOWAIT bios did not complete in %u s",
			       left, VBT_NOWAIT_BIOS, VBT_TIMEOUT / HZ);
	}

	for (i = 0; i < VBT_NOWAIT_BIOS; i++) {
		if (!r[i]->status) {
			ok++;
			if (data == VBT_PASS)
				data = vbt_check_read(c, r[i], vbt_fill_salt);
		} else if (r[i]->status == BLK_STS_AGAIN) {
			again++;
		} else if (!other++) {
			first_err = blk_status_to_errno(r[i]->status);
		}
	}
	vbt_kv(c, " bios=%u ok=%u eagain=%u other=%u", VBT_NOWAIT_BIOS, ok,
	       again, other);
	if (other)
		v = vbt_say(c, VBT_FAIL, "%u bios ended with another error (first: %d)",
			    other, first_err);
	else if (data != VBT_PASS)
		v = data;
	else if (!again)
		v = vbt_say(c, VBT_FAIL, "no bio got EAGAIN: the ring never filled");
	else if (!ok)
		v = vbt_say(c, VBT_FAIL, "no bio was served");
out:
	for (i = 0; i < VBT_NOWAIT_BIOS && r[i]; i++)
		vbt_req_free(r[i]);
	kfree(g);
	return v;
}

static void vbt_softirq_submit(struct timer_list *t)
{
	struct vbt_req *r = timer_container_of(r, t, timer);

	r->in_softirq = in_serving_softirq();
	submit_bio(r->bio);
}

/*
 * REQ_NOWAIT because nothing may sleep here. The block layer marks
 * submit_bio_noacct() might_sleep(): a CONFIG_DEBUG_ATOMIC_SLEEP kernel
 * reports any caller in softirq, whatever the driver does.
 */
static enum vbt_verdict vbt_case_softirq_read(struct vbt_ctx *c,
					      unsigned int arg)
{
	enum vbt_verdict v = VBT_PASS;
	struct vbt_req *r;

	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		return vbt_say(c, VBT_SKIP,
			       "CONFIG_DEBUG_ATOMIC_SLEEP would flag submit_bio() in softirq");
	if (!vbt_filled(c))
		return VBT_FAIL;
	r = vbt_req_alloc(c->bdev, REQ_OP_READ | REQ_NOWAIT, vbt_slot(3),
			  PAGE_SIZE);
	if (!r)
		return vbt_say(c, VBT_FAIL, "out of memory");
	vbt_pattern(r, 0);
	timer_setup(&r->timer, vbt_softirq_submit, 0);
	mod_timer(&r->timer, jiffies + 1);
	if (!vbt_wait(c, r))
		return VBT_FAIL;
	/* The callback may still be on its way out of submit_bio(). */
	vbt_timer_delete_sync(&r->timer);
	if (!r->in_softirq)
		v = vbt_say(c, VBT_FAIL, "the timer callback did not run in softirq");
	else if (r->status)
		v = vbt_say(c, VBT_FAIL, "ended with error %d",
			    blk_status_to_errno(r->status));
	else
		v = vbt_check_read(c, r, vbt_fill_salt);
	vbt_req_free(r);
	return v;
}

/* VBT_BURST_BIOS 4 KiB reads of slots 4-5, one group, fill's data poisoned. */
static struct vbt_group *vbt_burst_alloc(struct vbt_ctx *c, blk_opf_t opf,
					 struct vbt_req **r)
{
	struct vbt_group *g = kzalloc(sizeof(*g), GFP_KERNEL);
	unsigned int i;

	if (!g)
		return NULL;
	/* Our own reference: no completion ends the group before we do. */
	atomic_set(&g->left, VBT_BURST_BIOS + 1);
	init_completion(&g->done);
	for (i = 0; i < VBT_BURST_BIOS; i++) {
		r[i] = vbt_req_alloc(c->bdev, opf,
				     vbt_slot(4) + i * VBT_NOWAIT_STRIDE,
				     PAGE_SIZE);
		if (!r[i])
			return g;
		r[i]->grp = g;
		vbt_pattern(r[i], 0);
	}
	return g;
}

/* Wait for a burst, then check every bio; frees the burst. */
static enum vbt_verdict vbt_burst_end(struct vbt_ctx *c, struct vbt_group *g,
				      struct vbt_req **r)
{
	enum vbt_verdict v = VBT_PASS;
	unsigned int i;

	if (atomic_dec_and_test(&g->left))
		complete(&g->done);
	if (!wait_for_completion_io_timeout(&g->done, VBT_TIMEOUT)) {
		vbt_leak();
		return vbt_say(c, VBT_FAIL, "%d of %u bios did not complete in %u s",
			       atomic_read(&g->left), VBT_BURST_BIOS,
			       VBT_TIMEOUT / HZ);
	}
	for (i = 0; i < VBT_BURST_BIOS && v == VBT_PASS; i++) {
		if (r[i]->status)
			v = vbt_say(c, VBT_FAIL, "bio %u ended with error %d", i,
				    blk_status_to_errno(r[i]->status));
		else
			v = vbt_check_read(c, r[i], vbt_fill_salt);
	}
	for (i = 0; i < VBT_BURST_BIOS; i++)
		vbt_req_free(r[i]);
	kfree(g);
	return v;
}

struct vbt_burst {
	struct timer_list timer;
	struct vbt_req **r;
	bool in_softirq;
};

static void vbt_burst_submit(struct timer_list *t)
{
	struct vbt_burst *b = timer_container_of(b, t, timer);
	unsigned int i;

	b->in_softirq = in_serving_softirq();
	for (i = 0; i < VBT_BURST_BIOS; i++)
		submit_bio(b->r[i]->bio);
}

/*
 * dm-crypt submits from softirq without REQ_NOWAIT. The block layer's
 * might_sleep() in submit_bio_noacct() flags that on a
 * CONFIG_DEBUG_ATOMIC_SLEEP kernel whatever the driver does.
 */
static enum vbt_verdict vbt_case_softirq_full(struct vbt_ctx *c,
					      unsigned int arg)
{
	struct vbt_req *r[VBT_BURST_BIOS] = {};
	struct vbt_burst b = { .r = r };
	struct vbt_group *g;
	unsigned int i;

	if (IS_ENABLED(CONFIG_DEBUG_ATOMIC_SLEEP))
		return vbt_say(c, VBT_SKIP,
			       "CONFIG_DEBUG_ATOMIC_SLEEP would flag submit_bio() in softirq");
	if (queue_is_mq(bdev_get_queue(c->bdev)))
		return vbt_say(c, VBT_SKIP,
			       "blk-mq sleeps for a tag in softirq: bio mode only");
	if (!vbt_filled(c))
		return VBT_FAIL;
	g = vbt_burst_alloc(c, REQ_OP_READ, r);
	for (i = 0; g && i < VBT_BURST_BIOS; i++)
		if (!r[i])
			break;
	if (!g || i < VBT_BURST_BIOS) {
		for (i = 0; i < VBT_BURST_BIOS && r[i]; i++)
			vbt_req_free(r[i]);
		kfree(g);
		return vbt_say(c, VBT_FAIL, "out of memory");
	}
	timer_setup_on_stack(&b.timer, vbt_burst_submit, 0);
	mod_timer(&b.timer, jiffies + 1);
	/* Wait for the timer to fire; delete_sync then waits for its end. */
	while (timer_pending(&b.timer))
		usleep_range(1000, 2000);
	vbt_timer_delete_sync(&b.timer);
	vbt_timer_destroy_on_stack(&b.timer);
	if (!b.in_softirq) {
		vbt_burst_end(c, g, r);
		return vbt_say(c, VBT_FAIL, "the timer callback did not run in softirq");
	}
	return vbt_burst_end(c, g, r);
}

static enum vbt_verdict vbt_case_polled_plug(struct vbt_ctx *c,
					     unsigned int arg)
{
	struct vbt_req *r[VBT_BURST_BIOS] = {};
	unsigned long end = jiffies + VBT_TIMEOUT;
	struct blk_plug plug;
	struct vbt_group *g;
	unsigned int i;

	if (!vbt_queue_polls(bdev_get_queue(c->bdev)))
		return vbt_say(c, VBT_SKIP, "the queue does not poll (poll_queues=0)");
	/* A blk-mq submitter sleeps for a tag that only polling frees. */
	if (queue_is_mq(bdev_get_queue(c->bdev)))
		return vbt_say(c, VBT_SKIP, "blk-mq waits for a poll-queue tag asleep: bio mode only");
	if (!vbt_filled(c))
		return VBT_FAIL;
	g = vbt_burst_alloc(c, REQ_OP_READ | REQ_POLLED, r);
	for (i = 0; g && i < VBT_BURST_BIOS; i++)
		if (!r[i])
			break;
	if (!g || i < VBT_BURST_BIOS) {
		for (i = 0; i < VBT_BURST_BIOS && r[i]; i++)
			vbt_req_free(r[i]);
		kfree(g);
		return vbt_say(c, VBT_FAIL, "out of memory");
	}
	blk_start_plug(&plug);
	for (i = 0; i < VBT_BURST_BIOS; i++)
		submit_bio(r[i]->bio);
	blk_finish_plug(&plug);
	/* Polled completions come only to whoever polls: we do. */
	while (atomic_read(&g->left) > 1 && time_before(jiffies, end)) {
		for (i = 0; i < VBT_BURST_BIOS; i++)
			bio_poll(r[i]->bio, NULL, 0);
		cond_resched();
	}
	return vbt_burst_end(c, g, r);
}

static enum vbt_verdict vbt_case_mark(struct vbt_ctx *c, unsigned int n)
{
	if (!n)
		return vbt_say(c, VBT_FAIL, "usage: mark N, N > 0");
	return vbt_io(c, REQ_OP_READ, VBT_MARK_BASE + n,
		      bdev_logical_block_size(c->bdev), 0);
}

static const struct vbt_case {
	const char *name;
	enum vbt_verdict (*run)(struct vbt_ctx *c, unsigned int arg);
} vbt_cases[] = {
	{ "fill",		vbt_case_fill },
	{ "read_preflush",	vbt_case_read_preflush },
	{ "read_fua",		vbt_case_read_fua },
	{ "read_preflush_fua",	vbt_case_read_preflush_fua },
	{ "empty_preflush",	vbt_case_empty_preflush },
	{ "write_preflush_fua",	vbt_case_write_preflush_fua },
	{ "max_bio",		vbt_case_max_bio },
	{ "zero_write",		vbt_case_zero_write },
	{ "nowait_full",	vbt_case_nowait_full },
	{ "softirq_read",	vbt_case_softirq_read },
	{ "softirq_full",	vbt_case_softirq_full },
	{ "polled_plug",	vbt_case_polled_plug },
	{ "mark",		vbt_case_mark },
};

static ssize_t vbt_run_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	const struct vbt_case *tc = NULL;
	struct vbt_ctx *c;
	char buf[48], *p, *name;
	enum vbt_verdict v;
	struct vbt_bdev b;
	unsigned int arg = 0, i;
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	p = strim(buf);
	name = strsep(&p, " ");
	if (p && kstrtouint(skip_spaces(p), 0, &arg))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(vbt_cases); i++)
		if (!strcmp(name, vbt_cases[i].name))
			tc = &vbt_cases[i];
	if (!tc)
		return -EINVAL;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	mutex_lock(&vbt_lock);
	err = vbt_bdev_open(dev, &b);
	if (err) {
		v = vbt_say(c, VBT_FAIL, "cannot open %s: %d", dev, err);
	} else {
		c->bdev = b.bdev;
		v = tc->run(c, arg);
		vbt_bdev_close(&b);
	}
	snprintf(vbt_result, sizeof(vbt_result), "%s %s%s%s%s\n", tc->name,
		 vbt_verdicts[v], c->kv, c->why[0] ? " - " : "", c->why);
	pr_info("%s", vbt_result);
	mutex_unlock(&vbt_lock);
	kfree(c);
	return v == VBT_FAIL ? -EIO : len;
}

static ssize_t vbt_result_read(struct file *file, char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&vbt_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, vbt_result,
				      strlen(vbt_result));
	mutex_unlock(&vbt_lock);
	return ret;
}

static const struct file_operations vbt_run_fops = {
	.owner	= THIS_MODULE,
	.write	= vbt_run_write,
	.llseek	= noop_llseek,
};

static const struct file_operations vbt_result_fops = {
	.owner	= THIS_MODULE,
	.read	= vbt_result_read,
	.llseek	= default_llseek,
};

static int __init vbt_init(void)
{
	if (!dev || !*dev) {
		pr_err("dev= must name the block device to test\n");
		return -EINVAL;
	}
	vbt_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("run", 0200, vbt_dir, NULL, &vbt_run_fops);
	debugfs_create_file("result", 0400, vbt_dir, NULL, &vbt_result_fops);
	return 0;
}

static void __exit vbt_exit(void)
{
	debugfs_remove_recursive(vbt_dir);
}

module_init(vbt_init);
module_exit(vbt_exit);
MODULE_DESCRIPTION("vbblk test only: crafted bios against a block device");
MODULE_LICENSE("GPL");
