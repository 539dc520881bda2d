// SPDX-License-Identifier: GPL-2.0
/*
 * After 6.12: blk_mq_freeze_queue() returns the task's memalloc flags, which
 * blk_mq_unfreeze_queue() restores.
 */
#include <linux/blk-mq.h>

void probe(struct request_queue *q);
void probe(struct request_queue *q)
{
	unsigned int memflags = blk_mq_freeze_queue(q);

	blk_mq_unfreeze_queue(q, memflags);
}
