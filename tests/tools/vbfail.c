/*
 * vbfail - I/O helpers for the faultinject guest test, which injects the
 * failures (tests/kmod/vbfault.ko drv_fail, failslab, fail_page_alloc).
 *
 *   vbfail sgio DEV OP [NTH]
 *	One SG_IO on DEV: OP is inquiry, read (READ(10) of sector 0), write
 *	(WRITE(10) of 8 sectors at sector 8192 with pattern 0x5a), unmap
 *	(sectors 16384..16391), or bread and bwrite: a READ(10) and a
 *	WRITE(10) of 128 sectors at sector 8192 from a buffer one byte off
 *	alignment, which the block layer copies through pages it allocates.
 *	Prints "rc=ERRNO": the ioctl's errno, 0 when it succeeded, -1 when it
 *	succeeded with a SCSI status other than GOOD.
 *	With NTH, the NTH slab or page allocation the ioctl makes in this
 *	task fails (/proc/thread-self/fail-nth, on a kernel with failslab and
 *	fail_page_alloc), and " injected=1" follows where one did,
 *	" injected=0" where the ioctl made fewer. An SG_IO that succeeded with
 *	a failure injected must have moved the right data (a read matches the
 *	same read without injection; a write, in NTH's own pattern, reads
 *	back), else " wrong-data" follows.
 *   vbfail aio DEV OFFSET COUNT SEED
 *	Write COUNT 4 KiB blocks from OFFSET with O_DIRECT, 8 per io_submit
 *	(the kernel plugs a batch), with this task's make-it-fail set: on a
 *	kernel with failslab every slab allocation in its context can fail. A
 *	batch refused by io_submit (EAGAIN, ENOMEM) is retried; a completion
 *	with an error is counted. Then, with injection off, every block whose
 *	write completed must read back. Prints the counts; exits 1 on an I/O
 *	error or a mismatch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <scsi/sg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BS 4096
#define BATCH 8

static void die(const char *what)
{
	fprintf(stderr, "vbfail: %s: %s\n", what, strerror(errno));
	exit(2);
}

/*
 * fail-nth: the NTH fault-injection point this task passes fails (every
 * kind: slab, pages). Opened before it is armed, since an open allocates.
 */
static int arm_nth(int nth)
{
	int fd = open("/proc/thread-self/fail-nth", O_RDWR);
	char n[16];

	if (fd < 0)
		die("/proc/thread-self/fail-nth");
	snprintf(n, sizeof(n), "%d", nth);
	if (write(fd, n, strlen(n)) < 0)
		die("fail-nth");
	return fd;
}

/* 1 when the failure was injected (it reads 0), and disarmed either way */
static int disarm_nth(int fd)
{
	char n[16];
	ssize_t len = pread(fd, n, sizeof(n) - 1, 0);

	if (len <= 0 || write(fd, "0", 1) < 0)
		die("fail-nth read back");
	n[len] = 0;
	close(fd);
	return atoi(n) == 0;
}

#define BIG (128 * 512)
#define BIG_LBA 8192

/* the data buffer of the last sgio(): a big op's is one byte off alignment */
static unsigned char small[8 * 512], big[BIG + BS] __attribute__((aligned(BS)));
static unsigned char *data;
static unsigned int data_len;

/*
 * One SG_IO of OP; a write's data is FILL bytes, a read's buffer starts as
 * 0xff (never written). NTH > 0: the NTH allocation in the ioctl fails,
 * *injected says whether one did.
 */
