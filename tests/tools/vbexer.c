// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vbexer - draws random operations over what a user reaches of one vbblk
 * disk, and checks every result against a model, in the manner of fsx:
 *
 *   - the passthrough node /dev/vbblk/<disk>: every opcode, valid and with
 *     one fault each (a field, a flag, an alignment, a range, a buffer: bad,
 *     unaligned, read-only, half-mapped, registered, vectored, file-backed),
 *     on rings of drawn flags (IOPOLL, SQPOLL, SINGLE_ISSUER, DEFER_TASKRUN,
 *     COOP_TASKRUN, SQE128 or not), with IOSQE_ASYNC, IO_DRAIN, IO_LINK
 *     chains, cancels and timeouts, from one or two rings at once;
 *   - the block device: O_DIRECT reads and writes through the rings (NOWAIT,
 *     DSYNC) and by system call, buffered writes and reads, fdatasync, the
 *     discard, zero-out, flush and size ioctls;
 *   - events from a second process: cache_type flips, stores to the
 *     disk's other writable knobs and vbblk's writable parameters (valid
 *     ones read back, garbage refused), suspend (pm_test=devices), unbind
 *     and bind of the driver with every ring in flight (the rings live on;
 *     the descriptors are opened again on the same numbers), a fork that
 *     exits with the rings in flight, a ring closed with reads in flight.
 *
 * The model: one completion per submission, each result one the uAPI
 * documents for that case, every byte read equal to the model of the disk
 * (a region written by one process; sectors of unknown content, after a
 * discard or a failed write, are not checked), EIO exactly where the
 * device has a bad sector (-B), and no operation or event
 * outliving a stall bound. The operations are a function of the seed alone;
 * -k replays a subset of them, -S shrinks a failure to a short list.
 *
 *   vbexer [options] vdX
 *     -s SEED   seed (default: from the clock; printed)
 *     -n N      operations (default 20000)       -t SECS  at most (0: none)
 *     -k LIST   issue only these operations: "3,17,40-45" or @FILE
 *     -S        on a failure, shrink it to a short list and print it
 *     -P        a partner process on the second half of the disk
 *     -h        the first half only, as with -P but without the partner
 *               (the shrink's runs of a -P run)
 *     -H        half the suspends held: polled reads in flight, the process
 *               asleep without polling (finds M2; io-wq may then spin on a
 *               polled bio's EAGAIN and fail the freeze: not by default)
 *     -E LIST   events: cache (and knobs),suspend,unbind,fork,close
 *               (default cache,fork,close); at most two suspends and four
 *               unbinds a run, by the first process only (unbind: not
 *               with -P)
 *     -B LIST   the device fails I/O on these sectors (blkdebug, set up by
 *               the harness): "SECTOR:r|w|rw,...", 512-byte sectors of
 *               the disk; a read or write over one must fail with EIO
 *               (request mode: one beside it may too, merged with it)
 *     -R NODE   one in four cache events asks the host, through the test
 *               harness's /host/req (not with suspends: 9p cannot), to
 *               grow the disk (QEMU node NODE, by 1-4 MiB, 16 MiB in all)
 *               or, half of them, to throttle it (device NODE) to one
 *               request a second for 2-6 s: a device that stops answering
 *     -w SECS   stall bound (default 60)        -v  print each operation
 *     -x LIST   drain: never set IOSQE_IO_DRAIN (drawn all the same);
 *               late: a node command io_uring issues late (a link after
 *               the first, one behind a drain) goes by io-wq, for
 *               6.11-6.13 (see put_ring_op())
 *
 * Exit: 0 all results as modelled, 1 a failure (seed and list printed),
 * 2 bad usage or setup.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fs.h>
#include <linux/ioprio.h>
#include <linux/vbblk.h>
#include <scsi/sg.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN	(1U << 8)
#endif
#ifndef IOPRIO_PRIO_VALUE
#define IOPRIO_PRIO_VALUE(c, d)	(((c) << 13) | (d))
#endif

#define MAX_RINGS	2
#define MAX_SLOTS	64
#define SLOT_BYTES	(256 << 10)
#define SLOT_SPAN	(SLOT_BYTES + 8192)	/* room to misalign */
#define MAX_RES		8
#define MAX_GROWTH	(16ULL << 20)	/* -R: the host adds at most this */
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define LOG_ENTRIES	64
#define MAX_CHAIN	3

/* ---- the random source: the operations are a function of it alone ---- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rnd64() % n) : 0;
}

static bool chance(unsigned int pct)
{
	return rnd(100) < pct;
}

/* ---- the disk, as sysfs describes it ---- */

struct disk {
	char name[32];
	char serial[VBBLK_ID_BYTES + 1];
	uint64_t bytes;			/* whole disk */
	uint32_t lbs;
	uint64_t max_bytes;		/* max_hw_sectors_kb */
	uint32_t max_segs;
	int sg_max;			/* SG_IO's largest transfer (docs/scsi.md) */
	uint32_t dma_align;		/* mask */
	uint64_t max_discard;		/* sectors, 0: none */
	uint64_t max_wz;		/* sectors, 0: none */
	bool ro;
	bool wcache;
	bool nfd_rw;			/* the node opened for writing */
	bool poll;			/* queue/io_poll: polled bios go */
	bool blkmq;			/* request mode: blk-mq's flush sequence */
	int nfd, nfd_ro;		/* the node, read-write and read-only */
	char vdev[32];			/* its virtio device: virtioN */
	int bfd, bfd_buf;		/* the block device: O_DIRECT, buffered */
};

static struct disk d;
static uint64_t reg_lo, reg_hi;	/* our region of the disk, bytes */
static uint8_t *model;		/* its content */
static uint8_t *known;		/* per 512-byte sector: content known */

/* ---- options and counts ---- */

static struct {
	uint64_t seed;
	uint64_t nops;
	unsigned int secs;
	unsigned int stall;
	bool verbose, shrink, partner;
	bool half;			/* -h: -P's first half, no partner */
	bool held;			/* -H: half the suspends held */
	bool ev_cache, ev_suspend, ev_fork, ev_close, ev_unbind;
	const char *events;		/* -E, as given: for the shrink's runs */
	const char *bad;		/* -B, as given: for the shrink's runs */
	const char *resize_node;	/* -R: the host grows this disk */
	bool growth;			/* -R given: the disk may grow */
	bool knobs;			/* stores to knobs: one process only */
	bool no_drain;			/* -x drain: IOSQE_IO_DRAIN never set */
	bool no_late;			/* -x late: see put_ring_op() */
	char *keep;			/* -k, as given */
	const char *argv0;
} o = { .nops = 20000, .stall = 60 };

static uint8_t *keep_set;		/* -k: ops to issue, by index */

struct counts {
	uint64_t ops, node, block, events, rings, failures, skipped;
	uint64_t suspends, held;	/* suspends made, held ones */
	uint64_t knobs;			/* sysfs and parameter stores */
	uint64_t resizes;		/* host block_resize, seen by the guest */
	uint64_t sgio;			/* O_DIRECT reads and writes by SG_IO */
	uint64_t unbinds;		/* unbind and bind with rings in flight */
	uint64_t eio;			/* EIO from a bad sector (-B) */
	uint64_t stalls;		/* the device stopped a while (-R) */
	uint64_t first_fail;		/* op index of the first failure */
	uint32_t combos[1024];		/* bitmap of (kind, ring flags, fault) */
};

/*
 * What the supervisor sees of the worker: progress for the stall bound,
 * and the last operations, for a report if it stops.
 */
struct shared {
	volatile uint64_t beat;		/* bumps on every issue and end */
	volatile uint64_t cur;		/* op being issued */
	volatile int done;
	struct counts c;
	char log[LOG_ENTRIES][160];
	volatile uint64_t nlog;
	volatile uint64_t event_req, event_done;
	volatile int event_kind;
	volatile int event_rc;
	volatile int event_arg;		/* the op's misc: which knob, what value */
	volatile uint64_t event_idx;
	char event_msg[400];		/* a knob's store against its model */
	char disk[32];			/* the disk's name now: an unbind and
					 * bind may give it another */
};

static struct shared *sh;

static int write_str(const char *path, const char *s);
static uint64_t sysfs_u64(const char *attr, uint64_t dflt);

static void logop(const char *fmt, ...)
{
	char *e = sh->log[sh->nlog % LOG_ENTRIES];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e, sizeof(sh->log[0]), fmt, ap);
	va_end(ap);
	sh->nlog++;
	if (o.verbose)
		printf("op %s\n", e);
}

static void failf(uint64_t idx, const char *fmt, ...)
{
	va_list ap;

	if (!sh->c.failures)
		sh->c.first_fail = idx;
	sh->c.failures++;
	printf("exerciser: FAIL at op %" PRIu64 ": ", idx);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "vbexer: %s: %s\n", what, strerror(err));
	exit(2);
}

/* ---- operations ---- */

enum kind {
	K_NREAD, K_NWRITE, K_NFLUSH, K_NDISCARD, K_NWZ, K_NGETID,
	K_BREAD, K_BWRITE,		/* block device, through a ring */
	K_NOP, K_TIMEOUT, K_CANCEL,
	K_CHAIN,			/* 2-3 linked ring operations */
	K_PREAD, K_PWRITE, K_BUFWRITE, K_BUFREAD, K_BDISCARD, K_BZEROOUT,
	K_FSYNC, K_INFO,		/* block device, system calls */
	K_RING,				/* a new ring configuration */
	K_EVCACHE, K_EVSUSPEND, K_EVFORK, K_DRAIN,
	K_EVUNBIND, K_EVBIND,		/* within a cache event: see do_unbind() */
	K_NKINDS
};

static const char *const kname[K_NKINDS] = {
	"nread", "nwrite", "nflush", "ndiscard", "nwzeroes", "ngetid",
	"bread", "bwrite", "nop", "timeout", "cancel", "chain",
	"pread", "pwrite", "bufwrite", "bufread", "blkdiscard", "blkzeroout",
	"fdatasync", "info", "ring", "ev-cache", "ev-suspend", "ev-fork",
	"drain", "ev-unbind", "ev-bind",
};

/* One fault at most per command, so that its errno is the one expected. */
enum fault {
	F_NONE, F_OPCODE, F_RSVD, F_CMDOP, F_FLAGS, F_FIELD, F_IOPRIO,
	F_ZERO, F_LBS, F_TOOBIG, F_RANGE, F_BADADDR, F_NULLADDR, F_UNALIGNED,
	F_ROMAP, F_HOLE, F_RODESC, F_NFAULTS
};

static const char *const fname[F_NFAULTS] = {
	"", "opcode", "rsvd", "cmdop", "flags", "field", "ioprio", "zero",
	"lbs", "toobig", "range", "badaddr", "null", "unaligned", "romap",
	"hole", "rodesc",
};

enum buf { B_PLAIN, B_FIXED, B_VEC, B_NBUF };

struct op {
	uint64_t idx;
	uint8_t kind, fault, buf, ring;
	uint8_t sqflags;		/* IOSQE_ASYNC, IOSQE_IO_DRAIN */
	uint8_t rwflags;		/* 1 NOWAIT, 2 DSYNC */
	uint8_t misc;
	uint16_t ioprio;
	uint64_t off;			/* bytes, from reg_lo */
	uint32_t len;
	uint32_t nr;			/* sectors, discard and write zeroes */
	uint64_t aux;
	int nsub;
	struct op *sub;			/* K_CHAIN */
};

/* ---- rings ---- */

struct slot {
	bool busy;
	uint64_t idx, ud;
	uint8_t kind, fault;
	uint64_t off;			/* bytes, disk-absolute */
	uint32_t len;
	bool writes, reads;		/* changes / reads the region */
	int nres;
	int res[MAX_RES];		/* what the result may be */
	bool canceled_ok;
	bool gone_ok;			/* in flight at an unbind */
	bool bad;			/* may fail on a bad sector (-B) */
	uint64_t chain;			/* its link chain: the first op's index */
	unsigned int chain_pos;
	uint8_t *buf;			/* data (within the slot's area) */
	struct iovec iov[4];
	struct __kernel_timespec ts;
	char id[VBBLK_ID_BYTES];
	struct vbblk_uring_cmd cmd;	/* as sent, for a report */
	uint8_t sqe_flags, cmd_flags;
};

struct ring {
	bool open;
	struct io_uring r;
	unsigned int flags;
	bool sqe128, fixed_ok, filebacked;
	unsigned int depth, inflight, pending;
	unsigned int batch;
	uint8_t *pool;
	size_t poolsz;
	struct slot s[MAX_SLOTS];
};

static struct ring rings[MAX_RINGS];
static unsigned int nrings = 1;
static uint8_t *romap, *hole;		/* a read-only and a half-mapped area */
static uint64_t ud_seq = 1;

static void combo(uint8_t kind, unsigned int flags, uint8_t fault)
{
	unsigned int k = (kind * 31 + fault * 7 + (flags >> 8) * 131 +
			  (flags & 0xff)) % (sizeof(sh->c.combos) * 8);

	sh->c.combos[k / 32] |= 1U << (k % 32);
}

static unsigned int combos_seen(const struct counts *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < sizeof(c->combos) / 4; i++)
		n += __builtin_popcount(c->combos[i]);
	return n;
}

static void ring_slots_free(struct ring *r)
{
	unsigned int i;

	if (!r->pool)
		return;
	/*
	 * A read still in flight keeps its pages pinned and may land after
	 * the close: the pool is unmapped, never reused.
	 */
	munmap(r->pool, r->poolsz);
	r->pool = NULL;
	for (i = 0; i < MAX_SLOTS; i++)
		r->s[i].busy = false;
}

static uint8_t *slot_area(struct ring *r, unsigned int i)
{
	return r->pool + (size_t)i * SLOT_SPAN;
}

