// SPDX-License-Identifier: MIT
/*
 * vbblk-uring - a starting point for an application of vbblk's io_uring
 * passthrough node, /dev/vbblk/<disk>. Copy it, the licence is MIT.
 *
 * It takes the steps an application takes, one command at a time:
 *   1. open the node and set up a ring with 128-byte SQEs (the command
 *      goes in the SQE's command area);
 *   2. GET_ID: the disk's serial, into a plain buffer;
 *   3. register one buffer with io_uring (no page pinning per command);
 *   4. WRITE a pattern from the registered buffer;
 *   5. FLUSH: the write is durable once it completes;
 *   6. READ it back on a second, polled ring (IORING_SETUP_IOPOLL: the
 *      completion is reaped by polling the disk's poll queue, when the
 *      driver was loaded with poll_queues=1 or more), and compare.
 *
 * Everything it needs is in <linux/vbblk.h> (the driver's uAPI header,
 * include/uapi/linux/vbblk.h in its tree) and liburing.
 *
 *   build: make examples
 *          (or cc -O2 -Iinclude/uapi ... -luring, from the tree's top)
 *   run:   vbblk-uring [-s SECTOR] [-k KIB] /dev/vbblk/vdb
 *
 * It OVERWRITES KIB KiB (64) at SECTOR (2048) of the disk: use a scratch
 * disk. Each 64-byte line of the pattern reads
 * "vbblk-uring sector <sector> line <0..7>", space-padded, ending in '\n',
 * so the data can be checked through the block device too. It prints one
 * line per step, exits 0 when every step did what it should and 1, with
 * the step and the errno, when one did not.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/vbblk.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define RING_ENTRIES	8
#define LINE_BYTES	64

/*
 * Send one passthrough command and wait for its completion; returns the
 * completion's res: the bytes moved (0 for FLUSH) or a negative errno.
 * With @fixed, the data is in registered buffer 0 (@c->addr still points
 * at it: the driver checks the range against the registration).
 */