static int sgio(int fd, const char *op, int nth, int fill, int *injected)
{
	unsigned char cdb[16] = { 0 }, sense[32];
	int big_op = !strcmp(op, "bread") || !strcmp(op, "bwrite");
	int w = !strcmp(op, "write") || !strcmp(op, "bwrite");
	struct sg_io_hdr h;
	int fnth, err;

	data = big_op ? big + 1 : small;	/* off alignment: copied, not mapped */
	data_len = big_op ? BIG : sizeof(small);
	memset(data, w ? fill : 0xff, data_len);
	memset(&h, 0, sizeof(h));
	h.interface_id = 'S';
	h.cmdp = cdb;
	h.sbp = sense;
	h.mx_sb_len = sizeof(sense);
	h.timeout = 30000;
	h.dxferp = data;
	if (!strcmp(op, "inquiry")) {
		cdb[0] = 0x12;
		cdb[4] = 96;
		h.cmd_len = 6;
		h.dxfer_direction = SG_DXFER_FROM_DEV;
		h.dxfer_len = 96;
	} else if (!strcmp(op, "read") || w || big_op) {
		int secs = big_op ? BIG / 512 : w ? 8 : 1;

		cdb[0] = w ? 0x2a : 0x28;
		if (w || big_op)
			cdb[4] = BIG_LBA >> 8;
		cdb[8] = secs;
		h.cmd_len = 10;
		h.dxfer_direction = w ? SG_DXFER_TO_DEV : SG_DXFER_FROM_DEV;
		h.dxfer_len = secs * 512;
	} else if (!strcmp(op, "unmap")) {
		/* UNMAP parameter list: one descriptor, LBA 16384, 8 blocks */
		memset(data, 0, 24);
		data[1] = 22;
		data[3] = 16;
		data[8 + 6] = 0x40;
		data[8 + 11] = 8;
		cdb[0] = 0x42;
		cdb[8] = 24;
		h.cmd_len = 10;
		h.dxfer_direction = SG_DXFER_TO_DEV;
		h.dxfer_len = 24;
	} else {
		fprintf(stderr, "vbfail: unknown SG_IO op %s\n", op);
		exit(2);
	}
	data_len = h.dxfer_len;
	fnth = nth > 0 ? arm_nth(nth) : -1;
	err = ioctl(fd, SG_IO, &h) ? errno : 0;
	if (fnth >= 0)
		*injected = disarm_nth(fnth);
	if (err)
		return err;
	return (h.status || h.host_status || h.driver_status) ? -1 : 0;
}

/*
 * An SG_IO of OP that succeeded although an allocation in it failed: did
 * it move the right data? A read must match the same read without
 * injection; a write must read back (a big READ(10) of where it wrote).
 */
static int sgio_data_ok(int fd, const char *op, int fill)
{
	unsigned int i, len = data_len;
	unsigned char *got;
	int inj, ok;

	if (!strcmp(op, "unmap"))
		return 1;
	if (!strcmp(op, "write") || !strcmp(op, "bwrite")) {
		if (sgio(fd, "bread", 0, 0, &inj))
			return 0;
		for (i = 0; i < len; i++)
			if (data[i] != fill)
				return 0;
		return 1;
	}
	got = malloc(len);
	if (!got)
		die("malloc");
	memcpy(got, data, len);
	ok = !sgio(fd, op, 0, 0, &inj) && !memcmp(got, data, len);
	free(got);
	return ok;
}

/* a number with an optional K or M suffix (powers of 1024) */
static uint64_t size_arg(const char *a)
{
	char *end;
	uint64_t v = strtoull(a, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end) {
		errno = EINVAL;
		die(a);
	}
	return v;
}