/* A ring of flags drawn by the caller; false if the kernel refuses them. */
static int ring_open(struct ring *r, unsigned int flags, unsigned int depth,
		     bool filebacked)
{
	struct io_uring_params p = { 0 };
	struct iovec iov[MAX_SLOTS];
	unsigned int i;
	int ret;

	p.flags = flags;
	if (flags & IORING_SETUP_SQPOLL)
		p.sq_thread_idle = 50;
	ret = io_uring_queue_init_params(depth, &r->r, &p);
	if (ret)
		return ret;
	r->open = true;
	r->flags = flags;
	r->sqe128 = flags & IORING_SETUP_SQE128;
	r->depth = depth < MAX_SLOTS ? depth : MAX_SLOTS;
	r->inflight = r->pending = 0;
	r->poolsz = (size_t)r->depth * SLOT_SPAN;
	r->filebacked = filebacked;
	if (filebacked) {
		int fd = memfd_create("vbexer", 0);

		if (fd < 0 || ftruncate(fd, r->poolsz))
			die("memfd", errno);
		r->pool = mmap(NULL, r->poolsz, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		close(fd);
	} else {
		r->pool = mmap(NULL, r->poolsz, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (r->pool == MAP_FAILED)
		die("mmap", errno);
	for (i = 0; i < r->depth; i++) {
		iov[i].iov_base = slot_area(r, i);
		iov[i].iov_len = SLOT_SPAN;
	}
	/* Registered buffers: a memfd's are refused by some kernels. */
	r->fixed_ok = io_uring_register_buffers(&r->r, iov, r->depth) == 0;
	return 0;
}

static int ring_free_slot(struct ring *r)
{
	unsigned int i;

	for (i = 0; i < r->depth; i++)
		if (!r->s[i].busy)
			return i;
	return -1;
}

/* ---- the model ---- */

/* -B: sectors where the device fails reads, writes or both */
#define MAX_BAD		8
static struct bad {
	uint64_t off;			/* bytes */
	bool r, w;
} bad[MAX_BAD];
static unsigned int nbad;

/*
 * Does I/O of @write over [off, off+len), padded by @pad bytes each side,
 * cover a bad sector?
 */
static bool bad_in(uint64_t off, uint64_t len, bool write, uint64_t pad)
{
	unsigned int i;

	for (i = 0; i < nbad; i++)
		if ((write ? bad[i].w : bad[i].r) &&
		    bad[i].off + 512 + pad > off && bad[i].off < off + len + pad)
			return true;
	return false;
}

/*
 * A failed writeback also sets the block device's legacy error flag
 * (AS_EIO), which the next O_DIRECT read or write of any range reports
 * when it writes back the page cache first (filemap_write_and_wait_range()),
 * until an fdatasync clears it: a partner's, or a ring's from io-wq while
 * a buffered write over a bad sector waits for its writeback.
 */
static bool bad_wb(void)
{
	unsigned int i;

	for (i = 0; i < nbad; i++)
		if (bad[i].w)
			return true;
	return false;
}

/*
 * A writeback error is the file's: every descriptor open at the time sees
 * it at its next fdatasync (errseq), a partner's (-P) too, whatever range
 * it wrote.
 */
static bool bad_theirs(void)
{
	return o.partner && bad_wb();
}

/* EIO for certain: the I/O covers a bad sector */
static bool bad_hit(uint64_t off, uint64_t len, bool write)
{
	return bad_in(off, len, write, 0);
}

/*
 * EIO possible: blk-mq (request mode) merges block I/O that meets into
 * one request, which fails whole; bio mode retries a failed command bio
 * by bio, and passthrough commands do not merge.
 */
static bool bad_near(uint64_t off, uint64_t len, bool write)
{
	return bad_in(off, len, write, d.blkmq ? d.max_bytes : 0);
}

static void model_set(uint64_t off, const uint8_t *buf, uint32_t len)
{
	memcpy(model + off - reg_lo, buf, len);
	memset(known + (off - reg_lo) / 512, 1, len / 512);
}

static void model_zero(uint64_t off, uint64_t len)
{
	memset(model + off - reg_lo, 0, len);
	memset(known + (off - reg_lo) / 512, 1, len / 512);
}

static void model_forget(uint64_t off, uint64_t len)
{
	memset(known + (off - reg_lo) / 512, 0, len / 512);
}

/* The read's bytes against the model, where the model knows them. */
static bool model_check(uint64_t idx, uint64_t off, const uint8_t *buf,
			uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i += 512) {
		const uint8_t *m = model + off - reg_lo + i;

		if (!known[(off - reg_lo + i) / 512] || !memcmp(m, buf + i, 512))
			continue;
		failf(idx, "data at byte %" PRIu64 " differs from the model "
		      "(read %02x%02x%02x%02x, model %02x%02x%02x%02x)",
		      off + i, buf[i], buf[i + 1], buf[i + 2], buf[i + 3],
		      m[0], m[1], m[2], m[3]);
		return false;
	}
	return true;
}

static void fill(uint8_t *buf, uint32_t len, uint64_t idx)
{
	uint64_t x = idx * 0x2545f4914f6cdd1dULL + o.seed;
	uint32_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

/* ---- in flight: no overlapping write with anything ---- */

static bool overlaps(uint64_t a, uint32_t al, uint64_t b, uint32_t bl)
{
	return a < b + bl && b < a + al;
}

static bool conflict(uint64_t off, uint32_t len, bool writes)
{
	unsigned int ri, i;

	for (ri = 0; ri < nrings; ri++) {
		struct ring *r = &rings[ri];

		if (!r->open)
			continue;
		for (i = 0; i < r->depth; i++) {
			struct slot *s = &r->s[i];

			if (!s->busy || !(s->writes || (writes && s->reads)))
				continue;
			if (overlaps(off, len, s->off, s->len))
				return true;
		}
	}
	return false;
}

static bool res_ok(const struct slot *s, int res)
{
	int i;

	for (i = 0; i < s->nres; i++)
		if (s->res[i] == res)
			return true;
	/*
	 * A cancel ends a command queued in io-wq (ECANCELED), or one that
	 * waits there in the driver (EINTR, as a signal would).
	 */
	if (s->canceled_ok && (res == -ECANCELED || res == -EINTR))
		return true;
	/*
	 * In flight at an unbind: a node command not yet on the ring ends
	 * with ENODEV, block I/O the gone disk did not take with EIO (ENXIO,
	 * ENODEV on the way in), and what was linked behind either ECANCELED.
	 */
	return s->gone_ok &&
	       (res == -ECANCELED ||
		(s->kind <= K_NGETID && res == -ENODEV) ||
		((s->kind == K_BREAD || s->kind == K_BWRITE) &&
		 (res == -EIO || res == -ENXIO || res == -ENODEV)));
}

static void res_str(const struct slot *s, char *out, size_t n)
{
	int i, k = 0;

	for (i = 0; i < s->nres; i++)
		k += snprintf(out + k, n - k, "%s%d", i ? "|" : "", s->res[i]);
	if (s->canceled_ok)
		k += snprintf(out + k, n - k, "|%d|%d", -ECANCELED, -EINTR);
	if (s->gone_ok)
		snprintf(out + k, n - k, " or the unbind's");
}

static bool node_writes(uint8_t kind)
{
	return kind == K_NWRITE || kind == K_NDISCARD || kind == K_NWZ;
}

static void end_slot(struct ring *r, struct slot *s, int res)
{
	char want[128];

	if (!res_ok(s, res)) {
		res_str(s, want, sizeof(want));
		failf(s->idx, "%s%s%s res=%d, the model says %s (ring flags 0x%x; "
		      "sqe flags 0x%x%s; cmd op %u flags 0x%x ioprio 0x%x sector %llu "
		      "addr 0x%llx len %u nr %u)",
		      kname[s->kind], s->fault ? " fault=" : "", fname[s->fault],
		      res, want, r->flags, s->sqe_flags,
		      s->cmd_flags ? " fixed" : "", s->cmd.opcode, s->cmd.flags,
		      s->cmd.ioprio, (unsigned long long)s->cmd.sector,
		      (unsigned long long)s->cmd.addr, s->cmd.len,
		      s->cmd.nr_sectors);
		if (s->cmd.flags & VBBLK_F_VEC)
			printf("  iov %p+%zu %p+%zu (buf %p, slot %ld)\n",
			       s->iov[0].iov_base, s->iov[0].iov_len,
			       s->iov[1].iov_base, s->iov[1].iov_len, s->buf,
			       (long)(s - r->s));
		/* a write that may have happened, or not */
		if (s->writes || node_writes(s->kind) || s->kind == K_BWRITE)
			model_forget(s->off, s->len);
		goto out;
	} else if (res > 0 && res != (int)s->len && s->kind != K_NGETID) {
		failf(s->idx, "%s moved %d of %u bytes", kname[s->kind], res,
		      s->len);
	}
	if (res == -EIO && s->bad)
		sh->c.eio++;
	if (res < 0 && (s->gone_ok || s->bad) &&
	    (s->writes || node_writes(s->kind) || s->kind == K_BWRITE))
		model_forget(s->off, s->len);	/* it may have landed */
	if (res >= 0) {
		switch (s->kind) {
		case K_NREAD:
		case K_BREAD:
			model_check(s->idx, s->off, s->buf, s->len);
			break;
		case K_NWRITE:
		case K_BWRITE:
			model_set(s->off, s->buf, s->len);
			break;
		case K_NDISCARD:
			model_forget(s->off, s->len);
			break;
		case K_NWZ:
			model_zero(s->off, s->len);
			break;
		case K_NGETID:
			if (memcmp(s->id, d.serial, VBBLK_ID_BYTES))
				failf(s->idx, "GET_ID gave '%.20s', sysfs says '%s'",
				      s->id, d.serial);
			break;
		}
	}
out:
	s->busy = false;
	r->inflight--;
	sh->beat++;
}

static void reap_one(struct ring *r, struct io_uring_cqe *cqe)
{
	uint64_t ud = cqe->user_data;
	unsigned int i = ud & 0xff;
	struct slot *s = i < r->depth ? &r->s[i] : NULL;

	if (!s || !s->busy || s->ud != ud) {
		failf(ud >> 8, "a completion (user_data 0x%" PRIx64 ", res %d) for "
		      "no command in flight: a second CQE, or a stray one", ud,
		      cqe->res);
		return;
	}
	end_slot(r, s, cqe->res);
}

static void ring_submit(struct ring *r)
{
	int ret;

	if (!r->pending)
		return;
	ret = io_uring_submit(&r->r);
	if (ret < 0)
		die("io_uring_submit", -ret);
	r->pending = 0;
}

/*
 * Submit without reaping: io_uring_submit() on an IOPOLL ring polls once
 * too (liburing asks for events), which would reap what a held suspend
 * must find in flight. An SQPOLL ring's thread submits (and polls) itself.
 */
static void ring_submit_nopoll(struct ring *r)
{
	int ret;

	if (!r->pending)
		return;
	if (r->flags & IORING_SETUP_SQPOLL) {
		ring_submit(r);
		return;
	}
	r->r.sq.sqe_head = r->r.sq.sqe_tail;
	io_uring_smp_store_release(r->r.sq.ktail, r->r.sq.sqe_tail);
	ret = syscall(__NR_io_uring_enter, r->r.ring_fd, r->pending, 0, 0,
		      NULL, 0);
	if (ret < 0)
		die("io_uring_enter", errno);
	r->pending = 0;
}

static void ring_dump(struct ring *r)
{
	unsigned int i;

	printf("exerciser: waiting on a ring (flags 0x%x) for:\n", r->flags);
	for (i = 0; i < r->depth; i++)
		if (r->s[i].busy)
			printf("  op %" PRIu64 " %s%s%s sqe flags 0x%x cmd op %u len %u\n",
			       r->s[i].idx, kname[r->s[i].kind],
			       r->s[i].fault ? " fault=" : "", fname[r->s[i].fault],
			       r->s[i].sqe_flags, r->s[i].cmd.opcode, r->s[i].len);
	fflush(stdout);
}

/* Take what has completed; wait for one if @wait, within the stall bound. */
static void ring_reap(struct ring *r, bool wait)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	time_t t0;

	ring_submit(r);
	if (!r->inflight)
		return;
	/* DEFER_TASKRUN and IOPOLL complete only when we enter. */
	if (r->flags & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_IOPOLL))
		io_uring_get_events(&r->r);
	io_uring_for_each_cqe(&r->r, head, cqe) {
		reap_one(r, cqe);
		n++;
	}
	io_uring_cq_advance(&r->r, n);
	if (n || !wait)
		return;
	for (t0 = time(NULL);;) {
		struct __kernel_timespec ts = { .tv_sec = 1 };
		int ret = io_uring_wait_cqe_timeout(&r->r, &cqe, &ts);

		/* the supervisor watches the time; say what we wait for */
		if ((ret == -ETIME || ret == -EINTR) && t0 &&
		    time(NULL) - t0 > o.stall / 2) {
			ring_dump(r);
			t0 = 0;
		}
		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret < 0)
			die("io_uring_wait_cqe", -ret);
		reap_one(r, cqe);
		io_uring_cqe_seen(&r->r, cqe);
		return;
	}
}

static void reap_all(bool wait)
{
	unsigned int i;

	for (i = 0; i < nrings; i++)
		if (rings[i].open)
			ring_reap(&rings[i], wait);
}

static void ring_drain(struct ring *r)
{
	while (r->open && (r->inflight || r->pending))
		ring_reap(r, true);
}

static void drain_all(void)
{
	unsigned int i;

	for (i = 0; i < nrings; i++)
		ring_drain(&rings[i]);
}

/*
 * Before this task blocks in a flush: in request mode blk-mq holds a flush
 * back behind a flush sequence's polled data (an O_DSYNC write), which only
 * its submitter's poll completes, so a task that flushes with its own polled
 * writes unreaped waits for itself (stock virtio_blk alike). Not a driver
 * case: reap them first. Bio mode has no such sequence and keeps the case.
 */
static void drain_polled(void)
{
	unsigned int i;

	if (!d.blkmq || !d.poll)
		return;
	for (i = 0; i < nrings; i++)
		if (rings[i].flags & IORING_SETUP_IOPOLL)
			ring_drain(&rings[i]);
}

