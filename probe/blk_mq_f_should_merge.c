// SPDX-License-Identifier: GPL-2.0
/* Until after 6.12: a tag set asks for bio merging with a flag. */
#include <linux/blk-mq.h>

unsigned int probe(void);
unsigned int probe(void)
{
	return BLK_MQ_F_SHOULD_MERGE;
}
