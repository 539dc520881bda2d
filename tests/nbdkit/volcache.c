// SPDX-License-Identifier: GPL-2.0
/*
 * volcache: an nbdkit plugin that behaves like a disk with a volatile
 * write cache, for the power-cut test (tests/groups/flush/powercut.py).
 *
 *   nbdkit -U SOCK ./volcache.so file=IMG [keep=PCT|random] [seed=N] [stats=FILE]
 *
 * Writes land in a per-connection copy of the disk and are marked dirty,
 * sector by sector. NBD_CMD_FLUSH writes every dirty sector to IMG; a FUA
 * write goes to IMG at once. When the connection ends (QEMU killed: the
 * power cut) the dirty sectors are lost, except a random subset of them
 * that reaches IMG, each sector on its own: a cache that was part-way
 * through writing back. keep=PCT keeps each dirty sector with that
 * probability; keep=random (default) draws PCT anew at every cut. One line
 * per cut goes to stats: "dirty N kept M pct P".
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_SERIALIZE_ALL_REQUESTS
#define SECTOR 512

static const char *img, *stats;
static int keep = -1;			/* -1: random per cut */
static uint64_t rng = 88172645463325252ULL;
static int fd = -1;
static int64_t size;

struct conn {
	unsigned char *data;		/* what the guest sees */
	unsigned char *dirty;		/* one byte per sector */
	uint64_t ndirty;
};

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int vc_config(const char *key, const char *value)
{
	if (!strcmp(key, "file")) {
		img = value;
	} else if (!strcmp(key, "keep")) {
		keep = strcmp(value, "random") ? atoi(value) : -1;
		if (keep > 100)
			keep = 100;
	} else if (!strcmp(key, "seed")) {
		rng = strtoull(value, NULL, 0) | 1;
	} else if (!strcmp(key, "stats")) {
		stats = value;
	} else {
		nbdkit_error("unknown parameter %s", key);
		return -1;
	}
	return 0;
}

static int vc_config_complete(void)
{
	struct stat st;

	if (!img) {
		nbdkit_error("file= is required");
		return -1;
	}
	fd = open(img, O_RDWR);
	if (fd < 0 || fstat(fd, &st)) {
		nbdkit_error("%s: %m", img);
		return -1;
	}
	size = st.st_size / SECTOR * SECTOR;
	return 0;
}

static int write_back(const unsigned char *p, uint64_t off, uint64_t len)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			nbdkit_error("pwrite: %m");
			return -1;
		}
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void *vc_open(int readonly)
{
	struct conn *c = calloc(1, sizeof(*c));
	uint64_t off;

	(void)readonly;
	if (!c)
		return NULL;
	c->data = malloc(size);
	c->dirty = calloc(size / SECTOR, 1);
	if (!c->data || !c->dirty)
		goto fail;
	for (off = 0; off < (uint64_t)size;) {
		ssize_t n = pread(fd, c->data + off, size - off, off);

		if (n <= 0)
			goto fail;
		off += n;
	}
	return c;
fail:
	nbdkit_error("open: out of memory or read error");
	free(c->data);
	free(c->dirty);
	free(c);
	return NULL;
}

/* Write dirty sectors [first, last) back to the image, in runs. */
static int flush_range(struct conn *c, uint64_t first, uint64_t last)
{
	uint64_t s = first, e;

	while (s < last) {
		if (!c->dirty[s]) {
			s++;
			continue;
		}
		for (e = s; e < last && c->dirty[e]; e++)
			c->dirty[e] = 0;
		c->ndirty -= e - s;
		if (write_back(c->data + s * SECTOR, s * SECTOR, (e - s) * SECTOR))
			return -1;
		s = e;
	}
	return 0;
}

/* The power cut: a random subset of the dirty sectors survives. */
static void vc_close(void *handle)
{
	struct conn *c = handle;
	uint64_t s, kept = 0, n = size / SECTOR;
	int pct = keep >= 0 ? keep : (int)(rnd() % 101);
	FILE *f;

	for (s = 0; s < n; s++) {
		if (!c->dirty[s])
			continue;
		if ((int)(rnd() % 100) < pct) {
			write_back(c->data + s * SECTOR, s * SECTOR, SECTOR);
			kept++;
		}
	}
	if (stats && (f = fopen(stats, "a"))) {
		fprintf(f, "dirty %llu kept %llu pct %d\n",
			(unsigned long long)c->ndirty, (unsigned long long)kept, pct);
		fclose(f);
	}
	free(c->data);
	free(c->dirty);
	free(c);
}

static int64_t vc_get_size(void *handle)
{
	(void)handle;
	return size;
}

static int vc_can_flush(void *handle)
{
	(void)handle;
	return 1;
}

static int vc_can_fua(void *handle)
{
	(void)handle;
	return NBDKIT_FUA_NATIVE;
}

static int vc_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		    uint32_t flags)
{
	struct conn *c = handle;

	(void)flags;
	memcpy(buf, c->data + offset, count);
	return 0;
}

static int vc_pwrite(void *handle, const void *buf, uint32_t count,
		     uint64_t offset, uint32_t flags)
{
	struct conn *c = handle;
	uint64_t s, first = offset / SECTOR, last = (offset + count + SECTOR - 1) / SECTOR;

	memcpy(c->data + offset, buf, count);
	for (s = first; s < last; s++) {
		c->ndirty += !c->dirty[s];
		c->dirty[s] = 1;
	}
	if (flags & NBDKIT_FLAG_FUA)
		return flush_range(c, first, last);
	return 0;
}

static int vc_flush(void *handle, uint32_t flags)
{
	struct conn *c = handle;

	(void)flags;
	return flush_range(c, 0, size / SECTOR);
}

static struct nbdkit_plugin plugin = {
	.name			= "volcache",
	.longname		= "disk with a volatile write cache",
	.config			= vc_config,
	.config_complete	= vc_config_complete,
	.open			= vc_open,
	.close			= vc_close,
	.get_size		= vc_get_size,
	.can_flush		= vc_can_flush,
	.can_fua		= vc_can_fua,
	.pread			= vc_pread,
	.pwrite			= vc_pwrite,
	.flush			= vc_flush,
};

NBDKIT_REGISTER_PLUGIN(plugin)
