// SPDX-License-Identifier: GPL-2.0
/* 6.3: bdev_end_io_acct() takes the sector count (counted at the end). */
#include <linux/blkdev.h>

void probe(struct block_device *bdev);
void probe(struct block_device *bdev)
{
	bdev_end_io_acct(bdev, REQ_OP_READ, 8, jiffies);
}
