// SPDX-License-Identifier: GPL-2.0
/* After 6.12 (7.2 has it): task-work callbacks take an io_tw_req, a token. */
#include <linux/io_uring/cmd.h>

static void probe_tw(struct io_tw_req tw_req, io_tw_token_t tw)
{
}

void probe(struct io_uring_cmd *c);
void probe(struct io_uring_cmd *c)
{
	io_uring_cmd_complete_in_task(c, probe_tw);
}