/* Wait until nothing in flight conflicts with [off, off+len). */
static void wait_clear(uint64_t off, uint32_t len, bool writes)
{
	unsigned int ri = 0;

	while (conflict(off, len, writes)) {
		reap_all(false);
		if (!conflict(off, len, writes))
			break;
		if (rings[ri].open && rings[ri].inflight)
			ring_reap(&rings[ri], true);
		ri = (ri + 1) % nrings;
	}
}

/* ---- drawing ---- */

static uint32_t lbs_units(uint32_t max)
{
	uint32_t n = max / d.lbs;

	return d.lbs * (1 + rnd(n ? n : 1));
}

/*
 * The largest I/O drawn: none may need a split, which a polled bio cannot
 * take (see knobs[]).
 */
static uint32_t len_cap(void)
{
	uint32_t cap = d.max_bytes < SLOT_BYTES ? (uint32_t)d.max_bytes : SLOT_BYTES;
	/* a page per 4 KiB, plus one for an unaligned start */
	uint32_t segcap = (d.max_segs > 2 ? d.max_segs - 2 : 1) * 4096;

	return segcap < cap ? segcap : cap;
}

/* A transfer size: mostly small, sometimes up to the limit. */
static uint32_t draw_len(void)
{
	uint32_t cap = len_cap();

	switch (rnd(4)) {
	case 0:
		return d.lbs;
	case 1:
		return lbs_units(16384 < cap ? 16384 : cap);
	case 2:
		return lbs_units(65536 < cap ? 65536 : cap);
	default:
		return lbs_units(cap);
	}
}

static uint64_t draw_off(uint32_t len)
{
	uint64_t span = reg_hi - reg_lo;
	uint64_t n = (span - len) / d.lbs;

	/*
	 * One in ten over or just beside a bad sector (-B; nothing drawn
	 * without: a seed's operations stay what they were).
	 */
	if (nbad && chance(10)) {
		const struct bad *b = &bad[rnd(nbad)];
		uint64_t at = b->off - b->off % d.lbs;
		uint64_t back = (uint64_t)rnd(len / d.lbs + 2) * d.lbs;

		if (at >= reg_lo + back && at - back - reg_lo <= span - len)
			return at - back - reg_lo;
	}
	/* Half the time near the region's start: more overlap. */
	if (chance(50) && n > 64)
		n = 64;
	return (rnd64() % (n + 1)) * d.lbs;
}

static uint8_t draw_fault(uint8_t kind)
{
	static const uint8_t rw[] = { F_OPCODE, F_RSVD, F_CMDOP, F_FLAGS,
		F_FIELD, F_IOPRIO, F_ZERO, F_LBS, F_TOOBIG, F_RANGE, F_BADADDR,
		F_NULLADDR, F_UNALIGNED, F_ROMAP, F_HOLE, F_RODESC };
	static const uint8_t rng[] = { F_FIELD, F_FLAGS, F_ZERO, F_LBS,
		F_RANGE, F_RODESC, F_IOPRIO };

	if (!chance(15))
		return F_NONE;
	switch (kind) {
	case K_NREAD:
	case K_NWRITE:
		return rw[rnd(sizeof(rw))];
	case K_NDISCARD:
	case K_NWZ:
		return rng[rnd(sizeof(rng))];
	case K_NFLUSH:
	case K_NGETID:
		return chance(50) ? F_FIELD : F_RSVD;
	case K_BREAD:
	case K_BWRITE:
		return chance(50) ? F_UNALIGNED : F_LBS;
	}
	return F_NONE;
}

static void draw_ring_op(struct op *op, bool in_chain)
{
	static const uint8_t kinds[] = {
		K_NREAD, K_NREAD, K_NREAD, K_NWRITE, K_NWRITE, K_NWRITE,
		K_NFLUSH, K_NFLUSH, K_NDISCARD, K_NWZ, K_NGETID,
		K_BREAD, K_BREAD, K_BWRITE, K_BWRITE, K_NOP, K_TIMEOUT,
		K_CANCEL,
	};

	op->kind = kinds[rnd(in_chain ? sizeof(kinds) - 3 : sizeof(kinds))];
	op->ring = rnd(MAX_RINGS);
	op->buf = rnd(B_NBUF);
	op->fault = draw_fault(op->kind);
	op->sqflags = (chance(15) ? IOSQE_ASYNC : 0) |
		      (chance(3) ? IOSQE_IO_DRAIN : 0);
	op->rwflags = (chance(15) ? 1 : 0) | (chance(15) ? 2 : 0);
	op->ioprio = chance(10) ? IOPRIO_PRIO_VALUE(1 + rnd(3), rnd(8)) : 0;
	op->misc = rnd(256);
	op->aux = rnd64();
	switch (op->kind) {
	case K_NDISCARD:
	case K_NWZ: {
		uint64_t lim = op->kind == K_NDISCARD ? d.max_discard : d.max_wz;
		uint32_t bytes;

		if (!lim)
			lim = 2048;
		bytes = lbs_units((lim * 512 < SLOT_BYTES * 4 ?
				   lim * 512 : SLOT_BYTES * 4));
		op->len = bytes;
		op->nr = bytes / 512;
		op->off = draw_off(bytes);
		break;
	}
	default:
		op->len = draw_len();
		/* a half-mapped buffer: at least one block past the hole */
		if (op->fault == F_HOLE && op->len < 2 * d.lbs)
			op->len = 2 * d.lbs;
		op->off = draw_off(op->len);
	}
}

static void draw(struct op *op, uint64_t idx)
{
	unsigned int w = rnd(1000);

	memset(op, 0, sizeof(*op));
	op->idx = idx;
	if (w < 700) {
		draw_ring_op(op, false);
	} else if (w < 740) {
		int i;

		op->kind = K_CHAIN;
		op->ring = rnd(MAX_RINGS);
		op->nsub = 2 + rnd(MAX_CHAIN - 1);
		op->sub = calloc(op->nsub, sizeof(*op->sub));
		for (i = 0; i < op->nsub; i++) {
			draw_ring_op(&op->sub[i], true);
			op->sub[i].idx = idx;
			op->sub[i].ring = op->ring;
		}
	} else if (w < 900) {
		static const uint8_t k[] = { K_PREAD, K_PWRITE, K_PREAD,
			K_PWRITE, K_BUFWRITE, K_BUFREAD, K_BDISCARD, K_BZEROOUT,
			K_FSYNC, K_INFO };

		op->kind = k[rnd(sizeof(k))];
		op->len = draw_len();
		op->off = draw_off(op->len);
		op->misc = rnd(256);
		if (op->kind == K_BUFWRITE || op->kind == K_BUFREAD) {
			/* whole pages: the page cache reads the rest */
			op->len = (op->len + 4095) & ~4095U;
			op->off &= ~4095ULL;
			if (op->off + op->len > reg_hi - reg_lo)
				op->off = 0;
		}
	} else if (w < 920) {
		op->kind = K_RING;
		op->ring = rnd(MAX_RINGS);
		op->aux = rnd64();
		op->misc = rnd(256);
	} else if (w < 960) {
		op->kind = K_DRAIN;
	} else {
		static const uint8_t k[] = { K_EVCACHE, K_EVCACHE, K_EVFORK,
			K_EVSUSPEND };

		op->kind = k[rnd(sizeof(k))];
		op->misc = rnd(256);
	}
}

static void op_free(struct op *op)
{
	free(op->sub);
	op->sub = NULL;
}

/* ---- ring configurations ---- */

static const char *ring_desc(unsigned int f, char *b, size_t n)
{
	snprintf(b, n, "%s%s%s%s%s%s",
		 f & IORING_SETUP_SQE128 ? "sqe128" : "sqe64",
		 f & IORING_SETUP_IOPOLL ? "+iopoll" : "",
		 f & IORING_SETUP_SQPOLL ? "+sqpoll" : "",
		 f & IORING_SETUP_SINGLE_ISSUER ? "+single" : "",
		 f & IORING_SETUP_DEFER_TASKRUN ? "+defer" : "",
		 f & IORING_SETUP_COOP_TASKRUN ? "+coop" : "");
	return b;
}

static void ring_close(struct ring *r, bool midflight)
{
	if (!r->open)
		return;
	if (!midflight)
		ring_drain(r);
	else
		ring_submit(r);
	io_uring_queue_exit(&r->r);
	r->open = false;
	ring_slots_free(r);
	r->inflight = r->pending = 0;
}

/*
 * A new configuration for ring @op->ring, drawn from @op->aux. A kernel
 * that does not know a flag refuses it: its ring is drawn again without.
 */
static void do_ring(const struct op *op, bool issue)
{
	uint64_t a = op->aux;
	unsigned int f = IORING_SETUP_SQE128, depth;
	struct ring *r = &rings[op->ring];
	bool midflight;
	char desc[80];
	int ret;

	if (!(a & 0x7))
		f = 0;				/* node commands: EINVAL */
	if ((a >> 3) % 5 < 2)
		f |= IORING_SETUP_IOPOLL;
	if ((a >> 6) % 5 == 0)
		f |= IORING_SETUP_SQPOLL;
	if ((a >> 9) % 3 == 0)
		f |= IORING_SETUP_SINGLE_ISSUER;
	if ((f & IORING_SETUP_SINGLE_ISSUER) && !(f & IORING_SETUP_SQPOLL) &&
	    (a >> 11) % 2)
		f |= IORING_SETUP_DEFER_TASKRUN;
	if ((a >> 12) % 3 == 0 && !(f & IORING_SETUP_SQPOLL))
		f |= IORING_SETUP_COOP_TASKRUN;
	depth = 4U << ((a >> 14) % 5);		/* 4 .. 64 */
	/* With reads only in flight, close the old ring mid-flight. */
	midflight = o.ev_close && (op->misc & 3) == 0;
	if (!issue)
		return;
	if (midflight && r->open) {
		unsigned int i;

		for (i = 0; i < r->depth; i++)
			if (r->s[i].busy && r->s[i].writes)
				midflight = false;
	}
	ring_close(r, midflight);
	for (;;) {
		ret = ring_open(r, f, depth, (a >> 17) % 4 == 0);
		if (!ret)
			break;
		if (ret != -EINVAL && ret != -EOPNOTSUPP && ret != -EPERM)
			die("io_uring_queue_init", -ret);
		/* drop the newest flag the kernel may not know */
		if (f & IORING_SETUP_DEFER_TASKRUN)
			f &= ~IORING_SETUP_DEFER_TASKRUN;
		else if (f & IORING_SETUP_SINGLE_ISSUER)
			f &= ~IORING_SETUP_SINGLE_ISSUER;
		else if (f & IORING_SETUP_COOP_TASKRUN)
			f &= ~IORING_SETUP_COOP_TASKRUN;
		else if (f & IORING_SETUP_SQPOLL)
			f &= ~IORING_SETUP_SQPOLL;
		else
			die("io_uring_queue_init", -ret);
	}
	r->batch = 1 + (a >> 20) % 8;
	sh->c.rings++;
	combo(K_RING, f, 0);
	logop("%" PRIu64 " ring%u %s depth %u batch %u%s%s", op->idx, op->ring,
	      ring_desc(f, desc, sizeof(desc)), depth, r->batch,
	      r->filebacked ? " file-backed" : "",
	      midflight ? " (old one closed mid-flight)" : "");
}

/* ---- one ring operation: its SQE and what its result may be ---- */

static void want(struct slot *s, int res)
{
	int i;

	for (i = 0; i < s->nres; i++)
		if (s->res[i] == res)
			return;
	/* a result the model allows but cannot hold would be a false FAIL */
	if (s->nres == MAX_RES)
		die("the model allows more results than MAX_RES", E2BIG);
	s->res[s->nres++] = res;
}

/*
 * The errno the uAPI gives a node command of @op's one fault, in the order
 * the driver checks; 1 when it has none (then the device's answer).
 */
static int node_expect(const struct op *op, const struct ring *r)
{
	bool rw = op->kind == K_NREAD || op->kind == K_NWRITE;
	bool wr = node_writes(op->kind);

	if (op->fault == F_CMDOP)
		return -ENOTTY;
	if (!r->sqe128)
		return -EINVAL;
	switch (op->fault) {
	case F_OPCODE: case F_RSVD: case F_FLAGS: case F_FIELD:
	case F_IOPRIO:
		return -EINVAL;
	case F_ZERO:
		if (!rw)
			return -EINVAL;
		break;
	case F_LBS:
		/* a 512-byte disk's range commands: a field instead */
		if (!rw && d.lbs == 512)
			return -EINVAL;
		break;
	}
	if (wr && (op->fault == F_RODESC || !d.nfd_rw))
		return -EBADF;
	if (wr && d.ro)
		return -EROFS;
	if (op->kind == K_NFLUSH || op->kind == K_NGETID)
		return 1;
	if (op->kind == K_NDISCARD && !d.max_discard)
		return -EOPNOTSUPP;
	if (op->kind == K_NWZ && !d.max_wz)
		return -EOPNOTSUPP;
	switch (op->fault) {
	case F_ZERO: case F_LBS:
		return -EINVAL;
	case F_TOOBIG:
		return d.max_bytes + d.lbs <= UINT32_MAX ? -EINVAL : -ERANGE;
	case F_RANGE:
		return -ERANGE;
	case F_BADADDR: case F_NULLADDR: case F_HOLE:
		return -EFAULT;
	case F_ROMAP:
		return op->kind == K_NREAD ? -EFAULT : 1;
	case F_UNALIGNED:
		return d.dma_align >= 8 ? -EINVAL : 1;
	}
	return 1;
}

/* The command's buffer: a slot's area, or the fault's own. */
static uint8_t *node_buf(const struct op *op, uint8_t *area)
{
	switch (op->fault) {
	case F_BADADDR:
		return (uint8_t *)(uintptr_t)0x1000;	/* never mapped */
	case F_NULLADDR:
		return NULL;
	case F_ROMAP:
		return romap;
	case F_HOLE:
		return hole + 4096 - 512;	/* its next page is not mapped */
	case F_UNALIGNED:
		return area + 8;
	}
	return area;
}

