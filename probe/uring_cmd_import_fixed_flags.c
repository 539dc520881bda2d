// SPDX-License-Identifier: GPL-2.0
/* After 6.12 (7.2 has it): io_uring_cmd_import_fixed() takes issue flags. */
#include <linux/io_uring/cmd.h>

int probe(struct io_uring_cmd *c, struct iov_iter *it, unsigned int f);
int probe(struct io_uring_cmd *c, struct iov_iter *it, unsigned int f)
{
	return io_uring_cmd_import_fixed(0, 0, READ, it, c, f);
}