static int vbblk_cmd(struct io_uring *ring, int fd,
		     const struct vbblk_uring_cmd *c, bool fixed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	/* an SQE128 slot is two SQEs wide: clear both halves */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = VBBLK_URING_CMD_IO;
	if (fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = 0;
	}
	/* the command goes in the SQE's command area (80 bytes at byte 48) */
	memcpy(sqe->cmd, c, sizeof(*c));

	/* on an IOPOLL ring this call also polls for the completion */
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/* The pattern: 64-byte text lines naming their sector and line. */
static void fill_pattern(char *buf, unsigned long long sector, size_t len)
{
	char text[LINE_BYTES], line[LINE_BYTES + 1];
	size_t off;

	for (off = 0; off < len; off += LINE_BYTES) {
		snprintf(text, sizeof(text), "vbblk-uring sector %-10llu line %zu",
			 sector + off / 512, (off % 512) / LINE_BYTES);
		snprintf(line, sizeof(line), "%-63s\n", text);
		memcpy(buf + off, line, LINE_BYTES);
	}
}

/* Report a step's result; true when it is what the step expects. */
static bool step(const char *what, int res, int want)
{
	if (res == want)
		return true;
	if (res < 0)
		fprintf(stderr, "vbblk-uring: %s: %s (res %d)\n", what,
			strerror(-res), res);
	else
		fprintf(stderr, "vbblk-uring: %s: res %d, expected %d\n", what,
			res, want);
	return false;
}

static void print_usage(void)
{
	fprintf(stderr, "usage: vbblk-uring [-s SECTOR] [-k KIB] /dev/vbblk/<disk>\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long sector = 2048;
	size_t len = 64 * 1024;
	char id[VBBLK_ID_BYTES + 1] = "";
	struct io_uring ring, pring;
	struct vbblk_uring_cmd c;
	struct iovec iov;
	char *buf, *want;
	int fd, opt, ret;

	while ((opt = getopt(argc, argv, "s:k:")) != -1) {
		if (opt == 's')
			sector = strtoull(optarg, NULL, 0);
		else if (opt == 'k')
			len = strtoul(optarg, NULL, 0) * 1024;
		else
			print_usage();
	}
	/* the node never splits a command: keep within max_segments pages */
	if (optind != argc - 1 || !len || len % 4096 || len > 256 * 1024)
		print_usage();

	/* 1. The node; O_RDWR, since WRITE needs a descriptor open for writing. */
	fd = open(argv[optind], O_RDWR);
	if (fd < 0) {
		perror(argv[optind]);
		return 1;
	}
	ret = io_uring_queue_init(RING_ENTRIES, &ring, IORING_SETUP_SQE128);
	if (!step("ring", ret, 0))
		return 1;
	printf("node: %s\n", argv[optind]);

	/* 2. GET_ID: exactly VBBLK_ID_BYTES, NUL-padded; a plain buffer. */
	c = (struct vbblk_uring_cmd){
		.opcode = VBBLK_OP_GET_ID,
		.addr = (uintptr_t)id,
		.len = VBBLK_ID_BYTES,
	};
	if (!step("get_id", vbblk_cmd(&ring, fd, &c, false), VBBLK_ID_BYTES))
		return 1;
	printf("get_id: %s\n", id);

	/*
	 * 3. A registered buffer: aligned to a page (the node needs the DMA
	 * alignment, /sys/block/<disk>/queue/dma_alignment, at least), pinned
	 * once here instead of once per command.
	 */
	want = malloc(len);
	if (!want || posix_memalign((void **)&buf, 4096, len)) {
		fprintf(stderr, "vbblk-uring: out of memory\n");
		return 1;
	}
	iov.iov_base = buf;
	iov.iov_len = len;
	if (!step("register", io_uring_register_buffers(&ring, &iov, 1), 0))
		return 1;
	printf("register: 1 buffer, %zu bytes\n", len);

	/* 4. WRITE: sector in 512-byte units, len in bytes. */
	fill_pattern(buf, sector, len);
	memcpy(want, buf, len);
	c = (struct vbblk_uring_cmd){
		.opcode = VBBLK_OP_WRITE,
		.sector = sector,
		.addr = (uintptr_t)buf,
		.len = len,
	};
	if (!step("write", vbblk_cmd(&ring, fd, &c, true), len))
		return 1;
	printf("write: sector %llu, %zu bytes, registered buffer\n", sector, len);

	/*
	 * 5. FLUSH: every write completed before it is durable when it
	 * completes (at once on a device with no volatile cache). Every
	 * other field stays zero.
	 */
	c = (struct vbblk_uring_cmd){ .opcode = VBBLK_OP_FLUSH };
	if (!step("flush", vbblk_cmd(&ring, fd, &c, false), 0))
		return 1;
	printf("flush: done\n");

	/*
	 * 6. A polled ring. Its commands go to the disk's poll queues and
	 * raise no interrupt; without poll queues (poll_queues=0) they
	 * complete by interrupt and io_uring still reaps them. Each ring has
	 * its own buffer registrations.
	 */
	ret = io_uring_queue_init(RING_ENTRIES, &pring,
				  IORING_SETUP_SQE128 | IORING_SETUP_IOPOLL);
	if (!step("polled ring", ret, 0))
		return 1;
	if (!step("register (polled ring)",
		  io_uring_register_buffers(&pring, &iov, 1), 0))
		return 1;
	memset(buf, 0, len);
	c = (struct vbblk_uring_cmd){
		.opcode = VBBLK_OP_READ,
		.sector = sector,
		.addr = (uintptr_t)buf,
		.len = len,
	};
	if (!step("read (polled)", vbblk_cmd(&pring, fd, &c, true), len))
		return 1;
	printf("read: sector %llu, %zu bytes, polled ring, registered buffer\n",
	       sector, len);
	if (memcmp(buf, want, len)) {
		fprintf(stderr, "vbblk-uring: verify: the data read differs from the data written\n");
		return 1;
	}
	printf("verify: %zu bytes as written\n", len);

	io_uring_queue_exit(&pring);
	io_uring_queue_exit(&ring);
	close(fd);
	free(want);
	free(buf);
	printf("ok\n");
	return 0;
}
