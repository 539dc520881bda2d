// SPDX-License-Identifier: GPL-2.0
/*
 * sgfuzz: throw random SG_IO commands at a block device.
 *
 *   sgfuzz DEV ITERATIONS SEED
 *   sgfuzz DEV check
 *   sgfuzz DEV send ro|rw none|inLEN|outLEN CDB-BYTE...
 *
 * "send" opens DEV read-only or read-write, sends one CDB (hex bytes) with
 * no data, a LEN-byte data-in or a LEN-byte zeroed data-out buffer, and
 * prints "ok" (GOOD), the errno's name (EPERM) or the status and sense key.
 *
 * "check" runs fixed cases with known answers: each bad header, length or
 * pointer gets its errno, each bad command its sense, and iovec reads
 * return what pread() returns.
 *
 * Random CDBs (mostly opcodes the driver knows, with fields bent toward
 * its edges), CDB lengths, directions, transfer lengths, iovec layouts,
 * sense buffers and bad pointers. DEV is written to: use a scratch disk.
 *
 * Every call must end in one of:
 *   - ioctl() == 0 with a sane header: sb_len_wr <= mx_sb_len, resid within
 *     dxfer_len, status GOOD or CHECK CONDITION with a sense key this
 *     driver uses, host status OK or DID_ERROR;
 *   - ioctl() == -1 with EINVAL, EFAULT or ENOMEM.
 * Anything else is printed and makes the exit status 1. Oopses and hangs
 * are for the caller to see (console, timeout).
 */
#define _GNU_SOURCE		/* strerrorname_np() */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <scsi/sg.h>

#define BUF_BYTES	(2u << 20)
#define MAX_IOV		8

static uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static unsigned int pick(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

static int chance(unsigned int percent)
{
	return pick(100) < percent;
}

static const unsigned char known_ops[] = {
	0x00, 0x03, 0x12, 0x25, 0x9e, 0x1a, 0x5a, 0xa0,	/* TUR..REPORT LUNS */
	0x28, 0x88, 0x2a, 0x8a,				/* READ/WRITE 10/16 */
	0x35, 0x91, 0x93, 0x42,				/* SYNC, WS16, UNMAP */
	0x08, 0x0a, 0xa8, 0xaa, 0x2f, 0x41, 0x55, 0x15,	/* translated: no */
};

static unsigned char *buf, *robuf, *hole;
static uint64_t blocks = 1 << 15;	/* refined from READ CAPACITY */
static unsigned int lbs = 512;

static void *some_pointer(void *good)
{
	switch (pick(40)) {
	case 0:
		return NULL;
	case 1:
		return hole;				/* unmapped */
	case 2:
		return (void *)0xffff888000000000UL;	/* kernel */
	case 3:
		return robuf;				/* read-only */
	default:
		return good;
	}
}

static void fill_cdb(unsigned char *cdb, unsigned int len)
{
	unsigned int i;
	uint64_t lba;

	for (i = 0; i < len; i++)
		cdb[i] = (unsigned char)rnd();
	cdb[0] = chance(80) ? known_ops[pick(sizeof(known_ops))] :
			      (unsigned char)rnd();
	if (chance(50))
		cdb[1] &= 0x1f;		/* no protection fields, mostly */
	if (!chance(60))
		return;
	/* In range, mostly: LBA and a small count where the opcode keeps them. */
	lba = chance(90) ? rnd() % blocks : blocks - pick(4);
	switch (cdb[0]) {
	case 0x28: case 0x2a: case 0x35:		/* (10) */
		if (len < 10)
			break;
		cdb[2] = lba >> 24; cdb[3] = lba >> 16; cdb[4] = lba >> 8;
		cdb[5] = lba;
		cdb[7] = 0;
		cdb[8] = pick(64);
		break;
	case 0x88: case 0x8a: case 0x91: case 0x93:	/* (16) */
		if (len < 16)
			break;
		for (i = 0; i < 8; i++)
			cdb[2 + i] = lba >> (56 - 8 * i);
		cdb[10] = cdb[11] = cdb[12] = 0;
		cdb[13] = pick(64);
		break;
	case 0x12:					/* INQUIRY */
		cdb[1] &= 0x01;
		cdb[2] = chance(50) ? "\x00\x80\x83\xb0\xb1\xb2"[pick(6)] :
				      cdb[2];
		break;
	}
}

struct outcome {
	unsigned long ok, check, did_error, err[5], bad;
};

static const int allowed_errno[] = { EINVAL, EFAULT, ENOMEM };

static int one(int fd, unsigned long it, struct outcome *o)
{
	static const int dirs[] = { SG_DXFER_NONE, SG_DXFER_TO_DEV,
				    SG_DXFER_FROM_DEV, SG_DXFER_TO_FROM_DEV,
				    -5 /* SG_DXFER_UNKNOWN */, 7 };
	static const unsigned int cdb_lens[] = { 6, 10, 12, 16 };
	static const unsigned char group_len[] = { 6, 10, 10, 16, 16, 12, 6, 6 };
	unsigned char cdb[64], sense[256];
	struct iovec iov[MAX_IOV];
	struct sg_io_hdr h;
	unsigned int i, total = 0;
	int rc, e;

	memset(&h, 0, sizeof(h));
	memset(sense, 0xa5, sizeof(sense));
	h.interface_id = chance(98) ? 'S' : (int)pick(256);
	fill_cdb(cdb, sizeof(cdb));
	/* the CDB's own length (group code), mostly */
	h.cmd_len = chance(70) ? group_len[cdb[0] >> 5] :
		    chance(90) ? cdb_lens[pick(4)] : pick(41);
	h.cmdp = chance(98) ? cdb : some_pointer(cdb);
	h.dxfer_direction = chance(90) ? dirs[pick(4)] : dirs[4 + pick(2)];
	switch (pick(6)) {
	case 0:
		h.dxfer_len = 0;
		break;
	case 1:
		h.dxfer_len = pick(4096);
		break;
	case 2:
		h.dxfer_len = 512 * (1 + pick(128));
		break;
	case 3:
		h.dxfer_len = pick(1u << 20);
		break;
	case 4:		/* around and past the driver's limit */
		h.dxfer_len = chance(10) ? 0xffffffffu : pick(BUF_BYTES);
		break;
	default:
		h.dxfer_len = 4096 * (1 + pick(16));
		break;
	}
	if (h.dxfer_len > BUF_BYTES) {
		h.dxferp = buf;
	} else {
		/* sector-aligned or anywhere */
		unsigned int off = pick(BUF_BYTES - h.dxfer_len + 1);

		h.dxferp = buf + (chance(50) ? off & ~511u : off);
	}
	if (chance(20)) {
		/* An iovec over the buffer, sometimes with a bad element. */
		h.iovec_count = chance(95) ? 1 + pick(MAX_IOV) : 2000;
		for (i = 0; i < MAX_IOV; i++) {
			unsigned int l = pick(3) ? 512 * pick(9) : pick(5000);
			unsigned int off = pick(BUF_BYTES - 5000);

			iov[i].iov_base = chance(95) ? buf + off :
					  some_pointer(buf + off);
			iov[i].iov_len = l;
			if (i < h.iovec_count)
				total += l;
		}
		h.dxferp = chance(97) ? (void *)iov : some_pointer(iov);
		if (chance(50))
			h.dxfer_len = total;
	} else if (chance(5)) {
		h.dxferp = some_pointer(h.dxferp);
	}
	h.mx_sb_len = pick(256);
	h.sbp = chance(95) ? sense : some_pointer(sense);
	h.timeout = chance(50) ? 0 : pick(20000);
	h.flags = chance(80) ? 0 : (unsigned int)rnd();

	rc = ioctl(fd, SG_IO, &h);
	if (rc < 0) {
		e = errno;
		for (i = 0; i < sizeof(allowed_errno) / sizeof(int); i++)
			if (e == allowed_errno[i]) {
				o->err[i]++;
				return 0;
			}
		printf("iteration %lu: op 0x%02x cdb_len %u dir %d len %u iov %u: unexpected errno %d (%s)\n",
		       it, cdb[0], h.cmd_len, h.dxfer_direction, h.dxfer_len,
		       h.iovec_count, e, strerror(e));
		o->bad++;
		return 1;
	}
	if (h.sb_len_wr > h.mx_sb_len || h.resid < 0 ||
	    (unsigned int)h.resid > h.dxfer_len ||
	    (h.host_status != 0 && h.host_status != 0x07) ||
	    (h.status != 0 && h.status != 0x02) ||
	    (h.status == 0x02 && h.sb_len_wr >= 3 &&
	     (sense[2] & 0xf) != 0x05 && (sense[2] & 0xf) != 0x03 &&
	     (sense[2] & 0xf) != 0x07) ||
	    (h.status == 0x02 && h.mx_sb_len >= 18 && h.sbp == sense &&
	     h.sb_len_wr != 18)) {
		printf("iteration %lu: op 0x%02x: insane reply: status 0x%x host 0x%x driver 0x%x resid %d/%u sense %u/%u key 0x%x\n",
		       it, cdb[0], h.status, h.host_status, h.driver_status,
		       h.resid, h.dxfer_len, h.sb_len_wr, h.mx_sb_len,
		       sense[2] & 0xf);
		o->bad++;
		return 1;
	}
	if (h.host_status)
		o->did_error++;
	else if (h.status)
		o->check++;
	else
		o->ok++;
	return 0;
}

static void read_capacity(int fd)
{
	unsigned char cdb[10] = { 0x25 }, d[8], s[32];
	struct sg_io_hdr h;

	memset(&h, 0, sizeof(h));
	h.interface_id = 'S';
	h.cmd_len = 10;
	h.cmdp = cdb;
	h.dxfer_direction = SG_DXFER_FROM_DEV;
	h.dxfer_len = sizeof(d);
	h.dxferp = d;
	h.mx_sb_len = sizeof(s);
	h.sbp = s;
	if (!ioctl(fd, SG_IO, &h) && !h.status && !h.host_status) {
		blocks = ((uint64_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3]) + 1;
		lbs = d[4] << 24 | d[5] << 16 | d[6] << 8 | d[7];
	}
}

/* ---- check: fixed cases ---- */

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		failures++;						\
	}								\
} while (0)

