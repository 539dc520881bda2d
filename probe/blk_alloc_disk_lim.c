// SPDX-License-Identifier: GPL-2.0
/* 6.9: blk_alloc_disk() (a bio-based disk) takes the queue limits. */
#include <linux/blkdev.h>

struct gendisk *probe(struct queue_limits *lim);
struct gendisk *probe(struct queue_limits *lim)
{
	return blk_alloc_disk(lim, NUMA_NO_NODE);
}