static void pattern(unsigned char *p, uint64_t blk, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL ^ (blk + 1) * 0xbf58476d1ce4e5b9ULL;
	size_t i;

	for (i = 0; i < BS; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

static int aio(char **argv)
{
	uint64_t off = size_arg(argv[3]), count = size_arg(argv[4]);
	uint64_t seed = size_arg(argv[5]), done = 0, b, ok = 0, ioerr = 0;
	uint64_t refused = 0, bad = 0, refused_by[256] = { 0 };
	unsigned char *buf, *chk, *written;
	aio_context_t ctx = 0;
	int mif, fd = open(argv[2], O_RDWR | O_DIRECT);

	if (fd < 0)
		die(argv[2]);
	if (posix_memalign((void **)&buf, BS, BATCH * BS) ||
	    posix_memalign((void **)&chk, BS, BS))
		die("posix_memalign");
	written = calloc(count, 1);
	if (!written || syscall(SYS_io_setup, BATCH, &ctx))
		die("io_setup");
	/* opened first: an open() under injection may itself fail */
	mif = open("/proc/self/make-it-fail", O_WRONLY);
	if (mif < 0 && errno != ENOENT)	/* ENOENT: no CONFIG_FAULT_INJECTION */
		die("/proc/self/make-it-fail");
	if (mif >= 0 && write(mif, "1", 1) != 1)
		die("make-it-fail on");
	while (done < count) {
		struct iocb cb[BATCH], *cbp[BATCH];
		struct io_event ev[BATCH];
		int n = count - done < BATCH ? count - done : BATCH, i, got = 0;
		long r;

		for (i = 0; i < n; i++) {
			pattern(buf + i * BS, off / BS + done + i, seed);
			memset(&cb[i], 0, sizeof(cb[i]));
			cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
			cb[i].aio_fildes = fd;
			cb[i].aio_buf = (uintptr_t)(buf + i * BS);
			cb[i].aio_nbytes = BS;
			cb[i].aio_offset = off + (done + i) * BS;
			cb[i].aio_data = done + i;
			cbp[i] = &cb[i];
		}
		r = syscall(SYS_io_submit, ctx, n, cbp);
		if (r <= 0) {
			/*
			 * Refused before reaching the disk: an allocation of
			 * aio or the block layer failed (EAGAIN, ENOMEM; some
			 * paths say EINVAL). Not the driver's: retry.
			 */
			if (r < 0 && errno < 256)
				refused_by[errno]++;
			if (++refused > 100000)
				die("io_submit keeps refusing");
			continue;
		}
		while (got < r) {
			long e = syscall(SYS_io_getevents, ctx, 1, r - got, ev, NULL);

			if (e < 0) {
				if (errno == EINTR)
					continue;
				die("io_getevents");
			}
			for (i = 0; i < e; i++) {
				if (ev[i].res == BS) {
					written[ev[i].data] = 1;
					ok++;
				} else {
					fprintf(stderr, "vbfail: write of block %llu: res %lld\n",
						(unsigned long long)ev[i].data, (long long)ev[i].res);
					ioerr++;
				}
			}
			got += e;
		}
		done += r;
	}
	if (mif >= 0 && pwrite(mif, "0", 1, 0) != 1)
		die("make-it-fail off");
	for (b = 0; b < count; b++) {
		if (!written[b])
			continue;
		if (pread(fd, chk, BS, off + b * BS) != BS)
			die("pread");
		pattern(buf, off / BS + b, seed);
		if (memcmp(buf, chk, BS)) {
			fprintf(stderr, "vbfail: block %llu does not read back\n",
				(unsigned long long)b);
			bad++;
		}
	}
	printf("aio: blocks=%llu ok=%llu ioerr=%llu mismatched=%llu refused_submits=%llu",
	       (unsigned long long)count, (unsigned long long)ok, (unsigned long long)ioerr,
	       (unsigned long long)bad, (unsigned long long)refused);
	for (b = 0; b < 256; b++)
		if (refused_by[b])
			printf(" %s=%llu", strerrorname_np((int)b) ?: "?",
			       (unsigned long long)refused_by[b]);
	printf("\n");
	return ioerr || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "sgio")) {
		int fd = open(argv[2], O_RDWR), nth = argc == 5 ? atoi(argv[4]) : 0;
		/* each injected write its own pattern, so a lost one shows */
		int inj = -1, fill = nth ? nth % 251 + 1 : 0x5a, rc;

		if (fd < 0)
			die(argv[2]);
		rc = sgio(fd, argv[3], nth, fill, &inj);
		if (inj < 0)
			printf("rc=%d\n", rc);
		else
			printf("rc=%d injected=%d%s\n", rc, inj,
			       !rc && inj && !sgio_data_ok(fd, argv[3], fill) ? " wrong-data" : "");
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "aio"))
		return aio(argv);
	fprintf(stderr, "usage: vbfail sgio DEV OP [NTH] | aio DEV OFFSET COUNT SEED\n");
	return 2;
}
