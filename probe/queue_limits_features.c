// SPDX-License-Identifier: GPL-2.0
/*
 * 6.11: queue features (write cache, FUA, nowait, poll, I/O stats) are
 * bits in queue_limits.features, changed by a limits update, instead of
 * queue flags.
 */
#include <linux/blkdev.h>

int probe(struct request_queue *q);
int probe(struct request_queue *q)
{
	struct queue_limits lim = queue_limits_start_update(q);

	lim.features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA | BLK_FEAT_NOWAIT |
			BLK_FEAT_POLL | BLK_FEAT_IO_STAT;
	return queue_limits_commit_update(q, &lim);
}
