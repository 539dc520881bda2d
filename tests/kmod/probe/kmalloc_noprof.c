// SPDX-License-Identifier: GPL-2.0
/*
 * 6.10: memory allocation profiling renamed the allocators (_noprof),
 * which vbfault's kprobes are keyed on.
 */
#include <linux/slab.h>

void *probe(size_t size);
void *probe(size_t size)
{
	return kmalloc_noprof(size, GFP_KERNEL);
}
