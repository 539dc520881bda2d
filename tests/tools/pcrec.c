// SPDX-License-Identifier: GPL-2.0
/*
 * pcrec: checksummed, sequence-numbered records for the power-cut test.
 *
 *   pcrec dsync     PATH OFFSET SLOTS NAME FIRST   O_DIRECT|O_DSYNC writes
 *   pcrec fdatasync PATH OFFSET SLOTS NAME FIRST   buffered writes + fdatasync
 *   pcrec fsync     PATH OFFSET SLOTS NAME FIRST   buffered writes + fsync
 *   pcrec verify    PATH OFFSET SLOTS NAME LAST
 *
 * A writer writes record FIRST, FIRST+1, ... into slot seq % SLOTS (512
 * bytes each, from OFFSET) and prints "ACK NAME SEQ" only once the durability
 * call for it has returned. It runs until killed. verify checks that the
 * records LAST-SLOTS+1 .. LAST (those still in their slots) are there,
 * byte for byte, or overwritten by a newer intact record (written after the
 * last acknowledgement seen); LAST < 0 checks nothing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One sector: a disk writes a sector whole or not at all, so never torn. */
#define REC 512

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 14695981039346656037ULL;

	while (n--)
		h = (h ^ *b++) * 1099511628211ULL;
	return h;
}

/* magic, name, seq, checksum of the record (field zeroed), payload */
static void make(unsigned char *r, const char *name, uint64_t seq)
{
	uint64_t x = fnv(name, strlen(name)) ^ (seq * 0x9e3779b97f4a7c15ULL) ^ 1;
	uint64_t sum;
	size_t i;

	memset(r, 0, 32);
	memcpy(r, "VBPCREC1", 8);
	strncpy((char *)r + 8, name, 8);
	memcpy(r + 16, &seq, 8);
	for (i = 32; i < REC; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(r + i, &x, 8);
	}
	sum = fnv(r, REC);
	memcpy(r + 24, &sum, 8);
}

/*
 * Is record @seq in its slot? A later record in the slot is fine when it is
 * newer than @last: written after the last acknowledgement the host saw.
 */
static int check_one(const unsigned char *got, const char *name, uint64_t seq,
		     long long last, unsigned char *want)
{
	uint64_t stored, slot_seq;
	unsigned char tmp[REC];
	int intact;

	make(want, name, seq);
	if (!memcmp(got, want, REC))
		return 0;
	memcpy(tmp, got, REC);
	memcpy(&stored, tmp + 24, 8);
	memset(tmp + 24, 0, 8);
	memcpy(&slot_seq, got + 16, 8);
	intact = !memcmp(got, "VBPCREC1", 8) && !strncmp((const char *)got + 8, name, 8) &&
		 fnv(tmp, REC) == stored;
	if (intact && slot_seq > (uint64_t)last && slot_seq > seq)
		return 0;
	printf("pcrec: %s record %" PRIu64 " lost: the slot holds %s\n", name, seq,
	       !intact ? "a torn or empty block" :
	       slot_seq < seq ? "an older record" : "an unexpected record");
	return 1;
}

int main(int argc, char **argv)
{
	unsigned char *r, want[REC];
	const char *mode, *path, *name;
	uint64_t off, slots, seq;
	long long first;
	int fd, flags, bad = 0;

	if (argc != 7) {
		fprintf(stderr, "usage: pcrec dsync|fdatasync|fsync|verify PATH OFFSET SLOTS NAME SEQ\n");
		return 2;
	}
	mode = argv[1];
	path = argv[2];
	off = strtoull(argv[3], NULL, 0);
	slots = strtoull(argv[4], NULL, 0);
	name = argv[5];
	first = strtoll(argv[6], NULL, 0);
	if (!slots || strlen(name) > 8 || posix_memalign((void **)&r, REC, REC))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(mode, "verify")) {
		long long s = first - (long long)slots + 1;
		uint64_t n = 0;

		fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		for (s = s < 0 ? 0 : s; s <= first; s++, n++) {
			if (pread(fd, r, REC, off + (s % slots) * REC) != REC) {
				printf("pcrec: %s record %lld: short read\n", name, s);
				bad++;
				continue;
			}
			bad += check_one(r, name, s, first, want);
		}
		printf("pcrec: %s: %" PRIu64 " acknowledged records checked, %d bad\n", name, n, bad);
		return bad ? 1 : 0;
	}

	flags = O_RDWR;
	if (!strcmp(mode, "dsync"))
		flags |= O_DIRECT | O_DSYNC;
	else if (!strcmp(mode, "fsync"))
		flags |= O_CREAT;
	else if (strcmp(mode, "fdatasync"))
		return 2;
	/* O_DIRECT needs the buffer aligned to the logical block, REC is one */
	fd = open(path, flags, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	for (seq = first; ; seq++) {
		make(r, name, seq);
		if (pwrite(fd, r, REC, off + (seq % slots) * REC) != REC) {
			perror("pwrite");
			return 1;
		}
		if ((!strcmp(mode, "fdatasync") && fdatasync(fd)) ||
		    (!strcmp(mode, "fsync") && fsync(fd))) {
			perror("sync");
			return 1;
		}
		printf("ACK %s %" PRIu64 "\n", name, seq);
	}
}
