// SPDX-License-Identifier: GPL-2.0
/* 6.3: pages of an iterator pinned (user memory) or borrowed (bvecs). */
#include <linux/uio.h>

ssize_t probe(struct iov_iter *it, struct page **p, size_t *off);
ssize_t probe(struct iov_iter *it, struct page **p, size_t *off)
{
	return iov_iter_extract_pages(it, &p, 4096, 1, 0, off) +
	       iov_iter_extract_will_pin(it);
}