static void prep_node(struct io_uring_sqe *sqe, const struct op *op,
		      struct ring *r, struct slot *s, unsigned int slot, int e)
{
	struct vbblk_uring_cmd c = { .opcode = 0 };
	uint8_t *area = slot_area(r, slot);
	bool rw = op->kind == K_NREAD || op->kind == K_NWRITE;
	uint64_t disk_sec = (reg_lo + op->off) / 512;
	bool fixed = false;

	static const uint8_t ops[] = {
		[K_NREAD] = VBBLK_OP_READ, [K_NWRITE] = VBBLK_OP_WRITE,
		[K_NFLUSH] = VBBLK_OP_FLUSH, [K_NDISCARD] = VBBLK_OP_DISCARD,
		[K_NWZ] = VBBLK_OP_WRITE_ZEROES, [K_NGETID] = VBBLK_OP_GET_ID,
	};

	memset(sqe, 0, r->sqe128 ? 2 * sizeof(*sqe) : sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = op->fault == F_RODESC ? d.nfd_ro : d.nfd;
	sqe->cmd_op = op->fault == F_CMDOP ? VBBLK_URING_CMD_IO + 1 :
		      VBBLK_URING_CMD_IO;
	c.opcode = ops[op->kind];
	c.ioprio = op->ioprio;
	s->buf = node_buf(op, area);
	s->len = 0;
	if (rw) {
		s->len = op->len;
		c.sector = disk_sec;
		c.len = op->len;
		c.addr = (uintptr_t)s->buf;
		if (op->kind == K_NWRITE && e == 1 && op->fault != F_ROMAP)
			fill(s->buf, op->len, op->idx);
		if (op->fault == F_ROMAP)
			s->buf = romap;
		if (op->buf == B_VEC && op->fault == F_NONE) {
			/* two or three pieces, each a multiple of 512 */
			uint32_t a = 512 * (1 + op->misc % (op->len / 512));
			uint32_t rest = op->len - a;

			if (a > op->len)
				a = op->len;
			rest = op->len - a;
			s->iov[0] = (struct iovec){ s->buf, a };
			s->iov[1] = (struct iovec){ s->buf + a, rest };
			c.addr = (uintptr_t)s->iov;
			c.len = rest ? 2 : 1;
			c.flags = VBBLK_F_VEC;
		} else if (op->buf == B_FIXED && op->fault == F_NONE &&
			   r->fixed_ok) {
			fixed = true;
		}
	} else if (op->kind == K_NDISCARD || op->kind == K_NWZ) {
		s->len = op->nr * 512;
		c.sector = disk_sec;
		c.nr_sectors = op->nr;
		if (op->kind == K_NWZ && (op->misc & 1))
			c.flags = VBBLK_F_UNMAP;
	} else if (op->kind == K_NGETID) {
		memset(s->id, 0xa5, sizeof(s->id));
		c.addr = (uintptr_t)s->id;
		c.len = VBBLK_ID_BYTES;
	}
	switch (op->fault) {
	case F_OPCODE:
		c.opcode = (op->misc & 1) ? 0 : 7 + op->misc % 200;
		break;
	case F_RSVD:
		if (op->misc & 1)
			c.rsvd0 = 1 + op->misc % 255;
		else
			c.rsvd[op->misc & 2 ? 1 : 0] = 1ULL << (op->misc % 64);
		break;
	case F_FLAGS:
		c.flags |= 1U << (2 + op->misc % 30);
		break;
	case F_FIELD:
		if (rw || op->kind == K_NGETID)
			c.nr_sectors = 1 + op->misc;
		if (op->kind == K_NFLUSH)
			c.sector = 1 + op->misc;
		if (op->kind == K_NDISCARD || op->kind == K_NWZ)
			c.len = 512;
		if (op->kind == K_NGETID && (op->misc & 1)) {
			c.nr_sectors = 0;
			c.len = VBBLK_ID_BYTES + 1 + op->misc % 8;
		}
		break;
	case F_IOPRIO:
		c.ioprio = (op->misc & 1) ? IOPRIO_PRIO_VALUE(0, 1 + op->misc % 7)
					  : IOPRIO_PRIO_VALUE(4 + op->misc % 3, 0);
		break;
	case F_ZERO:
		c.len = 0;
		c.nr_sectors = 0;
		break;
	case F_LBS:
		if (d.lbs > 512 && (op->misc & 1))
			c.sector += 1;
		else if (rw)
			c.len -= op->len > 4 ? 4 : 1;
		else if (d.lbs > 512)
			c.nr_sectors += 1;
		else
			c.len = 3;	/* a field: EINVAL as well */
		break;
	case F_TOOBIG:
		/* no u32 is too big for some devices: then past the end */
		c.len = d.max_bytes + d.lbs <= UINT32_MAX ?
			(uint32_t)(d.max_bytes + d.lbs) : UINT32_MAX & ~(d.lbs - 1);
		break;
	case F_RANGE:
		c.sector = d.bytes / 512 - (op->misc & 1 ? 0 : d.lbs / 512) +
			   d.lbs / 512 * (op->misc % 4);
		if (c.sector < d.bytes / 512)
			c.sector = d.bytes / 512;
		/* past all the growth the host may give it (-R) */
		if (o.growth)
			c.sector += MAX_GROWTH / 512;
		break;
	}
	if (fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = slot;
	}
	s->cmd = c;
	s->cmd_flags = fixed;
	if (r->sqe128)
		memcpy(sqe->cmd, &c, sizeof(c));
	else
		memcpy(sqe->cmd, &c, 16);	/* the rest is the next SQE's */
}

/* A block-device read or write through the ring (O_DIRECT). */
static void prep_bdev(struct io_uring_sqe *sqe, const struct op *op,
		      struct ring *r, struct slot *s, unsigned int slot)
{
	bool wr = op->kind == K_BWRITE;
	uint8_t *area = slot_area(r, slot);
	uint64_t off = reg_lo + op->off;

	s->buf = op->fault == F_UNALIGNED ? area + 8 : area;
	s->len = op->len;
	if (wr && op->fault != F_LBS)
		fill(s->buf, op->len, op->idx);
	if (op->buf == B_FIXED && r->fixed_ok) {
		if (wr)
			io_uring_prep_write_fixed(sqe, d.bfd, s->buf, op->len, off,
						  slot);
		else
			io_uring_prep_read_fixed(sqe, d.bfd, s->buf, op->len, off,
						 slot);
	} else if (op->buf == B_VEC) {
		s->iov[0] = (struct iovec){ s->buf, op->len };
		if (wr)
			io_uring_prep_writev(sqe, d.bfd, s->iov, 1, off);
		else
			io_uring_prep_readv(sqe, d.bfd, s->iov, 1, off);
	} else {
		if (wr)
			io_uring_prep_write(sqe, d.bfd, s->buf, op->len, off);
		else
			io_uring_prep_read(sqe, d.bfd, s->buf, op->len, off);
	}
	if (op->fault == F_LBS) {
		sqe->len = op->len - 1 > 0 ? op->len - 1 : 1;
		if (op->buf == B_VEC)
			s->iov[0].iov_len = sqe->len, sqe->len = 1;
	}
	if (op->rwflags & 1)
		sqe->rw_flags |= RWF_NOWAIT;
	/*
	 * Not a polled one in request mode: 6.1's blk-mq may end it from the
	 * interrupt of a flush another request's sequence sent (the flush
	 * machinery's queue is the default map's), and then warns in
	 * bio_put() of io_uring's bio cache (block/bio.c:744): blk-mq's path.
	 */
	if (wr && (op->rwflags & 2) &&
	    !(d.blkmq && d.poll && (r->flags & IORING_SETUP_IOPOLL)))
		sqe->rw_flags |= RWF_DSYNC;
	sqe->ioprio = op->ioprio;
}

/* Where a cancel or a second look may point: a slot in flight, or none. */
static uint64_t some_inflight(struct ring *r, uint64_t pick,
			      struct slot **target)
{
	unsigned int i, n = 0;

	*target = NULL;
	for (i = 0; i < r->depth; i++)
		if (r->s[i].busy && n++ == pick % (r->inflight + 1)) {
			*target = &r->s[i];
			return r->s[i].ud;
		}
	return 0x7fffffffffffff00ULL;	/* nothing by that name */
}

/*
 * A cancel may end @t: then the links after it in its chain end with it,
 * ECANCELED (never issued).
 */
static void cancel_ok_from(struct ring *r, struct slot *t)
{
	unsigned int i;

	for (i = 0; i < r->depth; i++)
		if (r->s[i].busy && r->s[i].chain == t->chain &&
		    r->s[i].chain_pos >= t->chain_pos)
			r->s[i].canceled_ok = true;
}

/*
 * A block-device read or write over a bad sector: EIO instead of its byte
 * count (the errors before the I/O stay); beside one, in request mode,
 * EIO as well.
 */
static void bad_ring_io(struct slot *s, uint64_t off, uint32_t len, int *fails)
{
	int i, k = 0;

	if (bad_hit(off, len, s->writes)) {
		for (i = 0; i < s->nres; i++)
			if (s->res[i] != (int)len)
				s->res[k++] = s->res[i];
		s->nres = k;
		s->reads = false;
		*fails = 2;
	} else if (bad_near(off, len, s->writes) || bad_wb()) {
		*fails = *fails ? *fails : 1;
	} else {
		return;
	}
	want(s, -EIO);
	s->bad = true;
}

static unsigned int chain_pos;	/* of the op put_ring_op() puts */

/* A drained command in flight: io_uring defers what comes after it. */
static bool drain_pending(const struct ring *r)
{
	unsigned int i;

	for (i = 0; i < r->depth; i++)
		if (r->s[i].busy && (r->s[i].sqe_flags & IOSQE_IO_DRAIN))
			return true;
	return false;
}

/*
 * Put one ring operation on ring @r, in slot @si: @link if a linked one
 * follows; @prev_fails: how an earlier one of its chain ends. Returns 2
 * if its result is surely an error (the chain breaks there), 1 if it may
 * be, 0 if not.
 */
static int put_ring_op(const struct op *op, struct ring *r, unsigned int si,
		       bool link, int prev_fails)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->r);
	struct slot *s = &r->s[si];
	int e = 1, fails = 0;

	while (!sqe) {
		/* SQPOLL: its thread takes the entries when it gets to them */
		ring_submit(r);
		if (r->flags & IORING_SETUP_SQPOLL)
			io_uring_sqring_wait(&r->r);
		sqe = io_uring_get_sqe(&r->r);
		if (!sqe && !(r->flags & IORING_SETUP_SQPOLL))
			die("io_uring_get_sqe", EBUSY);
	}
	if (s->busy)
		die("a busy slot drawn for a new command", EBUSY);
	memset(s, 0, sizeof(*s));
	s->busy = true;
	s->chain = ~0ULL;	/* do_ring_ops() names its chain */
	s->idx = op->idx;
	s->kind = op->kind;
	s->fault = op->fault;
	s->ud = (ud_seq++ << 8) | si;
	switch (op->kind) {
	case K_NREAD: case K_NWRITE: case K_NFLUSH: case K_NDISCARD:
	case K_NWZ: case K_NGETID:
		e = node_expect(op, r);
		prep_node(sqe, op, r, s, si, e);
		if (e == 1 && (op->kind == K_NREAD || op->kind == K_NWRITE) &&
		    bad_hit(reg_lo + op->off, op->len, op->kind == K_NWRITE)) {
			/* passthrough: not merged, so exactly */
			want(s, -EIO);
			s->bad = true;
			s->writes = op->kind == K_NWRITE;
			fails = 2;
		} else if (e == 1) {
			want(s, op->kind == K_NREAD || op->kind == K_NWRITE ?
			     (int)op->len : op->kind == K_NGETID ?
			     VBBLK_ID_BYTES : 0);
			s->writes = node_writes(op->kind);
			s->reads = op->kind == K_NREAD;
		} else {
			want(s, e);
			fails = 2;
		}
		sh->c.node++;
		break;
	case K_BREAD:
	case K_BWRITE:
		prep_bdev(sqe, op, r, s, si);
		if (op->kind == K_BWRITE && d.ro) {
			want(s, -EBADF);	/* opened read-only: see setup */
			fails = 2;
		} else if (op->fault == F_LBS) {
			want(s, -EINVAL);
			if ((r->flags & IORING_SETUP_IOPOLL) && !d.poll)
				want(s, -EOPNOTSUPP);
			/*
			 * RWF_NOWAIT is refused before the alignment when the
			 * page cache holds the range (buffered I/O before)
			 */
			if (op->rwflags & 1)
				want(s, -EAGAIN);
			/* 6.1 breaks no link on a failed polled read or write */
			fails = r->flags & IORING_SETUP_IOPOLL ? 1 : 2;
		} else {
			want(s, op->len);
			s->writes = op->kind == K_BWRITE;
			s->reads = !s->writes;
			/* 6.1 refuses a buffer 8 bytes off; 7.2 takes it */
			if (op->fault == F_UNALIGNED) {
				want(s, -EINVAL);
				fails = 1;
			}
			if (op->rwflags & 1) {
				want(s, -EAGAIN);
				fails = 1;
			}
			/* newer kernels refuse a polled bio where none polls */
			if ((r->flags & IORING_SETUP_IOPOLL) && !d.poll) {
				want(s, -EOPNOTSUPP);
				fails = 1;
			}
			bad_ring_io(s, reg_lo + op->off, op->len, &fails);
		}
		sh->c.block++;
		break;
	case K_NOP:
		io_uring_prep_nop(sqe);
		want(s, 0);
		break;
	case K_TIMEOUT:
		s->ts.tv_nsec = 1000000;
		io_uring_prep_timeout(sqe, &s->ts, 0, 0);
		want(s, -ETIME);
		want(s, 0);
		fails = 2;
		break;
	case K_CANCEL: {
		struct slot *t;
		uint64_t ud = some_inflight(r, op->aux, &t);

		io_uring_prep_cancel64(sqe, ud, 0);
		want(s, 0);
		want(s, -ENOENT);
		want(s, -EALREADY);
		if (t)
			cancel_ok_from(r, t);
		fails = 1;
		break;
	}
	}
	/* 6.1 refuses what cannot be polled on an IOPOLL ring */
	if ((op->kind == K_TIMEOUT || op->kind == K_CANCEL) &&
	    (r->flags & IORING_SETUP_IOPOLL)) {
		want(s, -EINVAL);
		fails = 2;
	}
	if (prev_fails == 2) {
		/* the chain broke before it: never issued */
		s->nres = 0;
		want(s, -ECANCELED);
		s->writes = s->reads = false;
		fails = 2;
	} else if (prev_fails == 1) {
		want(s, -ECANCELED);
		fails = fails ? fails : 1;
	}
	s->off = reg_lo + op->off;
	io_uring_sqe_set_data64(sqe, s->ud);
	/*
	 * 6.1's io_do_iopoll() posts without queueing what a drain held back:
	 * a drained command behind polled ones waits for ever (stock too).
	 */
	sqe->flags |= op->sqflags & ~(o.no_drain ||
				      (r->flags & IORING_SETUP_IOPOLL) ?
				      IOSQE_IO_DRAIN : 0);
	if (link)
		sqe->flags |= IOSQE_IO_LINK;
	/*
	 * -x late: a node command that io_uring issues after its SQE slot may
	 * have been refilled (a link after the first; a drained one, and any
	 * submitted while a drain is pending, which io_uring defers) goes by
	 * io-wq, whose SQE io_uring copies at prep. 6.11-6.13 copy a
	 * passthrough SQE only then (upstream copies every one at prep from
	 * 6.14): the others read the slot when they are issued.
	 */
	if (o.no_late && op->kind <= K_NGETID &&
	    (chain_pos || (sqe->flags & IOSQE_IO_DRAIN) || drain_pending(r)))
		sqe->flags |= IOSQE_ASYNC;
	s->sqe_flags = sqe->flags;
	if (op->kind != K_NOP && op->kind != K_TIMEOUT && op->kind != K_CANCEL)
		combo(op->kind, r->flags, op->fault);
	r->inflight++;
	r->pending++;
	return fails;
}