static unsigned char sbuf[64];

static void hdr_init(struct sg_io_hdr *h, unsigned char *cdb, int len,
		     int dir, void *data, unsigned int dlen)
{
	memset(h, 0, sizeof(*h));
	memset(sbuf, 0, sizeof(sbuf));
	h->interface_id = 'S';
	h->cmd_len = len;
	h->cmdp = cdb;
	h->dxfer_direction = dir;
	h->dxferp = data;
	h->dxfer_len = dlen;
	h->sbp = sbuf;
	h->mx_sb_len = sizeof(sbuf);
}

/* ioctl result: 0 or -errno */
static int sgio(int fd, struct sg_io_hdr *h)
{
	return ioctl(fd, SG_IO, h) ? -errno : 0;
}

static void expect_sense(const char *what, int fd, struct sg_io_hdr *h,
			 int key, int asc)
{
	int rc = sgio(fd, h);

	CHECK(rc == 0, "%s: ioctl %d", what, rc);
	CHECK(h->status == 0x02 && h->masked_status == 0x01 &&
	      (h->driver_status & 0x08) && (h->info & 1) &&
	      h->sb_len_wr == 18 && sbuf[0] == 0x70 &&
	      (sbuf[2] & 0xf) == key && sbuf[12] == asc,
	      "%s: status 0x%x masked 0x%x driver 0x%x info 0x%x sense %u bytes key 0x%x asc 0x%x, want key 0x%x asc 0x%x",
	      what, h->status, h->masked_status, h->driver_status, h->info,
	      h->sb_len_wr, sbuf[2] & 0xf, sbuf[12], key, asc);
}

static void rw10(unsigned char *cdb, unsigned char op, uint32_t lba,
		 unsigned int n)
{
	memset(cdb, 0, 10);
	cdb[0] = op;
	cdb[2] = lba >> 24; cdb[3] = lba >> 16; cdb[4] = lba >> 8; cdb[5] = lba;
	cdb[8] = n;
}

