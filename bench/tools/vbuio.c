// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vbuio - one io_uring load loop for both of a vbblk disk's io_uring paths,
 * in the spirit of fio's t/io_uring, so that they are compared with
 * nothing else changing:
 *   /dev/vbblk/<disk>   passthrough: IORING_OP_URING_CMD, no block layer
 *   /dev/<disk>         the block device: O_DIRECT IORING_OP_READ/WRITE(V)
 *
 *   vbuio [options] PATH          run a load, print one result line
 *     -m MODE   randread randwrite read write (default randread);
 *               fill: write the pattern over the area, sequentially;
 *               check: read the area back and compare with the pattern
 *     -b BYTES  I/O size (4096)          -q N  queue depth (1)
 *     -s N      submit batch (QD)        -c N  completions waited for (1)
 *     -t SECS   run time (5)             -n N  I/Os instead of a time
 *     -o SECTOR area start (0)           -z BYTES  area size (all)
 *     -f        registered (fixed) buffers
 *     -v        vectored: each I/O's buffer as two iovecs
 *     -p        polled ring (IORING_SETUP_IOPOLL)
 *     -x SEED   pattern and offsets seed (1)
 *     -C CPU    run on that CPU only (as fio's cpus_allowed)
 *     -J FILE   also write the result as fio's JSON would (the fields
 *               bench/report.py reads: I/Os, IOPS, bandwidth, p50/p99)
 *   vbuio cmd PATH key=value...   one passthrough command, print "res=N"
 *     (PATH fd:N uses the inherited descriptor N)
 *     (and "id=..." and "idhex=" (all 20 bytes) for GET_ID); keys: op (read write flush discard
 *     wzeroes getid, or a number), sector, len, nr, flags, ioprio, rsvd,
 *     cmdop, fixed=1, vec=1, sqe64=1 (a ring without SQE128), poll=1 (an
 *     IOPOLL ring), n=COUNT (the command COUNT times on the ring, one after
 *     another: every result must be the first's), hold=K (K commands
 *     left unreaped, one more from io-wq, print "held=K+1"; on SIGUSR1
 *     reap all and print "resN=" for each), cpu=N (run
 *     there), and
 *     addr=buf|null|bad|kernel|wrap|unaligned|ro|hole (ro: a read-only
 *     mapping; hole: only the buffer's first page is mapped; wrap: the
 *     range runs past the top of the address space)
 *
 * The pattern: every 8 bytes of the area hold (byte offset / 8) ^ seed * K,
 * so data written through one path is checked through the other. A load
 * stops at the first failed I/O; it exits 1 on one or on a mismatch, 2 on
 * bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fs.h>
#include <linux/vbblk.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PATTERN_K	0x9e3779b97f4a7c15ULL
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Completion latencies, in microseconds up to LAT_MAX. */
#define LAT_MAX	100000
static unsigned int lat_hist[LAT_MAX + 1];

struct slot {
	void *buf;
	struct iovec iov[2];
	uint64_t off;
	double t;		/* submitted at */
};

static struct {
	const char *path, *mode, *json;
	unsigned int bs, qd, sbatch, cbatch;
	double secs;
	uint64_t nios, start, size, seed;
	bool fixed, vec, poll, pt;
} o = { .mode = "randread", .bs = 4096, .qd = 1, .cbatch = 1, .secs = 5,
	.seed = 1 };