/* A slot for each of @n operations on @r, waiting for completions. */
static void room(struct ring *r, unsigned int n)
{
	while (r->depth - r->inflight < n)
		ring_reap(r, true);
}

static void ensure_ring(uint8_t ri)
{
	if (!rings[ri].open) {
		struct op op = { .kind = K_RING, .ring = ri, .aux = 0x1 };

		do_ring(&op, true);
	}
}

static void op_range(const struct op *op, uint64_t *off, uint32_t *len,
		     bool *writes)
{
	*off = reg_lo + op->off;
	*len = op->kind == K_NDISCARD || op->kind == K_NWZ ? op->nr * 512 :
	       op->len;
	*writes = op->kind == K_NWRITE || op->kind == K_NDISCARD ||
		  op->kind == K_NWZ || op->kind == K_BWRITE;
	if (op->kind == K_NFLUSH || op->kind == K_NGETID || op->kind == K_NOP ||
	    op->kind == K_TIMEOUT || op->kind == K_CANCEL)
		*len = 0;
}

static void do_ring_ops(const struct op *ops, int n, uint8_t ri)
{
	struct ring *r;
	int i, prev = 0;

	if (nrings <= ri)
		ri = 0;
	ensure_ring(ri);
	r = &rings[ri];
	for (i = 0; i < n; i++) {
		uint64_t off;
		uint32_t len;
		bool w;

		op_range(&ops[i], &off, &len, &w);
		if (len)
			wait_clear(off, len, w);
	}
	room(r, n);
	/*
	 * A chain goes into one submission: put_ring_op() submitting on a
	 * full SQ ring would end it early (an SQPOLL thread leaves entries
	 * there a while), and the links after would run.
	 */
	while (n > 1 && io_uring_sq_space_left(&r->r) < (unsigned int)n) {
		ring_submit(r);
		if (!(r->flags & IORING_SETUP_SQPOLL))
			break;
		io_uring_sqring_wait(&r->r);
	}
	for (i = 0; i < n; i++) {
		int si = ring_free_slot(r);
		int f;

		logop("%" PRIu64 " ring%u %s%s%s off %" PRIu64 " len %u%s%s%s%s",
		      ops[i].idx, ri, kname[ops[i].kind],
		      ops[i].fault ? " fault=" : "", fname[ops[i].fault],
		      reg_lo + ops[i].off, ops[i].len,
		      ops[i].buf == B_FIXED ? " fixed" :
		      ops[i].buf == B_VEC ? " vec" : "",
		      ops[i].sqflags & IOSQE_ASYNC ? " async" : "",
		      (ops[i].kind == K_BREAD || ops[i].kind == K_BWRITE) &&
		      (ops[i].rwflags & 1) ? " nowait" : "",
		      i + 1 < n ? " link" : "");
		chain_pos = i;
		f = put_ring_op(&ops[i], r, si, i + 1 < n, prev);
		chain_pos = 0;
		r->s[si].chain = ops[0].idx;
		r->s[si].chain_pos = i;
		/*
		 * A link's later ops are cancelled after an error; on an IOPOLL
		 * ring 6.1 lets some run on after a polled one failed.
		 */
		if (f == 2 && (r->flags & IORING_SETUP_IOPOLL))
			f = 1;
		if (f > prev)
			prev = f;
	}
	if (r->pending >= r->batch || n > 1)
		ring_submit(r);
	reap_all(false);
}

/* ---- system calls on the block device ---- */

static uint8_t *sys_buf(void)
{
	static uint8_t *buf;

	if (!buf && posix_memalign((void **)&buf, 4096, SLOT_BYTES + 4096))
		die("posix_memalign", ENOMEM);
	return buf;
}

/*
 * One in eight O_DIRECT preads and pwrites goes by SG_IO instead:
 * READ(16) or WRITE(16) (FUA drawn), one in four of them from a child
 * without privileges on the same descriptor, which vbblk lets send them
 * as the kernel's scsi_cmd_allowed() would (WRITE on a writable open
 * only). The buffer is shared with that child.
 */
static bool sg_path(const struct op *op)
{
	return (op->misc & 0x07) == 0x07;
}

static bool sg_unpriv(const struct op *op)
{
	return (op->misc & 0x30) == 0x30;
}

static uint8_t *sg_buf(void)
{
	static uint8_t *buf;

	if (!buf) {
		buf = mmap(NULL, SLOT_BYTES + 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			die("mmap", errno);
	}
	return buf;
}

/* 0, -errno from the ioctl, or 1 with @why: the command failed. */
static int sg_rw(const struct op *op, bool write, uint64_t off, uint32_t len,
		 uint8_t *buf, char *why, size_t n)
{
	bool unpriv = sg_unpriv(op);
	uint64_t lba = off / d.lbs;
	uint32_t nb = len / d.lbs;
	uint8_t cdb[16] = { write ? 0x8a : 0x88 }, sense[32];
	struct sg_io_hdr h = {
		.interface_id = 'S', .cmd_len = sizeof(cdb),
		.mx_sb_len = sizeof(sense), .dxfer_len = len, .dxferp = buf,
		.cmdp = cdb, .sbp = sense, .timeout = 60000,
		.dxfer_direction = write ? SG_DXFER_TO_DEV : SG_DXFER_FROM_DEV,
	};
	int i, st, rc = 0;
	pid_t p = 0;

	for (i = 0; i < 8; i++)
		cdb[2 + i] = lba >> (56 - 8 * i);
	for (i = 0; i < 4; i++)
		cdb[10 + i] = nb >> (24 - 8 * i);
	if (op->misc & 0x40)
		cdb[1] |= 0x08;		/* FUA */
	sh->c.sgio++;
	combo(op->kind, 0x8000, unpriv);
	if (unpriv) {
		p = fork();
		if (p < 0)
			die("fork", errno);
		if (p) {
			if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st))
				die("waitpid", ECHILD);
			st = WEXITSTATUS(st);
			rc = st >= 100 ? -(st - 100) : st;
			if (rc == 1)
				snprintf(why, n, "SCSI status failed (unprivileged)");
			return rc;
		}
		if (setgid(65534) || setuid(65534))
			_exit(100 + errno);
	}
	if (ioctl(d.bfd, SG_IO, &h))
		rc = -errno;
	else if ((h.info & SG_INFO_OK_MASK) != SG_INFO_OK || h.status ||
		 h.host_status || h.driver_status || h.resid) {
		snprintf(why, n, "status 0x%x host 0x%x driver 0x%x resid %d "
			 "sense %02x %02x %02x %02x", h.status, h.host_status,
			 h.driver_status, h.resid, sense[0], sense[1], sense[2],
			 sense[3]);
		rc = 1;
	}
	if (unpriv)
		_exit(rc < 0 ? 100 - rc : rc);
	return rc;
}

static void do_sg(const struct op *op, uint64_t off, uint32_t len)
{
	bool write = op->kind == K_PWRITE;
	uint8_t *buf = sg_buf();
	char why[160] = "";
	int rc;

	logop("%" PRIu64 " sg_io %s off %" PRIu64 " len %u%s%s", op->idx,
	      write ? "write(16)" : "read(16)", off, len,
	      op->misc & 0x40 ? " fua" : "",
	      sg_unpriv(op) ? " unprivileged" : "");
	if (write)
		fill(buf, len, op->idx);
	rc = sg_rw(op, write, off, len, buf, why, sizeof(why));
	if (d.sg_max >= 0 && len > (uint32_t)d.sg_max) {
		/* longer than SG_IO takes: refused, nothing moved */
		if (rc != -EINVAL && !(write && d.ro && rc == -EPERM))
			failf(op->idx, "SG_IO of %u bytes, above its %d: %s, not "
			      "EINVAL", len, d.sg_max, rc < 0 ? strerror(-rc) :
			      rc ? why : "done");
	} else if (write && d.ro) {
		/* opened read-only (see setup): refused before the device */
		if (rc != -EPERM)
			failf(op->idx, "SG_IO WRITE(16) on a read-only open: %s, "
			      "not EPERM", rc < 0 ? strerror(-rc) :
			      rc ? why : "done");
	} else if (bad_hit(off, len, write)) {
		/* passthrough: exactly where the device fails it */
		sh->c.eio += rc == 1;
		if (rc != 1)
			failf(op->idx, "SG_IO %s over a bad sector at %" PRIu64
			      ": %s, not a failed SCSI status",
			      write ? "WRITE(16)" : "READ(16)", off,
			      rc < 0 ? strerror(-rc) : "done");
		if (write)
			model_forget(off, len);
	} else if (rc) {
		failf(op->idx, "SG_IO %s of %u bytes at %" PRIu64 " (buffer %p; "
		      "SG_IO's largest %d, max_segments %u): %s",
		      write ? "WRITE(16)" : "READ(16)", len, off, buf, d.sg_max,
		      d.max_segs, rc < 0 ? strerror(-rc) : why);
		if (write)
			model_forget(off, len);
	} else if (write) {
		model_set(off, buf, len);
	} else {
		model_check(op->idx, off, buf, len);
	}
}

/*
 * An O_DIRECT pread or pwrite (@n its return, errno as it left it) over
 * or beside a bad sector, or caught by a failed writeback's flag: judged
 * here, true. It must fail with EIO over one; a failed write is forgotten.
 */
static bool bad_sys(uint64_t idx, uint64_t off, uint32_t len, bool write,
		    ssize_t n)
{
	int err = n < 0 ? errno : 0;

	if (!bad_hit(off, len, write) &&
	    !(err == EIO && (bad_near(off, len, write) || bad_wb())))
		return false;
	sh->c.eio += err == EIO;
	if (err != EIO)
		failf(idx, "O_DIRECT %s over a bad sector: %zd (%s), not EIO",
		      write ? "pwrite" : "pread", n,
		      err ? strerror(err) : write ? "done" : "data");
	if (write)
		model_forget(off, len);
	return true;
}

