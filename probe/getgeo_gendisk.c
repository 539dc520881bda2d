// SPDX-License-Identifier: GPL-2.0
/* After 6.12: block_device_operations.getgeo takes the gendisk. */
#include <linux/blkdev.h>
#include <linux/hdreg.h>

static int probe_getgeo(struct gendisk *disk, struct hd_geometry *geo)
{
	return 0;
}

const struct block_device_operations probe_fops = {
	.getgeo = probe_getgeo,
};
