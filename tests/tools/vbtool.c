/*
 * vbtool - tiny static helper for the vbblk guest tests.
 * Does the block-device ioctls and deterministic pattern I/O busybox can't.
 *
 *   vbtool getgeo DEV                 -> "heads sectors cylinders start"
 *   vbtool info DEV                   -> key=value lines (size64, ss, pbsz, iomin, ioopt, ro, ...)
 *   vbtool getsize64|getss|getpbsz|getiomin|getioopt|getro DEV
 *   vbtool discard|zeroout|secdiscard DEV OFFSET LEN
 *   vbtool fill  DEV OFFSET LEN SEED  -> write deterministic pattern (O_DIRECT), fsync
 *   vbtool check DEV OFFSET LEN SEED  -> verify the pattern, exit 1 on mismatch
 *   vbtool scatter DEV OFFSET LEN SEED -> the fill pattern in one O_DIRECT
 *                                        pwritev of LEN/4096 pages, no two
 *                                        consecutive ones physically
 *                                        adjacent (/proc/self/pagemap): a
 *                                        request of LEN/4096 segments; fsync
 *   vbtool iszero DEV OFFSET LEN      -> exit 1 if any byte in range is non-zero
 *   vbtool flush DEV                  -> fsync()
 *   vbtool gone DEV FLAG              -> hold DEV open, create FLAG, wait until
 *                                        FLAG is removed (the test removes the
 *                                        disk first), then try every ioctl and
 *                                        I/O on the old fd: each must fail
 *
 * OFFSET/LEN accept K/M/G suffixes (powers of 1024).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/hdreg.h>
#include <scsi/sg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK (1024 * 1024)

static const char *prog = "vbtool";

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s) {
		fprintf(stderr, "%s: bad number '%s'\n", prog, s);
		exit(2);
	}
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end) {
		fprintf(stderr, "%s: bad number '%s'\n", prog, s);
		exit(2);
	}
	return v;
}

static int open_dev(const char *dev, int flags)
{
	int fd = open(dev, flags);

	if (fd < 0)
		die("cannot open %s", dev);
	return fd;
}

/* splitmix64: cheap, deterministic pattern generator */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Each 512-byte sector is tagged with its absolute byte offset and seed so
 * misdirected writes are detected, the rest is pseudo-random. */
static void gen(unsigned char *buf, uint64_t off, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i += 512) {
		uint64_t *w = (uint64_t *)(buf + i);
		uint64_t s = mix(seed ^ ((off + i) * 0x100000001b3ULL));
		int j;

		w[0] = off + i;
		w[1] = seed;
		for (j = 2; j < 64; j++) {
			s = mix(s);
			w[j] = s;
		}
	}
}

static void *abuf(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(2);
	}
	return p;
}

static int do_pattern(const char *dev, uint64_t off, uint64_t len, uint64_t seed, int write)
{
	int fd = open_dev(dev, (write ? O_RDWR : O_RDONLY) | O_DIRECT);
	unsigned char *buf = abuf(CHUNK), *exp = abuf(CHUNK);
	uint64_t done = 0, bad = 0;

	if (off % 512 || len % 512) {
		fprintf(stderr, "%s: offset/length must be multiples of 512\n", prog);
		return 2;
	}
	while (done < len) {
		size_t n = len - done > CHUNK ? CHUNK : len - done;
		ssize_t r;

		if (write) {
			gen(buf, off + done, n, seed);
			r = pwrite(fd, buf, n, off + done);
		} else {
			r = pread(fd, buf, n, off + done);
		}
		if (r != (ssize_t)n) {
			fprintf(stderr, "%s: %s %s at %" PRIu64 " len %zu: %s (r=%zd)\n", prog,
				write ? "write" : "read", dev, off + done, n,
				r < 0 ? strerror(errno) : "short", r);
			return 2;
		}
		if (!write) {
			size_t i;

			gen(exp, off + done, n, seed);
			for (i = 0; i < n; i += 512) {
				if (memcmp(buf + i, exp + i, 512)) {
					if (bad < 5) {
						uint64_t *w = (uint64_t *)(buf + i);
						fprintf(stderr, "%s: MISMATCH %s sector at byte %" PRIu64
							" (found tag off=%" PRIu64 " seed=%" PRIu64 ")\n",
							prog, dev, off + done + i, w[0], w[1]);
					}
					bad++;
				}
			}
		}
		done += n;
	}
	if (write && fsync(fd))
		die("fsync %s", dev);
	close(fd);
	if (bad) {
		fprintf(stderr, "%s: %" PRIu64 " bad sectors in %s\n", prog, bad, dev);
		return 1;
	}
	return 0;
}

