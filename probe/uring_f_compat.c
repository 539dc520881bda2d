// SPDX-License-Identifier: GPL-2.0
/* 6.12 has it (6.1 does not): issue_flags say whether the ring is compat. */
#include <linux/io_uring/cmd.h>

int probe(unsigned int issue_flags);
int probe(unsigned int issue_flags)
{
	return issue_flags & IO_URING_F_COMPAT;
}