static int check(const char *dev)
{
	unsigned char cdb[40], inq[96], *a = buf, *b = buf + (1 << 20);
	struct sg_io_hdr h;
	struct iovec iov[3];
	unsigned int idlun[2];
	int fd, rofd, v, rc;

	fd = open(dev, O_RDWR);
	rofd = open(dev, O_RDONLY);
	if (fd < 0 || rofd < 0) {
		perror(dev);
		return 2;
	}

	memset(cdb, 0, sizeof(cdb));
	cdb[0] = 0x12;			/* INQUIRY, 96 bytes */
	cdb[4] = sizeof(inq);
	hdr_init(&h, cdb, 6, SG_DXFER_FROM_DEV, inq, sizeof(inq));
	rc = sgio(fd, &h);
	CHECK(rc == 0 && !h.status && !h.host_status && !h.info &&
	      h.resid == (int)sizeof(inq) - 36 && !memcmp(&inq[8], "VIRTIO  ", 8),
	      "INQUIRY: rc %d status 0x%x resid %d", rc, h.status, h.resid);

	/* bad headers and pointers: errno, nothing else */
	hdr_init(&h, cdb, 6, SG_DXFER_FROM_DEV, inq, sizeof(inq));
	h.interface_id = 'Q';
	CHECK(sgio(fd, &h) == -EINVAL, "interface_id 'Q'");
	h.interface_id = 'S';
	h.cmd_len = 5;
	CHECK(sgio(fd, &h) == -EINVAL, "cmd_len 5");
	h.cmd_len = 33;
	CHECK(sgio(fd, &h) == -EINVAL, "cmd_len 33");
	h.cmd_len = 6;
	h.cmdp = NULL;
	CHECK(sgio(fd, &h) == -EINVAL, "cmdp NULL");
	h.cmdp = hole;
	CHECK(sgio(fd, &h) == -EFAULT, "cmdp unmapped");
	h.cmdp = cdb;
	h.dxfer_len = 64u << 20;
	h.dxferp = buf;
	CHECK(sgio(fd, &h) == -EINVAL, "dxfer_len 64 MiB");
	h.dxfer_len = sizeof(inq);
	h.dxfer_direction = -5;		/* SG_DXFER_UNKNOWN */
	CHECK(sgio(fd, &h) == -EINVAL, "direction UNKNOWN");
	h.dxfer_direction = SG_DXFER_FROM_DEV;
	h.dxferp = hole;
	CHECK(sgio(fd, &h) == -EFAULT, "INQUIRY into unmapped memory");
	h.dxferp = robuf;
	CHECK(sgio(fd, &h) == -EFAULT, "INQUIRY into read-only memory");
	CHECK(ioctl(fd, SG_IO, NULL) == -1 && errno == EFAULT, "header NULL");
	CHECK(ioctl(fd, SG_IO, hole) == -1 && errno == EFAULT, "header unmapped");

	rw10(cdb, 0x28, 0, 8);		/* READ(10) 8 blocks into r/o memory */
	hdr_init(&h, cdb, 10, SG_DXFER_FROM_DEV, robuf, 8 * 4096);
	CHECK(sgio(fd, &h) == -EFAULT, "READ(10) into read-only memory");
	hdr_init(&h, cdb, 10, SG_DXFER_FROM_DEV, iov, 8 * 512);
	h.iovec_count = 2000;
	CHECK(sgio(fd, &h) == -EINVAL, "iovec_count 2000");
	h.iovec_count = 3;
	h.dxferp = hole;
	CHECK(sgio(fd, &h) == -EFAULT, "iovec array unmapped");

	/* bad commands: sense */
	memset(cdb, 0, 16);
	cdb[0] = 0xc0;
	hdr_init(&h, cdb, 6, SG_DXFER_NONE, NULL, 0);
	expect_sense("vendor opcode 0xc0", fd, &h, 0x5, 0x20);
	cdb[0] = 0x41;			/* WRITE SAME(10): not in the subset */
	hdr_init(&h, cdb, 10, SG_DXFER_NONE, NULL, 0);
	expect_sense("WRITE SAME(10)", fd, &h, 0x5, 0x20);
	rw10(cdb, 0x28, (uint32_t)blocks, 1);
	hdr_init(&h, cdb, 10, SG_DXFER_FROM_DEV, a, 65536);
	expect_sense("READ(10) past the end", fd, &h, 0x5, 0x21);
	memset(cdb, 0, 16);
	cdb[0] = 0x12;
	cdb[1] = 1;
	cdb[2] = 0x99;			/* no such VPD page */
	cdb[4] = 255;
	hdr_init(&h, cdb, 6, SG_DXFER_FROM_DEV, a, 255);
	expect_sense("VPD page 0x99", fd, &h, 0x5, 0x24);
	memset(cdb, 0, 16);
	cdb[0] = 0x1a;
	cdb[2] = 0xc8;			/* MODE SENSE saved values */
	cdb[4] = 255;
	hdr_init(&h, cdb, 6, SG_DXFER_FROM_DEV, a, 255);
	expect_sense("MODE SENSE saved values", fd, &h, 0x5, 0x39);
	/* sense for a caller whose sense pointer is bad */
	cdb[0] = 0xc0;
	hdr_init(&h, cdb, 6, SG_DXFER_NONE, NULL, 0);
	h.sbp = hole;
	CHECK(sgio(fd, &h) == -EFAULT, "sense into unmapped memory");
	/* short sense buffer: truncated, not overrun */
	hdr_init(&h, cdb, 6, SG_DXFER_NONE, NULL, 0);
	memset(sbuf, 0xee, sizeof(sbuf));
	h.mx_sb_len = 8;
	rc = sgio(fd, &h);
	CHECK(rc == 0 && h.sb_len_wr == 8 && sbuf[8] == 0xee,
	      "mx_sb_len 8: rc %d sb_len_wr %u", rc, h.sb_len_wr);

	/* buffer does not fit the command: DID_ERROR, nothing transferred */
	rw10(cdb, 0x28, 0, 8);
	hdr_init(&h, cdb, 10, SG_DXFER_FROM_DEV, a, 1024);
	rc = sgio(fd, &h);
	CHECK(rc == 0 && h.host_status == 0x07 && (h.info & 1),
	      "READ(10) short buffer: rc %d host 0x%x", rc, h.host_status);
	hdr_init(&h, cdb, 10, SG_DXFER_TO_DEV, a, 65536);
	rc = sgio(fd, &h);
	CHECK(rc == 0 && h.host_status == 0x07,
	      "READ(10) with data out: rc %d host 0x%x", rc, h.host_status);

	/* READ(10) of 4 KiB through an iovec of odd pieces equals pread() */
	rw10(cdb, 0x28, 8, 4096 / lbs);
	memset(a, 0, 8192);
	iov[0].iov_base = a + 3;		iov[0].iov_len = 1000;
	iov[1].iov_base = a + 5000;		iov[1].iov_len = 512;
	iov[2].iov_base = a + 20000;		iov[2].iov_len = 8192;
	hdr_init(&h, cdb, 10, SG_DXFER_FROM_DEV, iov, 8192);
	h.iovec_count = 3;
	rc = sgio(fd, &h);
	v = pread(fd, b, 4096, 8 * lbs);
	CHECK(rc == 0 && !h.status && !h.host_status && h.resid == 8192 - 4096 &&
	      v == 4096 && !memcmp(a + 3, b, 1000) && !memcmp(a + 5000, b + 1000, 512) &&
	      !memcmp(a + 20000, b + 1512, 4096 - 1512),
	      "READ(10) iovec: rc %d status 0x%x host 0x%x resid %d pread %d", rc,
	      h.status, h.host_status, h.resid, v);

	/* as root: a read-only open may read and sync, never write */
	rw10(cdb, 0x2a, 0, 1);
	hdr_init(&h, cdb, 10, SG_DXFER_TO_DEV, a, 4096);
	CHECK(sgio(rofd, &h) == -EPERM, "WRITE(10) on a read-only open");
	memset(cdb, 0, 16);
	cdb[0] = 0x42;			/* UNMAP */
	hdr_init(&h, cdb, 10, SG_DXFER_NONE, NULL, 0);
	CHECK(sgio(rofd, &h) == -EPERM, "UNMAP on a read-only open");
	cdb[0] = 0x35;
	hdr_init(&h, cdb, 10, SG_DXFER_NONE, NULL, 0);
	rc = sgio(rofd, &h);
	CHECK(rc == 0 && !h.status, "SYNCHRONIZE CACHE on a read-only open: %d", rc);
	cdb[0] = 0x12;
	cdb[4] = 36;
	hdr_init(&h, cdb, 6, SG_DXFER_FROM_DEV, inq, 36);
	CHECK(sgio(rofd, &h) == 0 && !h.status, "INQUIRY on a read-only open");

	/* the other ioctls sg3-utils probes */
	CHECK(ioctl(fd, SG_GET_VERSION_NUM, &v) == 0 && v >= 30000,
	      "SG_GET_VERSION_NUM %d", v);
	CHECK(ioctl(fd, 0x5382 /* SCSI_IOCTL_GET_IDLUN */, idlun) == 0,
	      "SCSI_IOCTL_GET_IDLUN");
	CHECK(ioctl(fd, SG_GET_RESERVED_SIZE, &v) == 0 && v >= 65536,
	      "SG_GET_RESERVED_SIZE %d", v);
	CHECK(ioctl(fd, SG_GET_VERSION_NUM, hole) == -1 && errno == EFAULT,
	      "SG_GET_VERSION_NUM into unmapped memory");
	v = 5 * 100;			/* 5 s in USER_HZ */
	CHECK(ioctl(fd, SG_SET_TIMEOUT, &v) == 0 && ioctl(fd, SG_GET_TIMEOUT, 0) == 500,
	      "SG_SET_TIMEOUT/SG_GET_TIMEOUT");
	v = -1;
	CHECK(ioctl(fd, SG_SET_TIMEOUT, &v) == -1 && errno == EINVAL,
	      "SG_SET_TIMEOUT -1");
	CHECK(ioctl(fd, 0x22ff, 0) == -1 && errno == ENOTTY, "unknown ioctl");

	printf("sgfuzz check %s: %d failure(s)\n", dev, failures);
	close(rofd);
	close(fd);
	return failures ? 1 : 0;
}