static void do_sys(const struct op *op)
{
	uint64_t off = reg_lo + op->off, range[2];
	uint32_t len = op->len;
	uint8_t *buf;
	ssize_t n;
	int ret;

	logop("%" PRIu64 " %s off %" PRIu64 " len %u", op->idx,
	      kname[op->kind], off, len);
	sh->c.block++;
	combo(op->kind, 0, 0);
	buf = sys_buf();
	if (op->kind == K_FSYNC || op->kind == K_INFO) {
		/* everything in flight may still write: fine, it is ours */
		if (op->kind == K_FSYNC) {
			drain_polled();
			if (fdatasync(d.bfd_buf) && !(errno == EIO && bad_theirs()))
				failf(op->idx, "fdatasync: %s", strerror(errno));
		} else {
			uint64_t sz = 0;
			int ssz = 0;

			/* the host may grow it meanwhile (-R) */
			uint64_t s0 = sysfs_u64("size", 0) * 512, s1;

			if (ioctl(d.bfd, BLKGETSIZE64, &sz))
				sz = 0;
			s1 = sysfs_u64("size", 0) * 512;
			if (sz != s0 && sz != s1)
				failf(op->idx, "BLKGETSIZE64 %" PRIu64 ", sysfs %"
				      PRIu64 " before, %" PRIu64 " after", sz,
				      s0, s1);
			if (ioctl(d.bfd, BLKSSZGET, &ssz) || (uint32_t)ssz != d.lbs)
				failf(op->idx, "BLKSSZGET %d, sysfs %u", ssz, d.lbs);
		}
		return;
	}
	wait_clear(off, len, op->kind != K_PREAD && op->kind != K_BUFREAD);
	if ((op->kind == K_PREAD || op->kind == K_PWRITE) && sg_path(op)) {
		do_sg(op, off, len);
		return;
	}
	switch (op->kind) {
	case K_PREAD:
		n = pread(d.bfd, buf, len, off);
		if (bad_sys(op->idx, off, len, false, n))
			break;
		if (n != (ssize_t)len)
			failf(op->idx, "O_DIRECT pread: %zd of %u (%s)", n, len,
			      n < 0 ? strerror(errno) : "short");
		else
			model_check(op->idx, off, buf, len);
		break;
	case K_PWRITE:
		fill(buf, len, op->idx);
		n = pwrite(d.bfd, buf, len, off);
		if (d.ro) {
			if (n >= 0)
				failf(op->idx, "a write to a read-only disk succeeded");
		} else if (bad_sys(op->idx, off, len, true, n)) {
			/* judged there */
		} else if (n != (ssize_t)len) {
			failf(op->idx, "O_DIRECT pwrite: %zd of %u (%s)", n, len,
			      n < 0 ? strerror(errno) : "short");
			model_forget(off, len);
		} else {
			model_set(off, buf, len);
		}
		break;
	case K_BUFWRITE:
	case K_BUFREAD:
		if (d.ro && op->kind == K_BUFWRITE)
			break;
		drain_polled();
		if (op->kind == K_BUFWRITE) {
			fill(buf, len, op->idx);
			n = pwrite(d.bfd_buf, buf, len, off);
			if (n == (ssize_t)len && fdatasync(d.bfd_buf))
				n = -1;
		} else {
			n = pread(d.bfd_buf, buf, len, off);
		}
		ret = n < 0 ? errno : 0;
		/* nothing of it stays cached: the node bypasses the cache */
		if (ioctl(d.bfd_buf, BLKFLSBUF, 0))
			failf(op->idx, "BLKFLSBUF: %s", strerror(errno));
		errno = ret;
		if (n != (ssize_t)len &&
		    (bad_near(off, len, op->kind == K_BUFWRITE) ||
		     (op->kind == K_BUFWRITE && errno == EIO && bad_theirs()))) {
			/*
			 * The page cache reads up to the bad page (a short
			 * count) or fails; a write's writeback fails whole.
			 */
			sh->c.eio++;
			if (op->kind == K_BUFWRITE || n < 0)
				model_forget(off, len);
			else
				model_check(op->idx, off, buf, n & ~4095L);
			if (n < 0 && errno != EIO)
				failf(op->idx, "buffered %s over a bad sector: %s",
				      op->kind == K_BUFWRITE ? "write" : "read",
				      strerror(errno));
		} else if (n == (ssize_t)len &&
			   bad_hit(off, len, op->kind == K_BUFWRITE)) {
			failf(op->idx, "buffered %s over a bad sector succeeded",
			      op->kind == K_BUFWRITE ? "write" : "read");
			model_forget(off, len);
		} else if (n != (ssize_t)len) {
			failf(op->idx, "buffered %s: %zd of %u (%s)",
			      op->kind == K_BUFWRITE ? "write" : "read", n, len,
			      n < 0 ? strerror(errno) : "short");
			model_forget(off, len);
		} else if (op->kind == K_BUFWRITE) {
			model_set(off, buf, len);
		} else {
			model_check(op->idx, off, buf, len);
		}
		break;
	case K_BDISCARD:
	case K_BZEROOUT:
		range[0] = off;
		range[1] = len;
		ret = ioctl(d.bfd, op->kind == K_BDISCARD ? BLKDISCARD : BLKZEROOUT,
			    range);
		if (d.ro) {
			if (!ret)
				failf(op->idx, "%s on a read-only disk succeeded",
				      kname[op->kind]);
		} else if (op->kind == K_BDISCARD) {
			if (ret && !(errno == EOPNOTSUPP && !d.max_discard))
				failf(op->idx, "BLKDISCARD: %s", strerror(errno));
			if (!ret)
				model_forget(off, len);
		} else {
			/* without WRITE ZEROES the kernel writes zeroed pages */
			if (ret && !(errno == EIO && bad_near(off, len, true)))
				failf(op->idx, "BLKZEROOUT: %s", strerror(errno));
			if (ret)
				model_forget(off, len);
			else
				model_zero(off, len);
		}
		break;
	}
	sh->beat++;
}

/* ---- events, carried out by a second process ---- */

static pid_t evpid = -1;
static unsigned int suspends;

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int read_str(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	ssize_t k;

	if (fd < 0)
		return -errno;
	k = read(fd, buf, n - 1);
	close(fd);
	if (k < 0)
		return -errno;
	buf[k] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/*
 * The writable knobs a user may turn while I/O runs: the disk's queue
 * attributes and vbblk's writable parameters. Each gets a valid value,
 * which must be taken and read back as written, or garbage, which must be
 * refused with EINVAL and change nothing. The I/O around them goes on
 * being checked against the model (nomerges=2 ends batching's merges).
 * max_sectors_kb moves between the device's maximum and the largest I/O
 * drawn ("cap"): below that, a polled bio would need a split, which the
 * block layer ends with EAGAIN (REQ_NOWAIT, set on every polled async
 * bio), and io_uring reissues it from io-wq for ever (6.1; found here with
 * max_sectors_kb=4). Changing it under I/O is what counts: limits, freeze.
 */
static const struct knob {
	const char *attr;	/* under /sys/block/<disk>/, or absolute */
	const char *vals[4];	/* valid; "max": max_hw_sectors_kb, "cap": see above */
} knobs[] = {
	{ "queue/max_sectors_kb", { "cap", "max", "cap", "max" } },
	{ "queue/nomerges", { "0", "1", "2", "0" } },
	{ "queue/rq_affinity", { "0", "1", "2", "1" } },
	{ "queue/read_ahead_kb", { "0", "128", "1024", "128" } },
	{ "queue/iostats", { "0", "1", "1", "1" } },
	{ "queue/add_random", { "0", "1", "0", "0" } },
	{ "/sys/module/vbblk/parameters/batch", { "0", "1", "1", "1" } },
	{ "/sys/module/vbblk/parameters/remove_timeout",
	  { "0", "10", "86400", "30" } },
};

static void knob_event(unsigned int arg, uint64_t n)
{
	const struct knob *k = &knobs[(arg ^ n * 5) % ARRAY_SIZE(knobs)];
	unsigned int v = (arg >> 3) % 5;	/* 4: garbage */
	char path[128], before[64], after[64], val[32];
	int rc;

	if (k->attr[0] == '/')
		snprintf(path, sizeof(path), "%s", k->attr);
	else
		snprintf(path, sizeof(path), "/sys/block/%s/%s", d.name, k->attr);
	if (read_str(path, before, sizeof(before)))
		return;		/* not on this kernel, or this disk */
	sh->c.knobs++;
	if (v == 4)
		snprintf(val, sizeof(val), "%s", (arg & 4) ? "x" : "-1x");
	else if (!strcmp(k->vals[v], "max"))
		snprintf(val, sizeof(val), "%" PRIu64, d.max_bytes / 1024);
	else if (!strcmp(k->vals[v], "cap"))
		snprintf(val, sizeof(val), "%" PRIu64,
			 MIN((uint64_t)(len_cap() + 4095) / 4096 * 4,
			     d.max_bytes / 1024));
	else
		snprintf(val, sizeof(val), "%s", k->vals[v]);
	rc = write_str(path, val);
	if (read_str(path, after, sizeof(after)))
		after[0] = 0;
	logop("knob %s: '%s' -> '%s' (%d)", k->attr, before, val, rc);
	if (v == 4 && rc != -EINVAL)
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "%s: garbage '%s' got %s, not EINVAL", path, val,
			 rc ? strerror(-rc) : "taken");
	else if (v == 4 && strcmp(before, after))
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "%s: refused '%s' but moved from %s to %s", path, val,
			 before, after);
	else if (v < 4 && rc)
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "%s: valid '%s' refused: %s", path, val, strerror(-rc));
	else if (v < 4 && strcmp(val, after) &&
		 !(!strcmp(after, "Y") && !strcmp(val, "1")) &&
		 !(!strcmp(after, "N") && !strcmp(val, "0")))
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "%s: stored '%s', reads back '%s'", path, val, after);
}

/*
 * A request to the test harness on the host (tests/guest/lib.sh's
 * hostcmd: /host/req/N.req, answered in N.resp, "OK" first). 0 if done.
 */
static int host_req(const char *req, unsigned int secs)
{
	static unsigned int seq = 50000;	/* beside the shell's numbers */
	char tmp[64], path[64], resp[512];
	unsigned int i;
	FILE *f;

	seq++;
	snprintf(tmp, sizeof(tmp), "/host/req/%05u.tmp", seq);
	snprintf(path, sizeof(path), "/host/req/%05u.req", seq);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", req);
	fclose(f);
	if (rename(tmp, path))
		return -errno;
	snprintf(path, sizeof(path), "/host/req/%05u.resp", seq);
	for (i = 0; i < secs * 10; i++) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			ssize_t k = read(fd, resp, sizeof(resp) - 1);

			close(fd);
			resp[k > 0 ? k : 0] = 0;
			/* a QMP command's answer follows "OK": its error too */
			return strncmp(resp, "OK", 2) || strstr(resp, "\"error\"") ?
			       -EIO : 0;
		}
		usleep(100000);
	}
	return -ETIMEDOUT;
}

/*
 * The host grows the disk by 1-4 MiB (16 MiB at most in a run), under
 * the I/O: the guest must see the new size within 30 s, and nothing else
 * changes (the model's region is the disk's first size).
 */
static void resize_event(unsigned int arg)
{
	static uint64_t grown;
	uint64_t cur = sysfs_u64("size", 0) * 512, add = (1 + arg % 4) << 20;
	char req[96];
	unsigned int i;
	int rc;

	if (grown + add > MAX_GROWTH)
		return;
	grown += add;
	snprintf(req, sizeof(req), "resize %s %" PRIu64, o.resize_node,
		 cur + add);
	logop("resize %s to %" PRIu64, o.resize_node, cur + add);
	rc = host_req(req, 30);
	if (rc) {
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "host block_resize to %" PRIu64 ": %s", cur + add,
			 strerror(-rc));
		return;
	}
	for (i = 0; i < 300; i++) {
		if (sysfs_u64("size", 0) * 512 == cur + add) {
			sh->c.resizes++;
			return;
		}
		usleep(100000);
	}
	snprintf(sh->event_msg, sizeof(sh->event_msg),
		 "the host grew the disk to %" PRIu64 " bytes; after 30 s the "
		 "guest says %" PRIu64, cur + add, sysfs_u64("size", 0) * 512);
}

/*
 * The device stops answering for 2-6 s: QEMU throttles the disk to one
 * request a second, then lets go. What was in flight and what comes
 * meanwhile waits (full rings, deferred and parked commands) and must all
 * end as modelled, within the stall bound.
 */
#define MAX_STALLS	3

static void stall_event(unsigned int arg)
{
	static unsigned int stalls;
	static const char fmt[] = "qmp block_set_io_throttle {\"id\": "
		"\"/machine/peripheral/%s/virtio-backend\", \"bps\": 0, "
		"\"bps_rd\": 0, \"bps_wr\": 0, \"iops\": %u, \"iops_rd\": 0, "
		"\"iops_wr\": 0}";
	unsigned int secs = 2 + arg % 5;
	char req[320];
	int rc;

	if (stalls == MAX_STALLS)
		return;
	stalls++;
	logop("stall %s for %us", o.resize_node, secs);
	snprintf(req, sizeof(req), fmt, o.resize_node, 1);
	rc = host_req(req, 30);
	if (!rc) {
		sleep(secs);
		snprintf(req, sizeof(req), fmt, o.resize_node, 0);
		rc = host_req(req, 30);
	}
	if (rc)
		snprintf(sh->event_msg, sizeof(sh->event_msg),
			 "host block_set_io_throttle on %s: %s", o.resize_node,
			 strerror(-rc));
	else
		sh->c.stalls++;
}

static void event_loop(void)
{
	uint64_t seen = 0;
	char path[128];

	for (;;) {
		int rc = 0;

		while (sh->event_req == seen) {
			if (getppid() == 1)
				_exit(0);
			usleep(1000);
		}
		seen = sh->event_req;
		/* this process's copy of the disk: the name is the worker's */
		snprintf(d.name, sizeof(d.name), "%s", sh->disk);
		snprintf(path, sizeof(path), "/sys/block/%s/cache_type", d.name);
		switch (sh->event_kind) {
		case K_EVCACHE:
			/* one in four is another knob, one in four a resize */
			if ((sh->event_arg & 0xc0) == 0xc0 && o.knobs) {
				knob_event(sh->event_arg, seen);
				break;
			}
			if ((sh->event_arg & 0xc0) == 0x80 && o.resize_node) {
				/* half of them the device stops a while */
				if (sh->event_arg & 0x20)
					stall_event(sh->event_arg);
				else
					resize_event(sh->event_arg);
				break;
			}
			/* the device may refuse one: only the store's end counts */
			write_str(path, seen & 1 ? "write through" : "write back");
			break;
		case K_EVSUSPEND:
			rc = write_str("/sys/power/pm_test", "devices");
			if (!rc)
				rc = write_str("/sys/power/state", "freeze");
			break;
		case K_EVUNBIND:
		case K_EVBIND:
			rc = write_str(sh->event_kind == K_EVUNBIND ?
				       "/sys/bus/virtio/drivers/vbblk/unbind" :
				       "/sys/bus/virtio/drivers/vbblk/bind",
				       d.vdev);
			break;
		}
		sh->event_rc = rc;
		sh->event_done = seen;
	}
}

static void event_wait(void)
{
	while (sh->event_done != sh->event_req) {
		/* what the event waits for may need our polling */
		reap_all(false);
		usleep(200);
	}
	if (sh->event_msg[0]) {
		failf(sh->event_idx, "%s", sh->event_msg);
		sh->event_msg[0] = 0;
	}
}

/*
 * Before a held suspend: four O_DIRECT reads of the block device on each
 * IOPOLL ring (ring 0 made one if there is none), polled I/O for the
 * freeze to find in flight; before a held unbind (@node), six reads of
 * the node, the last one from io-wq (IOSQE_ASYNC), which may have to wait
 * for a free command. Drawn from nothing, so a seed's later operations
 * stay where they were.
 */
