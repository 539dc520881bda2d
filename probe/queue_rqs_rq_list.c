// SPDX-License-Identifier: GPL-2.0
/* From 6.12: blk_mq_ops.queue_rqs takes a struct rq_list, head and tail. */
#include <linux/blk-mq.h>

static void probe_queue_rqs(struct rq_list *rqlist)
{
	rq_list_init(rqlist);
}

const struct blk_mq_ops probe_ops = {
	.queue_rqs = probe_queue_rqs,
};