static void die(const char *what, int err)
{
	fprintf(stderr, "vbuio: %s: %s\n", what, strerror(err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void pattern(void *buf, uint64_t off, unsigned int len)
{
	uint64_t *p = buf;
	unsigned int i;

	for (i = 0; i < len / 8; i++)
		p[i] = (off / 8 + i) ^ (o.seed * PATTERN_K);
}

/* The first word that differs, or -1. */
static long long mismatch(const void *buf, uint64_t off, unsigned int len)
{
	const uint64_t *p = buf;
	unsigned int i;

	for (i = 0; i < len / 8; i++)
		if (p[i] != ((off / 8 + i) ^ (o.seed * PATTERN_K)))
			return i;
	return -1;
}

/*
 * Which 4 KiB pieces of a mismatching read are wrong, and what they hold
 * instead (zero: never written; delta: the pattern of another offset, in
 * words, under this seed). The first 16 of a run.
 */
static void show_bad(const void *buf, uint64_t off, unsigned int len)
{
	static unsigned int shown;
	const uint64_t *p = buf;
	unsigned int k;

	for (k = 0; k + 512 <= len / 8 && shown < 16; k += 512) {
		uint64_t base = (off - o.start * 512) / 8 + k;

		if (mismatch(p + k, base * 8, 4096) < 0)
			continue;
		shown++;
		fprintf(stderr, "vbuio:   4k at byte %" PRIu64 ": first word %#" PRIx64
			" (pattern delta %" PRId64 " words)\n", off + k * 8, p[k],
			(int64_t)((p[k] ^ (o.seed * PATTERN_K)) - base));
	}
}

/* The latency at or below which @pct percent of @n completions fell, ns. */
static double lat_pct(uint64_t n, double pct)
{
	uint64_t want = (uint64_t)(n * pct / 100.0), seen = 0;
	unsigned int i;

	for (i = 0; i <= LAT_MAX; i++) {
		seen += lat_hist[i];
		if (seen > want)
			return i * 1000.0;
	}
	return LAT_MAX * 1000.0;
}

/*
 * What bench/report.py reads of fio's JSON output; ctx: context switches,
 * as fio counts them (voluntary and not), since the load began.
 */
static void write_json(bool wr, uint64_t ios, double secs, long ctx)
{
	const char *empty = "{\"total_ios\": 0, \"iops\": 0, \"bw\": 0, \"clat_ns\": {}}";
	FILE *f = fopen(o.json, "w");
	char side[512];

	if (!f)
		die(o.json, errno);
	snprintf(side, sizeof(side),
		 "{\"total_ios\": %llu, \"iops\": %.1f, \"bw\": %.0f, \"clat_ns\": {\"percentile\": {\"50.000000\": %.0f, \"99.000000\": %.0f}}}",
		 (unsigned long long)ios, ios / secs, ios * (o.bs / 1024.0) / secs,
		 lat_pct(ios, 50), lat_pct(ios, 99));
	fprintf(f, "{\"jobs\": [{\"jobname\": \"vbuio\", \"ctx\": %ld, \"read\": %s, \"write\": %s}]}\n",
		ctx, wr ? empty : side, wr ? side : empty);
	fclose(f);
}

/* This thread's context switches: how often the load slept, mostly. */
static long ctx_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		die("getrusage", errno);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int open_target(const char *path, bool rw, bool *pt)
{
	struct stat st;
	int fd;

	if (stat(path, &st))
		die(path, errno);
	/* The passthrough device has no page cache to bypass: no O_DIRECT. */
	*pt = S_ISCHR(st.st_mode);
	fd = open(path, (rw ? O_RDWR : O_RDONLY) | (*pt ? 0 : O_DIRECT));
	if (fd < 0)
		die(path, errno);
	return fd;
}

/* The disk behind PATH: its size, from sysfs for the character device. */
static uint64_t disk_bytes(int fd, const char *path, bool pt)
{
	char sys[256];
	unsigned long long sectors;
	uint64_t bytes;
	FILE *f;

	if (!pt) {
		if (ioctl(fd, BLKGETSIZE64, &bytes))
			die(path, errno);
		return bytes;
	}
	snprintf(sys, sizeof(sys), "/sys/block/%s/size", strrchr(path, '/') + 1);
	f = fopen(sys, "r");
	if (!f || fscanf(f, "%llu", &sectors) != 1)
		die(sys, errno ? errno : EINVAL);
	fclose(f);
	return sectors * 512;
}

static void prep_pt(struct io_uring_sqe *sqe, int fd, uint8_t op, uint64_t off,
		    struct slot *s, unsigned int idx)
{
	struct vbblk_uring_cmd c = {
		.opcode = op,
		.sector = off / 512,
	};

	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = VBBLK_URING_CMD_IO;
	if (o.vec) {
		c.flags = VBBLK_F_VEC;
		c.addr = (uintptr_t)s->iov;
		c.len = 2;
	} else {
		c.addr = (uintptr_t)s->buf;
		c.len = o.bs;
	}
	if (o.fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = idx;
	}
	memcpy(sqe->cmd, &c, sizeof(c));
}

static void prep_bdev(struct io_uring_sqe *sqe, int fd, bool wr, uint64_t off,
		      struct slot *s, unsigned int idx)
{
	if (o.vec && wr)
		io_uring_prep_writev(sqe, fd, s->iov, 2, off);
	else if (o.vec)
		io_uring_prep_readv(sqe, fd, s->iov, 2, off);
	else if (o.fixed && wr)
		io_uring_prep_write_fixed(sqe, fd, s->buf, o.bs, off, idx);
	else if (o.fixed)
		io_uring_prep_read_fixed(sqe, fd, s->buf, o.bs, off, idx);
	else if (wr)
		io_uring_prep_write(sqe, fd, s->buf, o.bs, off);
	else
		io_uring_prep_read(sqe, fd, s->buf, o.bs, off);
}

static int run_load(void)
{
	bool wr = !strcmp(o.mode, "randwrite") || !strcmp(o.mode, "write") ||
		  !strcmp(o.mode, "fill");
	bool seq = strcmp(o.mode, "randread") && strcmp(o.mode, "randwrite");
	bool check = !strcmp(o.mode, "check");
	struct io_uring_params p = { 0 };
	unsigned int *free_slots, nfree, inflight = 0, i;
	uint64_t issued = 0, done = 0, errors = 0, bad = 0, next = 0, rs;
	uint64_t eio = 0, enodev = 0;
	struct io_uring ring;
	struct slot *slots;
	struct iovec *regs;
	double t0, t1, end;
	long ctx0;
	uint64_t blocks;
	int fd, ret;

	if (strcmp(o.mode, "randread") && strcmp(o.mode, "randwrite") &&
	    strcmp(o.mode, "read") && strcmp(o.mode, "write") &&
	    strcmp(o.mode, "fill") && strcmp(o.mode, "check")) {
		fprintf(stderr, "vbuio: unknown mode %s\n", o.mode);
		return 2;
	}
	fd = open_target(o.path, wr, &o.pt);
	if (!o.size)
		o.size = disk_bytes(fd, o.path, o.pt) - o.start * 512;
	blocks = o.size / o.bs;
	if (!blocks || o.bs % 512 || (o.vec && o.bs % 1024)) {
		fprintf(stderr, "vbuio: bad size or block size\n");
		return 2;
	}
	/* fill and check cover the area once */
	if (!strcmp(o.mode, "fill") || check)
		o.nios = blocks;
	if (!o.sbatch || o.sbatch > o.qd)
		o.sbatch = o.qd;
	if (!o.cbatch || o.cbatch > o.qd)
		o.cbatch = o.qd;

	if (o.pt)
		p.flags |= IORING_SETUP_SQE128;
	if (o.poll)
		p.flags |= IORING_SETUP_IOPOLL;
	ret = io_uring_queue_init_params(o.qd * 2, &ring, &p);
	if (ret)
		die("io_uring_queue_init", -ret);

	slots = calloc(o.qd, sizeof(*slots));
	free_slots = calloc(o.qd, sizeof(*free_slots));
	regs = calloc(o.qd, sizeof(*regs));
	if (!slots || !free_slots || !regs)
		die("calloc", ENOMEM);
	for (i = 0; i < o.qd; i++) {
		if (posix_memalign(&slots[i].buf, 4096, o.bs))
			die("posix_memalign", ENOMEM);
		memset(slots[i].buf, 0, o.bs);
		slots[i].iov[0] = (struct iovec){ slots[i].buf, o.bs / 2 };
		slots[i].iov[1] = (struct iovec){ (char *)slots[i].buf + o.bs / 2,
						  o.bs / 2 };
		regs[i] = (struct iovec){ slots[i].buf, o.bs };
		free_slots[i] = i;
	}
	nfree = o.qd;
	if (o.fixed) {
		ret = io_uring_register_buffers(&ring, regs, o.qd);
		if (ret)
			die("io_uring_register_buffers", -ret);
	}

	rs = o.seed * PATTERN_K | 1;
	ctx0 = ctx_switches();
	t0 = now();
	end = t0 + o.secs;
	for (;;) {
		unsigned int n = 0, head, got = 0, wait;
		struct io_uring_cqe *cqe;
		/* a failed I/O stops the load: what is in flight drains */
		bool more = !errors && (o.nios ? issued < o.nios : now() < end);

		while (more && nfree && n < o.sbatch) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned int idx = free_slots[--nfree];
			struct slot *s = &slots[idx];
			uint64_t blk = seq ? next++ % blocks : rnd(&rs) % blocks;

			s->off = o.start * 512 + blk * o.bs;
			s->t = now();
			if (wr)
				pattern(s->buf, s->off - o.start * 512, o.bs);
			if (o.pt)
				prep_pt(sqe, fd, wr ? VBBLK_OP_WRITE : VBBLK_OP_READ,
					s->off, s, idx);
			else
				prep_bdev(sqe, fd, wr, s->off, s, idx);
			io_uring_sqe_set_data64(sqe, idx);
			n++;
			issued++;
			more = o.nios ? issued < o.nios : true;
		}
		inflight += n;
		if (!inflight)
			break;
		/* a full queue (or the end) waits for a completion batch */
		wait = (!nfree || !more) ? (inflight < o.cbatch ? inflight : o.cbatch) : 0;
		ret = io_uring_submit_and_wait(&ring, wait);
		if (ret < 0 && ret != -EINTR)
			die("io_uring_submit_and_wait", -ret);
		io_uring_for_each_cqe(&ring, head, cqe) {
			unsigned int idx = (unsigned int)cqe->user_data;
			struct slot *s = &slots[idx];
			double us = (now() - s->t) * 1e6;

			lat_hist[us < LAT_MAX ? (unsigned int)us : LAT_MAX]++;
			if (cqe->res != (int)o.bs) {
				eio += cqe->res == -EIO;
				enodev += cqe->res == -ENODEV;
				if (!errors++)
					fprintf(stderr, "vbuio: I/O at %" PRIu64 ": res %d (%s)\n",
						s->off, cqe->res,
						cqe->res < 0 ? strerror(-cqe->res) : "short");
			} else if (check) {
				long long w = mismatch(s->buf, s->off - o.start * 512, o.bs);

				if (w >= 0 && !bad++)
					fprintf(stderr, "vbuio: mismatch at byte %" PRIu64 "\n",
						s->off + (uint64_t)w * 8);
				if (w >= 0)
					show_bad(s->buf, s->off, o.bs);
			}
			free_slots[nfree++] = idx;
			got++;
		}
		io_uring_cq_advance(&ring, got);
		inflight -= got;
		done += got;
		if (!more && !inflight)
			break;
	}
	t1 = now();
	printf("vbuio: %s %s %s bs=%u qd=%u sbatch=%u cbatch=%u%s%s%s ios=%" PRIu64
	       " seconds=%.2f iops=%.0f errors=%" PRIu64 " mismatches=%" PRIu64
	       " eio=%" PRIu64 " enodev=%" PRIu64 "\n",
	       o.path, o.pt ? "passthrough" : "block", o.mode, o.bs, o.qd, o.sbatch,
	       o.cbatch, o.fixed ? " fixed" : "", o.vec ? " vec" : "",
	       o.poll ? " polled" : "", done, t1 - t0, done / (t1 - t0), errors, bad,
	       eio, enodev);
	if (o.json)
		write_json(wr, done, t1 - t0, ctx_switches() - ctx0);
	io_uring_queue_exit(&ring);
	close(fd);
	return errors || bad ? 1 : 0;
}

/* ---- one command, for the tests ---- */

static const char *kv(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}

static uint64_t kvnum(int argc, char **argv, const char *key, uint64_t def)
{
	const char *v = kv(argc, argv, key);

	return v ? strtoull(v, NULL, 0) : def;
}

/* One passthrough SQE of @c on @ring (cmdop= and fixed= from the keys). */
static struct io_uring_sqe *cmd_sqe(struct io_uring *ring, int argc,
				    char **argv, int fd,
				    const struct vbblk_uring_cmd *c, bool sqe64)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	memset(sqe, 0, sqe64 ? sizeof(*sqe) : 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = kvnum(argc, argv, "cmdop", VBBLK_URING_CMD_IO);
	if (kvnum(argc, argv, "fixed", 0))
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	/* A 64-byte SQE has room for the first 16 bytes only. */
	memcpy(sqe->cmd, c, sqe64 ? 16 : sizeof(*c));
	return sqe;
}

static int run_cmd(int argc, char **argv)
{
	static const char *const ops[] = { "", "read", "write", "flush", "discard",
					   "wzeroes", "getid" };
	const char *opname = kv(argc, argv, "op"), *addr = kv(argc, argv, "addr");
	struct vbblk_uring_cmd c = { 0 };
	struct io_uring_params p = { 0 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct iovec iov[2];
	bool sqe64 = kvnum(argc, argv, "sqe64", 0);
	size_t buflen = 1 << 20;
	unsigned int i, n, count, hold;
	char *buf;
	int fd, ret, first = 0;

	if (!opname) {
		fprintf(stderr, "vbuio cmd: op= is needed\n");
		return 2;
	}
	for (i = 1; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(opname, ops[i]))
			c.opcode = i;
	if (!c.opcode)
		c.opcode = strtoul(opname, NULL, 0);
	c.sector = kvnum(argc, argv, "sector", 0);
	c.len = kvnum(argc, argv, "len", 0);
	c.nr_sectors = kvnum(argc, argv, "nr", 0);
	c.flags = kvnum(argc, argv, "flags", 0);
	c.ioprio = kvnum(argc, argv, "ioprio", 0);
	c.rsvd[1] = kvnum(argc, argv, "rsvd", 0);

	if (kv(argc, argv, "cpu")) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(kvnum(argc, argv, "cpu", 0), &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity", errno);
	}
	if (!strncmp(argv[0], "fd:", 3))
		fd = atoi(argv[0] + 3);		/* inherited, e.g. held across unbind */
	else
		fd = open(argv[0], kvnum(argc, argv, "rdonly", 0) ? O_RDONLY : O_RDWR);
	if (fd < 0)
		die(argv[0], errno);
	buf = mmap(NULL, buflen, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap", errno);
	pattern(buf, c.sector * 512, buflen);
	/* FLUSH, DISCARD and WRITE ZEROES carry no buffer unless told to */
	if (c.opcode != VBBLK_OP_FLUSH && c.opcode != VBBLK_OP_DISCARD &&
	    c.opcode != VBBLK_OP_WRITE_ZEROES)
		c.addr = (uintptr_t)buf;
	if (addr && !strcmp(addr, "buf"))
		c.addr = (uintptr_t)buf;
	else if (addr && !strcmp(addr, "null"))
		c.addr = 0;
	else if (addr && !strcmp(addr, "bad"))
		c.addr = 0xdead0000000ULL;
	else if (addr && !strcmp(addr, "kernel"))
		c.addr = 0xffffffff81000000ULL;
	else if (addr && !strcmp(addr, "wrap"))
		c.addr = 0xfffffffffffff000ULL;	/* its last page wraps to 0 */
	else if (addr && !strcmp(addr, "unaligned"))
		c.addr = (uintptr_t)buf + 100;
	else if (addr && !strcmp(addr, "ro") && mprotect(buf, buflen, PROT_READ))
		die("mprotect", errno);
	else if (addr && !strcmp(addr, "hole") &&
		 munmap(buf + 4096, buflen - 4096))
		die("munmap", errno);
	if (kvnum(argc, argv, "vec", 0)) {
		iov[0] = (struct iovec){ (void *)(uintptr_t)c.addr, c.len / 2 };
		iov[1] = (struct iovec){ (char *)(uintptr_t)c.addr + c.len / 2,
					 c.len - c.len / 2 };
		c.addr = (uintptr_t)iov;
		c.len = 2;
		c.flags |= VBBLK_F_VEC;
	}

	if (!sqe64)
		p.flags |= IORING_SETUP_SQE128;
	if (kvnum(argc, argv, "poll", 0))
		p.flags |= IORING_SETUP_IOPOLL;
	ret = io_uring_queue_init_params(kvnum(argc, argv, "hold", 0) + 4,
					 &ring, &p);
	if (ret)
		die("io_uring_queue_init", -ret);
	if (kvnum(argc, argv, "fixed", 0)) {
		struct iovec reg = { buf, buflen };

		ret = io_uring_register_buffers(&ring, &reg, 1);
		if (ret)
			die("io_uring_register_buffers", -ret);
	}
	hold = kvnum(argc, argv, "hold", 0);
	if (hold) {
		sigset_t set;
		int sig;

		/* blocked before anyone can send it */
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		if (sigprocmask(SIG_BLOCK, &set, NULL))
			die("sigprocmask", errno);
		/*
		 * hold=K: K commands left unreaped on the ring (on an IOPOLL
		 * ring their completions wait for a poll that never comes),
		 * then one more issued from io-wq (IOSQE_ASYNC), then wait to
		 * be killed: what removal and suspend must not wait for.
		 */
		for (n = 0; n <= hold; n++) {
			sqe = cmd_sqe(&ring, argc, argv, fd, &c, sqe64);
			if (n == hold)
				sqe->flags |= IOSQE_ASYNC;
		}
		/*
		 * Not io_uring_submit(): on an IOPOLL ring it asks for events
		 * too, and that poll would reap what must stay unreaped.
		 */
		ring.sq.sqe_head = ring.sq.sqe_tail;
		io_uring_smp_store_release(ring.sq.ktail, ring.sq.sqe_tail);
		ret = syscall(__NR_io_uring_enter, ring.ring_fd, hold + 1, 0, 0,
			      NULL, 0);
		if (ret < 0)
			die("io_uring_enter", errno);
		printf("held=%u\n", ret);
		fflush(stdout);
		/* SIGUSR1: reap them all now, print each result */
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		if (sigwait(&set, &sig))
			die("sigwait", errno);
		for (n = 0; n <= hold; n++) {
			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret)
				die("io_uring_wait_cqe", -ret);
			printf("res%u=%d\n", n, cqe->res);
			io_uring_cqe_seen(&ring, cqe);
		}
		return 0;
	}
	count = kvnum(argc, argv, "n", 1);
	for (n = 0; n < count; n++) {
		cmd_sqe(&ring, argc, argv, fd, &c, sqe64);
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0)
			die("io_uring_submit_and_wait", -ret);
		/* an IOPOLL ring's wait may end early (need_resched): wait on */
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			die("io_uring_wait_cqe", -ret);
		if (!n)
			first = cqe->res;
		else if (cqe->res != first)
			break;
		if (n + 1 < count)
			io_uring_cqe_seen(&ring, cqe);
	}
	if (n < count) {
		printf("res=%d\nres%u=%d\n", first, n, cqe->res);
		return 1;
	}
	printf("res=%d\n", cqe->res);
	if (c.opcode == VBBLK_OP_GET_ID && cqe->res > 0) {
		printf("id=%.*s\nidhex=", VBBLK_ID_BYTES, buf);
		for (i = 0; i < VBBLK_ID_BYTES; i++)
			printf("%02x", (unsigned char)buf[i]);
		printf("\n");
	}
	if (c.opcode == VBBLK_OP_READ && cqe->res > 0)
		printf("pattern=%s\n",
		       mismatch(buf, c.sector * 512, cqe->res) < 0 ? "yes" : "no");
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return 0;
}

static void help(void)
{
	fprintf(stderr, "usage: vbuio [-m MODE] [-b BYTES] [-q N] [-s N] [-c N] [-t SECS] [-n N]\n"
		"             [-o SECTOR] [-z BYTES] [-f] [-v] [-p] [-x SEED] [-C CPU] [-J FILE] PATH\n"
		"       vbuio cmd PATH op=OP [key=value...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c;

	if (argc > 2 && !strcmp(argv[1], "cmd"))
		return run_cmd(argc - 2, argv + 2);
	while ((c = getopt(argc, argv, "m:b:q:s:c:t:n:o:z:fvpx:J:C:h")) != -1) {
		switch (c) {
		case 'm':
			o.mode = optarg;
			break;
		case 'b':
			o.bs = strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o.qd = strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.sbatch = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o.cbatch = strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.secs = strtod(optarg, NULL);
			break;
		case 'n':
			o.nios = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			o.start = strtoull(optarg, NULL, 0);
			break;
		case 'z':
			o.size = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			o.fixed = true;
			break;
		case 'v':
			o.vec = true;
			break;
		case 'p':
			o.poll = true;
			break;
		case 'x':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'J':
			o.json = optarg;
			break;
		case 'C': {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(atoi(optarg), &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				die("sched_setaffinity", errno);
			break;
		}
		default:
			help();
		}
	}
	if (optind != argc - 1 || !o.qd || !o.bs)
		help();
	o.path = argv[optind];
	return run_load();
}
