// SPDX-License-Identifier: GPL-2.0
/*
 * 6.5 to 6.7: blkdev_get_by_path() takes blk_mode_t and holder ops.
 * Untested: no kernel tested here has it.
 */
#include <linux/blkdev.h>

struct block_device *probe(const char *path);
struct block_device *probe(const char *path)
{
	return blkdev_get_by_path(path, BLK_OPEN_READ, NULL, NULL);
}
