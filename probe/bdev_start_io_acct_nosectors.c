// SPDX-License-Identifier: GPL-2.0
/* 6.3: bdev_start_io_acct() no longer takes the sector count. */
#include <linux/blkdev.h>

unsigned long probe(struct block_device *bdev);
unsigned long probe(struct block_device *bdev)
{
	return bdev_start_io_acct(bdev, REQ_OP_READ, jiffies);
}
