// SPDX-License-Identifier: GPL-2.0
/* 6.11: the misaligned limit is a bit of queue_limits.flags. */
#include <linux/blkdev.h>

bool probe(const struct queue_limits *lim);
bool probe(const struct queue_limits *lim)
{
	return lim->flags & BLK_FLAG_MISALIGNED;
}