/* ---- send: one CDB, for permission checks ---- */

static int send(const char *dev, char **argv, int argc)
{
	unsigned char cdb[32];
	struct sg_io_hdr h;
	unsigned int len = 0;
	int dir = SG_DXFER_NONE, fd, i, rc, rw;
	char *end = "";

	rw = argc >= 1 && !strcmp(argv[0], "rw");
	if (argc < 3 || argc > 2 + (int)sizeof(cdb) ||
	    (!rw && strcmp(argv[0], "ro")))
		goto usage;
	if (!strncmp(argv[1], "in", 2)) {
		dir = SG_DXFER_FROM_DEV;
		len = strtoul(argv[1] + 2, &end, 0);
	} else if (!strncmp(argv[1], "out", 3)) {
		dir = SG_DXFER_TO_DEV;
		len = strtoul(argv[1] + 3, &end, 0);
	} else if (strcmp(argv[1], "none")) {
		goto usage;
	}
	if (*end || (dir != SG_DXFER_NONE && !len) || len > BUF_BYTES)
		goto usage;
	for (i = 2; i < argc; i++) {
		cdb[i - 2] = strtoul(argv[i], &end, 16);
		if (*end || end == argv[i])
			goto usage;
	}
	buf = calloc(1, BUF_BYTES);
	fd = open(dev, rw ? O_RDWR : O_RDONLY);
	if (!buf || fd < 0) {
		perror(dev);
		return 2;
	}
	hdr_init(&h, cdb, argc - 2, dir, len ? buf : NULL, len);
	rc = sgio(fd, &h);
	close(fd);
	if (rc)
		printf("%s\n", strerrorname_np(-rc));
	else if (!h.status && !h.host_status && !h.driver_status)
		printf("ok\n");
	else
		printf("status 0x%x host 0x%x driver 0x%x key 0x%x asc 0x%x\n",
		       h.status, h.host_status, h.driver_status, sbuf[2] & 0xf,
		       sbuf[12]);
	return 0;
usage:
	fprintf(stderr, "usage: sgfuzz DEV send ro|rw none|inLEN|outLEN CDB-BYTE...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct outcome o = { 0 };
	unsigned long n, i;
	int fd;

	if (argc >= 3 && !strcmp(argv[2], "send"))
		return send(argv[1], argv + 3, argc - 3);
	if (argc != 4 && !(argc == 3 && !strcmp(argv[2], "check"))) {
		fprintf(stderr, "usage: sgfuzz DEV ITERATIONS SEED | sgfuzz DEV check | sgfuzz DEV send ...\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	buf = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	robuf = mmap(NULL, 65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || robuf == MAP_FAILED || hole == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	munmap(hole, 65536);
	memset(buf, 0x5a, BUF_BYTES);
	read_capacity(fd);
	if (argc == 3) {
		close(fd);
		return check(argv[1]);
	}
	n = strtoul(argv[2], NULL, 0);
	rng = strtoull(argv[3], NULL, 0) | 1;

	for (i = 0; i < n; i++)
		one(fd, i, &o);

	printf("sgfuzz: %lu calls on %s (%llu blocks): %lu good, %lu check condition, %lu DID_ERROR, errno EINVAL %lu EFAULT %lu ENOMEM %lu, %lu unexpected\n",
	       n, argv[1], (unsigned long long)blocks, o.ok, o.check,
	       o.did_error, o.err[0], o.err[1], o.err[2], o.bad);
	close(fd);
	return o.bad ? 1 : 0;
}