/* Page frame number of the page at @p (faulted in), 0 if unknown. */
static uint64_t pfn_of(int pm, const void *p)
{
	uint64_t e;

	if (pread(pm, &e, sizeof(e), (uintptr_t)p / 4096 * sizeof(e)) != sizeof(e))
		return 0;
	return (e >> 63) ? e & ((1ULL << 55) - 1) : 0;
}

/*
 * One write of LEN/4096 physical segments: pages whose physical address
 * does not continue the previous page's, or the block layer merges them
 * into one segment (memory faulted in on a fresh guest often comes in
 * ascending order).
 */
static int do_scatter(const char *dev, uint64_t off, uint64_t len, uint64_t seed)
{
	size_t n = len / 4096, pool = 4 * n, i, k = 0;
	unsigned char *mem, *data;
	struct iovec *iov;
	uint64_t prev = 0;
	ssize_t r;
	int fd, pm;

	if (off % 512 || len % 4096 || !n || n > 1024) {
		fprintf(stderr, "%s: scatter: offset must be a multiple of 512, length of 4096, at most 4M\n",
			prog);
		return 2;
	}
	mem = abuf(pool * 4096);
	data = abuf(len);
	iov = calloc(n, sizeof(*iov));
	if (!iov)
		die("%s", "calloc");
	memset(mem, 0x5a, pool * 4096);
	pm = open("/proc/self/pagemap", O_RDONLY);
	if (pm < 0)
		die("cannot open %s", "/proc/self/pagemap");
	for (i = 0; i < pool && k < n; i++) {
		uint64_t pfn = pfn_of(pm, mem + i * 4096);

		if (!pfn) {
			fprintf(stderr, "%s: scatter: no page frame numbers (not root?)\n", prog);
			return 2;
		}
		if (k && pfn == prev + 1)
			continue;
		iov[k].iov_base = mem + i * 4096;
		iov[k++].iov_len = 4096;
		prev = pfn;
	}
	close(pm);
	if (k < n) {
		fprintf(stderr, "%s: scatter: only %zu separate pages in %zu\n", prog, k, pool);
		return 2;
	}
	gen(data, off, len, seed);
	for (i = 0; i < n; i++)
		memcpy(iov[i].iov_base, data + i * 4096, 4096);
	fd = open_dev(dev, O_RDWR | O_DIRECT);
	r = pwritev(fd, iov, n, off);
	if (r != (ssize_t)len) {
		fprintf(stderr, "%s: scatter %s at %" PRIu64 " len %" PRIu64 ": %s (r=%zd)\n",
			prog, dev, off, len, r < 0 ? strerror(errno) : "short", r);
		return 2;
	}
	if (fsync(fd))
		die("fsync %s", dev);
	close(fd);
	return 0;
}

static int do_iszero(const char *dev, uint64_t off, uint64_t len)
{
	int fd = open_dev(dev, O_RDONLY | O_DIRECT);
	unsigned char *buf = abuf(CHUNK);
	uint64_t done = 0;

	while (done < len) {
		size_t n = len - done > CHUNK ? CHUNK : len - done, i;
		ssize_t r = pread(fd, buf, n, off + done);

		if (r != (ssize_t)n) {
			fprintf(stderr, "%s: read %s at %" PRIu64 " failed\n", prog, dev, off + done);
			return 2;
		}
		for (i = 0; i < n; i++)
			if (buf[i]) {
				fprintf(stderr, "%s: non-zero byte at %" PRIu64 "\n", prog, off + done + i);
				return 1;
			}
		done += n;
	}
	close(fd);
	return 0;
}

