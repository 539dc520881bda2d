// SPDX-License-Identifier: GPL-2.0
/* 6.7: struct io_uring_cmd and its helpers moved to linux/io_uring/cmd.h. */
#include <linux/io_uring/cmd.h>

u32 probe(struct io_uring_cmd *c);
u32 probe(struct io_uring_cmd *c)
{
	return c->cmd_op;
}
