// SPDX-License-Identifier: GPL-2.0
/* 6.5: task work that may wait for more completions before waking. */
#include <linux/io_uring/cmd.h>

void probe(struct io_uring_cmd *c);
void probe(struct io_uring_cmd *c)
{
	io_uring_cmd_do_in_task_lazy(c, NULL);
}
