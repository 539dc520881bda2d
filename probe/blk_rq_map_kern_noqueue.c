// SPDX-License-Identifier: GPL-2.0
/* After 6.12: blk_rq_map_kern() no longer takes the request's queue. */
#include <linux/blk-mq.h>

int probe(struct request *rq, void *buf);
int probe(struct request *rq, void *buf)
{
	return blk_rq_map_kern(rq, buf, 512, GFP_KERNEL);
}
