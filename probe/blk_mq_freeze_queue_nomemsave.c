// SPDX-License-Identifier: GPL-2.0
/*
 * After 6.12: a queue frozen in one call and unfrozen in another (suspend
 * to resume) uses the variants that neither save nor restore memflags.
 */
#include <linux/blk-mq.h>

void probe(struct request_queue *q);
void probe(struct request_queue *q)
{
	blk_mq_freeze_queue_nomemsave(q);
	blk_mq_unfreeze_queue_nomemrestore(q);
}
