// SPDX-License-Identifier: GPL-2.0
/* After 6.12 (7.2 has it): io_uring_cmd_done() lost its res2 (see done32). */
#include <linux/io_uring/cmd.h>

void probe(struct io_uring_cmd *c, unsigned int issue_flags);
void probe(struct io_uring_cmd *c, unsigned int issue_flags)
{
	io_uring_cmd_done(c, 0, issue_flags);
}
