// SPDX-License-Identifier: GPL-2.0
/* 6.5: block_device_operations open with blk_mode_t and BLK_OPEN_*. */
#include <linux/blkdev.h>

blk_mode_t probe(void);
blk_mode_t probe(void)
{
	return BLK_OPEN_WRITE;
}
