// SPDX-License-Identifier: GPL-2.0
/* After 6.12 (7.2 has it): registered buffers described by an iovec array. */
#include <linux/io_uring/cmd.h>

int probe(struct io_uring_cmd *c, const struct iovec __user *v,
	  struct iov_iter *it, unsigned int f);
int probe(struct io_uring_cmd *c, const struct iovec __user *v,
	  struct iov_iter *it, unsigned int f)
{
	return io_uring_cmd_import_fixed_vec(c, v, 2, READ, it, f);
}
