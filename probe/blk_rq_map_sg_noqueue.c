// SPDX-License-Identifier: GPL-2.0
/* After 6.12: blk_rq_map_sg() no longer takes the request's queue. */
#include <linux/blk-mq.h>

int probe(struct request *rq, struct scatterlist *sgl);
int probe(struct request *rq, struct scatterlist *sgl)
{
	return blk_rq_map_sg(rq, sgl);
}
