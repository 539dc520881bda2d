// SPDX-License-Identifier: GPL-2.0
/*
 * fragment - leave the guest's free memory in single pages.
 *
 *   fragment MIN_ORDER
 *
 * Takes memory 16 MiB at a time, locked (unevictable; with
 * vm.compact_unevictable_allowed=0 compaction cannot move it either) and
 * without huge pages, and at once gives back every page of it whose frame
 * number is odd (found through /proc/self/pagemap): its buddy stays taken,
 * so the page allocator cannot merge it into a larger block. Free memory
 * stays plentiful, but in single pages: it goes on until /proc/buddyinfo
 * shows no free block of MIN_ORDER or more outside the DMA zone. Then it
 * prints "fragmented: ..." and sleeps, holding what it took, until killed.
 * A kvmalloc() larger than a page then falls back to vmalloc
 * (tests/guest/frag_probe.sh).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK (16UL << 20)

/* Free blocks of @order or more, all zones but DMA. */
static long big_free_blocks(int order)
{
	char line[512], zone[32];
	long n = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "zone");
		int o = 0, len;
		long c;

		if (!p || sscanf(p, "zone %31s%n", zone, &len) != 1)
			continue;
		if (!strcmp(zone, "DMA"))
			continue;
		for (p += len; sscanf(p, "%ld%n", &c, &len) == 1; p += len, o++)
			if (o >= order)
				n += c;
	}
	fclose(f);
	return n;
}

/* Take one chunk and give back its odd frames; pages given back, or -1. */
static long take_chunk(int pagemap, long page)
{
	size_t i, n = CHUNK / page;
	uint64_t map[CHUNK / 4096];
	long freed = 0;
	char *mem;

	mem = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	if (madvise(mem, CHUNK, MADV_NOHUGEPAGE) || mlock(mem, CHUNK))
		return -1;
	if (pread(pagemap, map, n * sizeof(*map),
		  (uintptr_t)mem / page * sizeof(*map)) != (ssize_t)(n * sizeof(*map)))
		return -1;
	for (i = 0; i < n; i++) {
		/* bit 63: present; bits 0-54: the frame number (root only) */
		if (!(map[i] >> 63) || !(map[i] & ((1ULL << 55) - 1))) {
			fprintf(stderr, "fragment: no frame number (need root)\n");
			return -1;
		}
		if ((map[i] & 1) && !munmap(mem + i * page, page))
			freed++;
	}
	return freed;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), freed = 0, chunks = 0, r;
	/* each chunk keeps half of itself: stop before that is all memory */
	long max_chunks = sysconf(_SC_PHYS_PAGES) / (CHUNK / page) * 2 * 9 / 10;
	int order, pagemap;

	if (argc != 2 || (order = atoi(argv[1])) < 1 || page != 4096) {
		fprintf(stderr, "usage: fragment MIN_ORDER (>= 1; 4 KiB pages)\n");
		return 2;
	}
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (pagemap < 0) {
		perror("fragment: /proc/self/pagemap");
		return 1;
	}
	while (big_free_blocks(order) > 0) {
		r = take_chunk(pagemap, page);
		if (r < 0) {
			perror("fragment: chunk");
			return 1;
		}
		freed += r;
		if (++chunks > max_chunks) {
			fprintf(stderr, "fragment: blocks of order %d remain\n", order);
			return 1;
		}
	}
	printf("fragmented: %ld MiB taken, %ld pages given back, no free block of order >= %d\n",
	       chunks * (CHUNK >> 20), freed, order);
	fflush(stdout);
	for (;;)
		pause();
}