static void held_reads(uint64_t idx, bool node)
{
	unsigned int i, k;
	bool iopoll = false;

	for (i = 0; i < nrings; i++)
		iopoll |= rings[i].open &&
			  (rings[i].flags & IORING_SETUP_IOPOLL);
	if (!iopoll) {
		/* ring 0 becomes sqe128+iopoll+single+coop, depth 16 */
		struct op rop = { .idx = idx, .kind = K_RING, .ring = 0,
				  .aux = 0x30001, .misc = 1 };

		do_ring(&rop, true);
	}
	for (i = 0; i < nrings; i++) {
		struct ring *r = &rings[i];

		if (!r->open || !(r->flags & IORING_SETUP_IOPOLL))
			continue;
		/* no more than the ring holds: room() waits for that */
		unsigned int n = MIN(node ? 6U : 4U, r->depth);

		wait_clear(reg_lo, n * 4096, false);
		room(r, n);
		for (k = 0; k < n; k++) {
			struct op rd = { .idx = idx, .kind = K_BREAD,
					 .off = k * 4096, .len = 4096 };

			if (node) {
				rd.kind = K_NREAD;
				rd.sqflags = k == n - 1 ? IOSQE_ASYNC : 0;
			}
			put_ring_op(&rd, r, ring_free_slot(r), false, 0);
		}
	}
}

/* Unbinds a run makes at most (each a probe of its own): -E unbind */
#define MAX_UNBINDS	4
static unsigned int unbinds;

/*
 * An event for the second process to carry out, waited for here: reaping
 * meanwhile, or (!@reap, held) asleep, as a user's task that does not poll.
 */
static int event_sync(const struct op *op, int kind, bool reap)
{
	sh->event_kind = kind;
	sh->event_arg = op->misc;
	sh->event_idx = op->idx;
	sh->event_req++;
	if (reap)
		event_wait();
	while (sh->event_done != sh->event_req)
		usleep(1000);
	return sh->event_rc;
}

/* The disk's descriptors opened again, onto the same numbers. */
static void reopen_fd(int fd, const char *path, int flags)
{
	int nfd = open(path, flags);

	if (nfd < 0 || dup2(nfd, fd) < 0)
		die(path, errno);
	close(nfd);
}

/*
 * After a bind: the disk the virtio device has now (the same name, unless
 * another disk took it meanwhile), its block device and node opened again
 * within 30 s.
 */
static bool rebind_wait(uint64_t idx)
{
	char path[160], bpath[64], npath[64];
	unsigned int i;

	snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/block", d.vdev);
	for (i = 0; i < 300; i++, usleep(100000)) {
		DIR *dir = opendir(path);
		struct dirent *de;
		char name[32] = "";

		while (dir && (de = readdir(dir)))
			if (de->d_name[0] != '.')
				snprintf(name, sizeof(name), "%.31s", de->d_name);
		if (dir)
			closedir(dir);
		if (!name[0])
			continue;
		snprintf(bpath, sizeof(bpath), "/dev/%s", name);
		snprintf(npath, sizeof(npath), "/dev/vbblk/%s", name);
		if (access(bpath, F_OK) || access(npath, F_OK))
			continue;
		if (strcmp(name, d.name))
			logop("%" PRIu64 " the disk is %s now", idx, name);
		snprintf(d.name, sizeof(d.name), "%s", name);
		snprintf(sh->disk, sizeof(sh->disk), "%s", name);
		reopen_fd(d.nfd, npath, d.nfd_rw ? O_RDWR : O_RDONLY);
		reopen_fd(d.nfd_ro, npath, O_RDONLY);
		reopen_fd(d.bfd, bpath, (d.ro ? O_RDONLY : O_RDWR) | O_DIRECT);
		reopen_fd(d.bfd_buf, bpath, d.ro ? O_RDONLY : O_RDWR);
		posix_fadvise(d.bfd_buf, 0, 0, POSIX_FADV_RANDOM);
		return true;
	}
	return false;
}

/*
 * Unbind with every ring's commands submitted and in flight, then bind;
 * half the time held: this process does not reap until the unbind is done.
 * Each in-flight command ends with its result or the unbind's errno; the
 * descriptors held across it are dead (a node command gets ENODEV, the
 * block device no data); the rings live on, and once the driver has the
 * device again the descriptors are opened onto the same numbers, so the
 * rings' later commands go to the new disk. The model: what completed
 * before stays, a write that failed is forgotten.
 */
static void do_unbind(const struct op *op)
{
	unsigned int i, k;
	uint8_t *buf = sys_buf();
	ssize_t n;
	int rc;

	unbinds++;
	sh->c.unbinds++;
	logop("%" PRIu64 " unbind %s (%s)", op->idx, d.vdev, d.name);
	if (op->misc & 1)
		held_reads(op->idx, true);
	for (i = 0; i < nrings; i++) {
		struct ring *r = &rings[i];

		if (!r->open)
			continue;
		if (op->misc & 1)
			ring_submit_nopoll(r);
		else
			ring_submit(r);
		for (k = 0; k < r->depth; k++)
			if (r->s[k].busy)
				r->s[k].gone_ok = true;
	}
	/*
	 * Held: this process sleeps through the unbind without reaping (a
	 * user's task busy elsewhere, its polled commands complete and
	 * unreaped): the removal's drain must reap them.
	 */
	sh->c.held += op->misc & 1;
	rc = event_sync(op, K_EVUNBIND, !(op->misc & 1));
	if (rc) {
		failf(op->idx, "unbind of %s: %s", d.vdev, strerror(-rc));
		return;
	}
	drain_all();
	/* the dead descriptors: a node READ per SQE128 ring, a pread */
	for (i = 0; i < nrings; i++) {
		struct ring *r = &rings[i];
		struct op rd = { .idx = op->idx, .kind = K_NREAD, .len = 4096 };
		int si;

		if (!r->open || !r->sqe128)
			continue;
		si = ring_free_slot(r);
		put_ring_op(&rd, r, si, false, 0);
		r->s[si].nres = 0;
		r->s[si].reads = false;
		want(&r->s[si], -ENODEV);
		ring_drain(r);
	}
	n = pread(d.bfd, buf, 4096, reg_lo);
	/* 6.6+ sets a gone disk's size to 0: nothing to read, not an error */
	if (n > 0 || (n < 0 && errno != EIO && errno != ENXIO && errno != ENODEV))
		failf(op->idx, "O_DIRECT pread of the unbound disk: %zd (%s)", n,
		      n < 0 ? strerror(errno) : "data");
	logop("%" PRIu64 " bind %s", op->idx, d.vdev);
	rc = event_sync(op, K_EVBIND, true);
	if (rc) {
		failf(op->idx, "bind of %s: %s", d.vdev, strerror(-rc));
		die("bind", -rc);
	}
	if (!rebind_wait(op->idx)) {
		failf(op->idx, "bound again, %s has no disk, or no node, after "
		      "30 s", d.vdev);
		die("bind", ENODEV);
	}
}

static void do_event(const struct op *op)
{
	logop("%" PRIu64 " %s", op->idx, kname[op->kind]);
	sh->c.events++;
	combo(op->kind, 0, 0);
	switch (op->kind) {
	case K_EVCACHE:
	case K_EVSUSPEND:
		event_wait();
		if (sh->event_rc && sh->event_kind == K_EVSUSPEND)
			failf(op->idx, "the suspend before (pm_test=devices): %s",
			      strerror(-sh->event_rc));
		if (op->kind == K_EVSUSPEND) {
			suspends++;
			sh->c.suspends++;
		}
		/* one in four cache events an unbind, where asked for */
		if (op->kind == K_EVCACHE && (op->misc & 0xc0) == 0x40 &&
		    o.ev_unbind && unbinds < MAX_UNBINDS) {
			combo(K_EVUNBIND, 0, 0);
			do_unbind(op);
			break;
		}
		sh->event_kind = op->kind;
		sh->event_arg = op->misc;
		sh->event_idx = op->idx;
		if (op->kind == K_EVSUSPEND && o.held && (op->misc & 1)) {
			/*
			 * Held: every ring's commands in flight, and this
			 * process sleeps through the suspend without polling
			 * (a user's task frozen with polled I/O unreaped):
			 * the drains must reap for it.
			 */
			unsigned int i;

			sh->c.held++;
			held_reads(op->idx, false);
			for (i = 0; i < nrings; i++)
				ring_submit_nopoll(&rings[i]);
			if (event_sync(op, K_EVSUSPEND, false))
				failf(op->idx, "a suspend with our commands in "
				      "flight (pm_test=devices): %s",
				      strerror(-sh->event_rc));
			break;
		}
		sh->event_req++;
		/* in flight beside our commands; waited for at the next one */
		break;
	case K_EVFORK: {
		/* a child that leaves with every ring in flight */
		pid_t p;
		unsigned int i;

		for (i = 0; i < nrings; i++)
			ring_submit(&rings[i]);
		p = fork();
		if (p < 0)
			die("fork", errno);
		if (!p)
			_exit(0);
		waitpid(p, NULL, 0);
		break;
	}
	}
}

/* ---- the run ---- */

/* Suspends a run makes at most (each takes pm_test's 5 s): -E suspend */
#define MAX_SUSPENDS	2

static bool keep(uint64_t idx)
{
	return !keep_set || keep_set[idx];
}

static bool event_on(uint8_t kind)
{
	return (kind == K_EVCACHE && o.ev_cache) ||
	       (kind == K_EVSUSPEND && o.ev_suspend &&
		suspends < MAX_SUSPENDS) ||
	       (kind == K_EVFORK && o.ev_fork);
}

static void run(void)
{
	time_t t0 = time(NULL);
	uint64_t i;
	struct op op;

	for (i = 0; i < o.nops; i++) {
		draw(&op, i);
		sh->cur = i;
		if (o.secs && time(NULL) - t0 >= o.secs) {
			op_free(&op);
			break;
		}
		if (!keep(i) ||
		    (op.kind >= K_EVCACHE && op.kind <= K_EVFORK &&
		     !event_on(op.kind))) {
			/* still drawn: what follows does not move */
			if (op.kind == K_RING)
				do_ring(&op, false);
			sh->c.skipped++;
			op_free(&op);
			continue;
		}
		sh->c.ops++;
		sh->beat++;
		switch (op.kind) {
		case K_CHAIN:
			do_ring_ops(op.sub, op.nsub, op.ring % nrings);
			break;
		case K_RING:
			if (op.ring < nrings)
				do_ring(&op, true);
			break;
		case K_DRAIN:
			logop("%" PRIu64 " drain", i);
			drain_all();
			break;
		case K_EVCACHE:
		case K_EVSUSPEND:
		case K_EVFORK:
			do_event(&op);
			break;
		default:
			if (op.kind >= K_PREAD && op.kind <= K_INFO)
				do_sys(&op);
			else
				do_ring_ops(&op, 1, op.ring % nrings);
		}
		op_free(&op);
	}
	drain_all();
	event_wait();
	if (sh->event_rc && sh->event_kind == K_EVSUSPEND)
		failf(o.nops, "the last suspend (pm_test=devices): %s",
		      strerror(-sh->event_rc));
	for (i = 0; i < nrings; i++)
		ring_close(&rings[i], false);
}

/* ---- setup ---- */

static uint64_t sysfs_u64(const char *attr, uint64_t dflt)
{
	char path[160], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", d.name, attr);
	f = fopen(path, "r");
	if (!f)
		return dflt;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return dflt;
	}
	fclose(f);
	return strtoull(buf, NULL, 0);
}

/* The disk's virtio device (virtioN), which the driver unbinds and binds. */
static void virtio_name(const char *name)
{
	char path[160], link[160];
	ssize_t k;
	const char *base;

	snprintf(path, sizeof(path), "/sys/block/%s/device", name);
	k = readlink(path, link, sizeof(link) - 1);
	link[k > 0 ? k : 0] = 0;
	base = strrchr(link, '/');
	snprintf(d.vdev, sizeof(d.vdev), "%.31s", base ? base + 1 : link);
}

