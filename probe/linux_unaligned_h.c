// SPDX-License-Identifier: GPL-2.0
/* 6.12: the unaligned access helpers moved from asm/ to linux/unaligned.h. */
#include <linux/unaligned.h>

u32 probe(const void *p);
u32 probe(const void *p)
{
	return get_unaligned_le32(p);
}
