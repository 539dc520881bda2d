// SPDX-License-Identifier: GPL-2.0
/* 6.9: blk_mq_alloc_disk() takes the queue limits. */
#include <linux/blk-mq.h>

struct gendisk *probe(struct blk_mq_tag_set *set, struct queue_limits *lim);
struct gendisk *probe(struct blk_mq_tag_set *set, struct queue_limits *lim)
{
	return blk_mq_alloc_disk(set, lim, NULL);
}
