// SPDX-License-Identifier: GPL-2.0
/* After 6.12: blk_queue_rot() (a rotational flag) replaced blk_queue_nonrot(). */
#include <linux/blkdev.h>

bool probe(struct request_queue *q);
bool probe(struct request_queue *q)
{
	return blk_queue_rot(q);
}
