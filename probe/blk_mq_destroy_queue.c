// SPDX-License-Identifier: GPL-2.0
/* Required (6.0): the oldest API vbblk uses without a shim; 6.1 is the floor. */
#include <linux/blk-mq.h>

void probe(struct request_queue *q);
void probe(struct request_queue *q)
{
	blk_mq_destroy_queue(q);
}