static void setup_disk(const char *name)
{
	char path[160];
	FILE *f;

	snprintf(d.name, sizeof(d.name), "%s", name);
	if (sh)		/* the worker's, not main()'s look at the size */
		snprintf(sh->disk, sizeof(sh->disk), "%s", name);
	d.bytes = sysfs_u64("size", 0) * 512;
	d.lbs = sysfs_u64("queue/logical_block_size", 512);
	d.max_bytes = sysfs_u64("queue/max_hw_sectors_kb", 128) * 1024;
	d.max_segs = sysfs_u64("queue/max_segments", 64);
	d.dma_align = sysfs_u64("queue/dma_alignment", 511);
	d.max_discard = sysfs_u64("queue/discard_max_hw_bytes", 0) / 512;
	d.max_wz = sysfs_u64("queue/write_zeroes_max_bytes", 0) / 512;
	d.ro = sysfs_u64("ro", 0);
	d.poll = sysfs_u64("queue/io_poll", 0);
	f = fopen("/sys/module/vbblk/parameters/mode", "r");
	if (f) {
		char b[16] = "";

		d.blkmq = fgets(b, sizeof(b), f) && !strncmp(b, "request", 7);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/sys/block/%s/cache_type", name);
	f = fopen(path, "r");
	if (f) {
		char b[32] = "";

		if (fgets(b, sizeof(b), f))
			d.wcache = !strncmp(b, "write back", 10);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/sys/block/%s/serial", name);
	f = fopen(path, "r");
	memset(d.serial, 0, sizeof(d.serial));
	if (f) {
		if (fgets(d.serial, sizeof(d.serial), f))
			d.serial[strcspn(d.serial, "\n")] = 0;
		fclose(f);
	}
	if (!d.bytes)
		die(name, ENODEV);
	virtio_name(name);
	snprintf(path, sizeof(path), "/dev/vbblk/%s", name);
	/* a read-only disk's node opens for writing: its writes get EROFS */
	d.nfd = open(path, O_RDWR);
	d.nfd_rw = d.nfd >= 0;
	if (d.nfd < 0)
		d.nfd = open(path, O_RDONLY);
	d.nfd_ro = open(path, O_RDONLY);
	if (d.nfd < 0 || d.nfd_ro < 0)
		die(path, errno);
	snprintf(path, sizeof(path), "/dev/%s", name);
	d.bfd = open(path, (d.ro ? O_RDONLY : O_RDWR) | O_DIRECT);
	d.bfd_buf = open(path, d.ro ? O_RDONLY : O_RDWR);
	/* fresh, SG_GET_RESERVED_SIZE is the largest transfer SG_IO takes */
	d.sg_max = -1;
	if (d.bfd >= 0)
		ioctl(d.bfd, SG_GET_RESERVED_SIZE, &d.sg_max);
	if (d.bfd < 0 || d.bfd_buf < 0)
		die(path, errno);
	/* no readahead: a buffered read caches only what it asked for */
	posix_fadvise(d.bfd_buf, 0, 0, POSIX_FADV_RANDOM);
}

/* The model starts as what the disk holds. */
static void setup_model(void)
{
	uint64_t span = reg_hi - reg_lo, off;
	uint8_t *b;

	model = malloc(span);
	known = calloc(span / 512, 1);
	if (!model || !known || posix_memalign((void **)&b, 4096, 1 << 20))
		die("malloc", ENOMEM);
	memset(known, 1, span / 512);
	for (off = 0; off < span; off += 1 << 20) {
		size_t n = span - off < (1 << 20) ? span - off : 1 << 20, k;

		if (pread(d.bfd, b, n, reg_lo + off) == (ssize_t)n) {
			memcpy(model + off, b, n);
			continue;
		}
		if (errno != EIO || !nbad)
			die("reading the disk into the model", errno ? errno : EIO);
		/* a bad sector (-B): block by block, what fails is unknown */
		for (k = 0; k < n; k += d.lbs) {
			if (pread(d.bfd, b, d.lbs, reg_lo + off + k) == d.lbs)
				memcpy(model + off + k, b, d.lbs);
			else
				memset(known + (off + k) / 512, 0, d.lbs / 512);
		}
	}
	free(b);
	romap = mmap(NULL, SLOT_SPAN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	hole = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (romap == MAP_FAILED || hole == MAP_FAILED)
		die("mmap", errno);
	/* a guard page, not a gap: a later mapping could fill a gap */
	if (mprotect(hole + 4096, 4096, PROT_NONE))
		die("mprotect", errno);
}

static void parse_keep(const char *arg)
{
	char *s, *p, *save = NULL;
	FILE *f = NULL;
	char line[4096];

	keep_set = calloc(o.nops + 1, 1);
	if (!keep_set)
		die("calloc", ENOMEM);
	if (arg[0] == '@') {
		f = fopen(arg + 1, "r");
		if (!f)
			die(arg + 1, errno);
	}
	do {
		if (f) {
			if (!fgets(line, sizeof(line), f))
				break;
			s = line;
		} else {
			snprintf(line, sizeof(line), "%s", arg);
			s = line;
		}
		for (p = strtok_r(s, ", \n", &save); p;
		     p = strtok_r(NULL, ", \n", &save)) {
			uint64_t a = strtoull(p, &p, 0), b = a;

			if (*p == '-')
				b = strtoull(p + 1, NULL, 0);
			for (; a <= b && a < o.nops; a++)
				keep_set[a] = 1;
		}
	} while (f);
	if (f)
		fclose(f);
}

/* -B: "SECTOR:r|w|rw,..." */
static void parse_bad(const char *arg)
{
	char *copy = strdup(arg), *p, *save = NULL;

	for (p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		char *how;
		uint64_t sec = strtoull(p, &how, 0);

		if (*how != ':' || nbad == MAX_BAD)
			die("-B: SECTOR:r|w|rw,... (at most 8)", EINVAL);
		bad[nbad].off = sec * 512;
		bad[nbad].r = strchr(how, 'r');
		bad[nbad].w = strchr(how, 'w');
		nbad++;
	}
	free(copy);
}

static void usage(void)
{
	fprintf(stderr, "usage: vbexer [-s SEED] [-n OPS] [-t SECS] [-k LIST] "
		"[-S] [-P|-h] [-H] [-E cache,suspend,unbind,fork,close] [-R NODE]\n"
		"       [-B SECTOR:r|w|rw,...] [-w SECS] [-v] [-x drain] vdX\n");
	exit(2);
}

/* ---- the worker and its supervisor ---- */

static int worker(const char *name)
{
	rng_state = o.seed;
	setup_disk(name);
	if (!reg_hi) {
		reg_lo = 0;
		reg_hi = d.bytes;
	}
	if (reg_hi - reg_lo < (2 << 20))
		die("region smaller than 2 MiB", EINVAL);
	setup_model();
	evpid = fork();
	if (evpid < 0)
		die("fork", errno);
	if (!evpid)
		event_loop();
	nrings = 1 + (o.seed >> 60) % 2;
	run();
	kill(evpid, SIGKILL);
	waitpid(evpid, NULL, 0);
	sh->done = 1;
	return sh->c.failures ? 1 : 0;
}

/* Runs the worker; fails it if nothing moves for the stall bound. */
static int supervise(const char *name, const char *who)
{
	uint64_t beat = (uint64_t)-1;
	time_t last = time(NULL);
	int status;
	pid_t p;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap", errno);
	memset(sh, 0, sizeof(*sh));
	p = fork();
	if (p < 0)
		die("fork", errno);
	if (!p)
		_exit(worker(name));
	for (;;) {
		pid_t w = waitpid(p, &status, WNOHANG);

		if (w == p)
			break;
		if (sh->beat != beat) {
			beat = sh->beat;
			last = time(NULL);
		} else if (time(NULL) - last > o.stall) {
			uint64_t i, n = sh->nlog;

			printf("exerciser: FAIL%s: STALL: nothing completed for %us "
			       "at op %" PRIu64 " (seed 0x%" PRIx64 "); its last "
			       "operations:\n", who, o.stall, sh->cur, o.seed);
			for (i = n > LOG_ENTRIES ? n - LOG_ENTRIES : 0; i < n; i++)
				printf("  %s\n", sh->log[i % LOG_ENTRIES]);
			printf("exerciser: replay: vbexer -s 0x%" PRIx64 " -n %" PRIu64
			       " -k LIST %s\n", o.seed, sh->cur + 1, name);
			fflush(stdout);
			sh->c.failures++;
			sh->c.first_fail = sh->cur;
			/* the kernel's side of it: blocked tasks to the console */
			write_str("/proc/sys/kernel/printk", "7");
			write_str("/proc/sysrq-trigger", "w");
			/* and what runs: a task that spins is not blocked */
			write_str("/proc/sysrq-trigger", "l");
			return -1;	/* it may never return: leave it */
		}
		usleep(100000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 2) {
		printf("exerciser: FAIL%s: the worker ended with status 0x%x\n",
		       who, status);
		sh->c.failures++;
		return -1;
	}
	return sh->c.failures ? 1 : 0;
}

/*
 * Shrinks a failing run to a short list of operations (ddmin over the
 * indices before the failing one, each try a run of its own).
 */
static int try_list(const char *name, const uint8_t *set, uint64_t n)
{
	char path[] = "/tmp/vbexer-k-XXXXXX";
	char arg[64], nops[32], seed[32];
	int fd = mkstemp(path), status;
	const char *av[24];
	unsigned int a = 0;
	FILE *f;
	uint64_t i;
	pid_t p;

	if (fd < 0)
		die("mkstemp", errno);
	f = fdopen(fd, "w");
	for (i = 0; i < n; i++)
		if (set[i])
			fprintf(f, "%" PRIu64 "\n", i);
	fclose(f);
	snprintf(arg, sizeof(arg), "@%s", path);
	snprintf(nops, sizeof(nops), "%" PRIu64, n);
	snprintf(seed, sizeof(seed), "0x%" PRIx64, o.seed);
	/* the run's own events and region, so that it draws the same */
	av[a++] = o.argv0;
	av[a++] = "-s";
	av[a++] = seed;
	av[a++] = "-n";
	av[a++] = nops;
	av[a++] = "-k";
	av[a++] = arg;
	av[a++] = "-w";
	av[a++] = "20";
	if (o.events) {
		av[a++] = "-E";
		av[a++] = o.events;
	}
	if (o.resize_node) {
		av[a++] = "-R";
		av[a++] = o.resize_node;
	}
	if (o.bad) {
		av[a++] = "-B";
		av[a++] = o.bad;
	}
	if (o.held)
		av[a++] = "-H";
	if (o.no_drain || o.no_late) {
		av[a++] = "-x";
		av[a++] = o.no_drain && o.no_late ? "drain,late" :
			  o.no_drain ? "drain" : "late";
	}
	if (o.partner || o.half)
		av[a++] = "-h";
	av[a++] = name;
	av[a] = NULL;
	p = fork();
	if (!p) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(nul, 1);
		execv(o.argv0, (char *const *)av);
		_exit(2);
	}
	waitpid(p, &status, 0);
	unlink(path);
	return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

static void shrink(const char *name, uint64_t fail_at)
{
	uint64_t n = fail_at + 1, i, chunk, cnt = n, tries = 0;
	uint8_t *set = calloc(n, 1), *t = calloc(n, 1);

	memset(set, 1, n);
	if (!try_list(name, set, n)) {
		printf("exerciser: shrink: the failure did not come back on a "
		       "second run (timing, or the disk's new content)\n");
		return;
	}
	for (chunk = n / 2; chunk >= 1; chunk /= 2) {
		for (i = 0; i + 1 < n && tries < 300; i += chunk) {
			uint64_t j, removed = 0;

			memcpy(t, set, n);
			for (j = i; j < i + chunk && j + 1 < n; j++)
				if (t[j]) {
					t[j] = 0;
					removed++;
				}
			if (!removed)
				continue;
			tries++;
			if (try_list(name, t, n)) {
				memcpy(set, t, n);
				cnt -= removed;
			}
		}
		if (chunk == 1)
			break;
	}
	printf("exerciser: shrunk to %" PRIu64 " operations in %" PRIu64
	       " runs: vbexer -s 0x%" PRIx64 " -n %" PRIu64 " -k ", cnt, tries,
	       o.seed, n);
	for (i = 0; i < n; i++)
		if (set[i])
			printf("%" PRIu64 "%s", i, i + 1 < n ? "," : "");
	printf(" %s\n", name);
	free(set);
	free(t);
}

int main(int argc, char **argv)
{
	struct shared *mine;
	pid_t pp = -1;
	int opt, rc;
	uint64_t half;

	o.argv0 = argv[0];
	o.seed = (uint64_t)time(NULL) * 2654435761ULL ^ (uint64_t)getpid() << 32;
	o.ev_cache = o.ev_fork = o.ev_close = o.knobs = true;
	while ((opt = getopt(argc, argv, "s:n:t:k:SPhHE:R:B:w:vx:")) != -1) {
		switch (opt) {
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			o.nops = strtoull(optarg, NULL, 0);
			break;
		case 't':
			o.secs = atoi(optarg);
			break;
		case 'k':
			o.keep = optarg;
			break;
		case 'S':
			o.shrink = true;
			break;
		case 'P':
			o.partner = true;
			break;
		case 'h':
			o.half = true;
			break;
		case 'H':
			o.held = true;
			break;
		case 'E':
			o.ev_cache = strstr(optarg, "cache");
			o.ev_suspend = strstr(optarg, "suspend");
			o.ev_fork = strstr(optarg, "fork");
			o.ev_close = strstr(optarg, "close");
			o.ev_unbind = strstr(optarg, "unbind");
			o.events = optarg;
			break;
		case 'R':
			o.resize_node = optarg;
			o.growth = true;
			break;
		case 'B':
			parse_bad(optarg);
			o.bad = optarg;
			break;
		case 'w':
			o.stall = atoi(optarg);
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'x':
			o.no_drain |= !!strstr(optarg, "drain");
			o.no_late |= !!strstr(optarg, "late");
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	if (o.ev_unbind && o.partner) {
		/* the partner's descriptors would die under it */
		fprintf(stderr, "vbexer: -E unbind is not for two processes (-P)\n");
		exit(2);
	}
	if (o.keep)
		parse_keep(o.keep);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.partner || o.half) {
		/* two processes, two halves, one queue: each its own model */
		setup_disk(argv[optind]);
		close(d.nfd);
		close(d.nfd_ro);
		close(d.bfd);
		close(d.bfd_buf);
		half = (d.bytes / 2) & ~((1ULL << 20) - 1);
		if (o.partner)
			pp = fork();
		if (o.partner && pp < 0)
			die("fork", errno);
		if (o.partner && !pp) {
			reg_lo = half;
			reg_hi = d.bytes;
			o.seed = o.seed * 6364136223846793005ULL + 1;
			o.shrink = false;
			/* one process suspends, resizes, turns knobs */
			o.ev_suspend = o.knobs = false;
			o.resize_node = NULL;
			rc = supervise(argv[optind], " (partner)");
			printf("exerciser: partner: %" PRIu64 " operations, seed 0x%"
			       PRIx64 ", %" PRIu64 " failures\n", sh->c.ops, o.seed,
			       sh->c.failures);
			_exit(rc ? 1 : 0);
		}
		reg_lo = 0;
		reg_hi = half;
	}
	rc = supervise(argv[optind], "");
	mine = sh;
	if (pp > 0) {
		int st;

		waitpid(pp, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = rc ? rc : 1;
	}
	printf("exerciser: %" PRIu64 " operations (%" PRIu64 " node, %" PRIu64
	       " block, %" PRIu64 " events, %" PRIu64 " suspends, %" PRIu64
	       " held, %" PRIu64 " knobs, %" PRIu64 " resizes, %" PRIu64
	       " unbinds, %" PRIu64 " stalls, %" PRIu64 " sg_io, %" PRIu64
	       " EIO), %" PRIu64
	       " ring configurations, %u combinations, seed 0x%" PRIx64 ", %"
	       PRIu64 " failures\n",
	       mine->c.ops, mine->c.node, mine->c.block, mine->c.events,
	       mine->c.suspends, mine->c.held, mine->c.knobs,
	       mine->c.resizes, mine->c.unbinds, mine->c.stalls, mine->c.sgio,
	       mine->c.eio,
	       mine->c.rings,
	       combos_seen(&mine->c),
	       o.seed, mine->c.failures);
	if (rc > 0 && o.shrink && mine->c.failures)
		shrink(argv[optind], mine->c.first_fail);
	return rc ? 1 : 0;
}
