// SPDX-License-Identifier: GPL-2.0
/* After 6.12: a bio's inline vectors are reached by bio_inline_vecs(). */
#include <linux/bio.h>

struct bio_vec *probe(struct bio *bio);
struct bio_vec *probe(struct bio *bio)
{
	return bio_inline_vecs(bio);
}