static int range_ioctl(const char *dev, unsigned long req, const char *name, uint64_t off, uint64_t len)
{
	int fd = open_dev(dev, O_RDWR);
	uint64_t r[2] = { off, len };

	if (ioctl(fd, req, r)) {
		fprintf(stderr, "%s: %s %s: %s\n", prog, name, dev, strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}

struct geti { const char *name; unsigned long req; int kind; };
enum { K_INT, K_UINT, K_U64 };
static const struct geti getters[] = {
	{ "getsize64", BLKGETSIZE64, K_U64 },
	{ "getss", BLKSSZGET, K_INT },
	{ "getpbsz", BLKPBSZGET, K_UINT },
	{ "getiomin", BLKIOMIN, K_UINT },
	{ "getioopt", BLKIOOPT, K_UINT },
	{ "getro", BLKROGET, K_INT },
	{ "getdiscardzeroes", BLKDISCARDZEROES, K_UINT },
	{ NULL, 0, 0 }
};

static int get_one(int fd, const struct geti *g, uint64_t *out)
{
	int i;
	unsigned int u;
	uint64_t v;

	switch (g->kind) {
	case K_INT: if (ioctl(fd, g->req, &i)) return -1; *out = (uint64_t)i; break;
	case K_UINT: if (ioctl(fd, g->req, &u)) return -1; *out = u; break;
	default: if (ioctl(fd, g->req, &v)) return -1; *out = v; break;
	}
	return 0;
}

/*
 * hostile: block ioctls with bad pointers, lengths and ranges. Each must
 * fail with its errno (or succeed where noted) and leave the disk usable.
 */
static int expect(const char *what, int rc, int want_errno)
{
	int e = rc ? errno : 0;

	if ((want_errno && (rc != -1 || e != want_errno)) || (!want_errno && rc)) {
		printf("hostile: %s: rc %d errno %d (%s), expected %s\n", what, rc, e,
		       strerror(e), want_errno ? strerror(want_errno) : "success");
		return 1;
	}
	printf("hostile: ok: %s -> %s\n", what, want_errno ? strerror(want_errno) : "0");
	return 0;
}

static int hostile(const char *dev)
{
	int fd = open_dev(dev, O_RDWR), bad = 0;
	uint64_t size = 0, r[2];
	void *unmapped;

	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, 4096);
	if (ioctl(fd, BLKGETSIZE64, &size))
		die("BLKGETSIZE64 %s", dev);

	bad += expect("HDIO_GETGEO NULL", ioctl(fd, HDIO_GETGEO, NULL), EINVAL);
	bad += expect("HDIO_GETGEO unmapped", ioctl(fd, HDIO_GETGEO, unmapped), EFAULT);
	bad += expect("BLKGETSIZE64 unmapped", ioctl(fd, BLKGETSIZE64, unmapped), EFAULT);
	bad += expect("BLKDISCARD unmapped range", ioctl(fd, BLKDISCARD, unmapped), EFAULT);
	r[0] = size; r[1] = 4096;
	bad += expect("BLKDISCARD past the end", ioctl(fd, BLKDISCARD, r), EINVAL);
	r[0] = size - 4096; r[1] = 8192;
	bad += expect("BLKDISCARD across the end", ioctl(fd, BLKDISCARD, r), EINVAL);
	r[0] = 1; r[1] = 4096;
	bad += expect("BLKDISCARD unaligned start", ioctl(fd, BLKDISCARD, r), EINVAL);
	r[0] = 0; r[1] = 100;
	bad += expect("BLKDISCARD unaligned length", ioctl(fd, BLKDISCARD, r), EINVAL);
	r[0] = size; r[1] = 4096;
	bad += expect("BLKZEROOUT past the end", ioctl(fd, BLKZEROOUT, r), EINVAL);
	r[0] = 512; r[1] = 1000;
	bad += expect("BLKZEROOUT unaligned length", ioctl(fd, BLKZEROOUT, r), EINVAL);
	r[0] = size; r[1] = 4096;
	bad += expect("BLKSECDISCARD past the end", ioctl(fd, BLKSECDISCARD, r), EOPNOTSUPP);
	r[0] = 0; r[1] = 4096;
	bad += expect("BLKZEROOUT first 4 KiB", ioctl(fd, BLKZEROOUT, r), 0);
	bad += expect("BLKFLSBUF", ioctl(fd, BLKFLSBUF, 0), 0);
	bad += expect("unknown ioctl", ioctl(fd, _IO(0x12, 0xfe), 0), ENOTTY);
	close(fd);
	printf("hostile %s: %d unexpected\n", dev, bad);
	return bad ? 1 : 0;
}

/*
 * The disk behind @dev is removed while we hold it open (the test unbinds
 * it once FLAG exists, then deletes FLAG). Everything on the old fd must
 * fail, and nothing may oops (the harness reads the console).
 */
static int gone(const char *dev, const char *flag)
{
	unsigned char cdb[6] = { 0x12, 1, 0x80, 0, 252, 0 };	/* INQUIRY VPD 80 */
	unsigned char buf[4096] __attribute__((aligned(4096)));
	uint64_t range[2] = { 0, 1 << 20 }, size;
	struct hd_geometry geo;
	unsigned char sense[32];
	struct sg_io_hdr h;
	int fd, i, v, bad = 0;

	fd = open_dev(dev, O_RDWR | O_DIRECT);
	close(open(flag, O_CREAT | O_WRONLY, 0644));
	while (access(flag, F_OK) == 0)
		usleep(100000);

#define GONE(what, call) do {						\
		errno = 0;						\
		if ((call) >= 0) {					\
			printf("gone: %s succeeded on a removed disk\n", what); \
			bad++;						\
		}							\
	} while (0)
	for (i = 0; i < 200; i++) {
		memset(&h, 0, sizeof(h));
		h.interface_id = 'S';
		h.dxfer_direction = SG_DXFER_FROM_DEV;
		h.cmd_len = sizeof(cdb);
		h.cmdp = cdb;
		h.dxfer_len = 252;
		h.dxferp = buf;
		h.mx_sb_len = sizeof(sense);
		h.sbp = sense;
		h.timeout = 5000;
		/* No device behind it: an errno, or at least no GOOD status. */
		if (ioctl(fd, SG_IO, &h) == 0 && !h.status && !h.host_status &&
		    !h.driver_status) {
			printf("gone: SG_IO INQUIRY answered GOOD on a removed disk\n");
			bad++;
			break;
		}
	}
	printf("gone: SG_IO x200: last errno %d (%s)\n", errno, strerror(errno));
	/* answered from driver state, harmless either way: must not crash */
	ioctl(fd, SG_GET_VERSION_NUM, &v);
	ioctl(fd, SG_GET_TIMEOUT, 0);
	ioctl(fd, BLKGETSIZE64, &size);
	ioctl(fd, HDIO_GETGEO, &geo);
	ioctl(fd, BLKFLSBUF, 0);
	GONE("BLKDISCARD", ioctl(fd, BLKDISCARD, range));
	GONE("BLKZEROOUT", ioctl(fd, BLKZEROOUT, range));
	/* a removed disk has no capacity: EOF (0) is a clean answer too */
	GONE("pread", pread(fd, buf, sizeof(buf), 0) - 1);
	GONE("pwrite", pwrite(fd, buf, sizeof(buf), 0) - 1);
	fsync(fd);
#undef GONE
	close(fd);
	printf("gone %s: %d unexpected\n", dev, bad);
	return bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: vbtool getgeo|info|getsize64|getss|getpbsz|getiomin|getioopt|getro|flush DEV\n"
		"       vbtool discard|zeroout|secdiscard DEV OFFSET LEN\n"
		"       vbtool fill|check|scatter DEV OFFSET LEN SEED\n"
		"       vbtool iszero DEV OFFSET LEN\n"
		"       vbtool hostile DEV   (bad block ioctls: each must get its errno)\n"
		"       vbtool gone DEV FLAG (ioctls and I/O on a removed disk's fd)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cmd, *dev;
	const struct geti *g;
	int fd;

	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];

	if (!strcmp(cmd, "getgeo")) {
		struct hd_geometry geo;

		fd = open_dev(dev, O_RDONLY);
		if (ioctl(fd, HDIO_GETGEO, &geo))
			die("HDIO_GETGEO %s", dev);
		printf("%u %u %u %lu\n", geo.heads, geo.sectors, geo.cylinders, geo.start);
		return 0;
	}
	if (!strcmp(cmd, "info")) {
		uint64_t v;

		fd = open_dev(dev, O_RDONLY);
		for (g = getters; g->name; g++)
			if (!get_one(fd, g, &v))
				printf("%s=%" PRIu64 "\n", g->name + 3, v);
		return 0;
	}
	for (g = getters; g->name; g++) {
		if (!strcmp(cmd, g->name)) {
			uint64_t v;

			fd = open_dev(dev, O_RDONLY);
			if (get_one(fd, g, &v))
				die("ioctl %s", cmd);
			printf("%" PRIu64 "\n", v);
			return 0;
		}
	}
	if (!strcmp(cmd, "flush")) {
		fd = open_dev(dev, O_RDWR);
		if (fsync(fd))
			die("fsync %s", dev);
		return 0;
	}
	if (!strcmp(cmd, "discard") || !strcmp(cmd, "zeroout") || !strcmp(cmd, "secdiscard")) {
		unsigned long req = !strcmp(cmd, "discard") ? BLKDISCARD :
				    !strcmp(cmd, "zeroout") ? BLKZEROOUT : BLKSECDISCARD;
		if (argc != 5)
			usage();
		return range_ioctl(dev, req, cmd, parse_size(argv[3]), parse_size(argv[4]));
	}
	if (!strcmp(cmd, "fill") || !strcmp(cmd, "check")) {
		if (argc != 6)
			usage();
		return do_pattern(dev, parse_size(argv[3]), parse_size(argv[4]),
				  parse_size(argv[5]), !strcmp(cmd, "fill"));
	}
	if (!strcmp(cmd, "scatter")) {
		if (argc != 6)
			usage();
		return do_scatter(dev, parse_size(argv[3]), parse_size(argv[4]),
				  parse_size(argv[5]));
	}
	if (!strcmp(cmd, "hostile"))
		return hostile(dev);
	if (!strcmp(cmd, "gone")) {
		if (argc != 4)
			usage();
		return gone(dev, argv[3]);
	}
	if (!strcmp(cmd, "iszero")) {
		if (argc != 5)
			usage();
		return do_iszero(dev, parse_size(argv[3]), parse_size(argv[4]));
	}
	usage();
	return 2;
}
