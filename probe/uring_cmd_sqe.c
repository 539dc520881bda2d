// SPDX-License-Identifier: GPL-2.0
/*
 * 6.6: a uring_cmd's command bytes are reached through its ->sqe. Probed
 * with linux/io_uring/cmd.h (6.7), as the compat header includes it.
 */
#include <linux/io_uring/cmd.h>

const void *probe(struct io_uring_cmd *c);
const void *probe(struct io_uring_cmd *c)
{
	return c->sqe->cmd;
}
