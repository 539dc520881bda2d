// SPDX-License-Identifier: GPL-2.0
/* 6.9: blk_mq_alloc_queue() replaced blk_mq_init_queue(), with limits. */
#include <linux/blk-mq.h>

struct request_queue *probe(struct blk_mq_tag_set *set,
			    struct queue_limits *lim);
struct request_queue *probe(struct blk_mq_tag_set *set,
			    struct queue_limits *lim)
{
	return blk_mq_alloc_queue(set, lim, NULL);
}
