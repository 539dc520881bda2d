// SPDX-License-Identifier: GPL-2.0
/*
 * fragment - leave the guest's free memory in single pages.
 *
 *   fragment RESERVE_MB
 *
 * Takes all free memory but RESERVE_MB, locked (unevictable; with
 * vm.compact_unevictable_allowed=0 compaction cannot move it either),
 * then gives back every page whose frame number is odd, found through
 * /proc/self/pagemap: its buddy stays taken, so the page allocator cannot
 * merge it into a larger block. Prints "fragmented: N pages freed" and
 * then sleeps, holding the rest, until killed. For the vmalloc test
 * (tests/guest/frag_probe.sh): a kvmalloc() larger than a page then
 * falls back to vmalloc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static long meminfo_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			v = atol(line + strlen(key) + 1);
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), reserve, avail, freed = 0;
	size_t len, i, npages;
	uint64_t *map;
	char *mem;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: fragment RESERVE_MB\n");
		return 2;
	}
	reserve = atol(argv[1]) << 10;
	avail = meminfo_kb("MemFree");
	if (avail <= reserve) {
		fprintf(stderr, "fragment: only %ld KiB free\n", avail);
		return 1;
	}
	len = (size_t)(avail - reserve) << 10;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED, -1, 0);
	if (mem == MAP_FAILED) {
		perror("fragment: mmap");
		return 1;
	}
	npages = len / page;
	map = malloc(npages * sizeof(*map));
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (!map || fd < 0 ||
	    pread(fd, map, npages * sizeof(*map),
		  (uintptr_t)mem / page * sizeof(*map)) != (ssize_t)(npages * sizeof(*map))) {
		perror("fragment: pagemap");
		return 1;
	}
	close(fd);
	for (i = 0; i < npages; i++) {
		/* bit 63: present; bits 0-54: the frame number (root only) */
		if (!(map[i] >> 63) || !(map[i] & ((1ULL << 55) - 1))) {
			fprintf(stderr, "fragment: no frame number (need root)\n");
			return 1;
		}
		if ((map[i] & 1) && !munmap(mem + i * page, page))
			freed++;
	}
	printf("fragmented: %ld pages freed\n", freed);
	fflush(stdout);
	for (;;)
		pause();
}
