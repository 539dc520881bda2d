// SPDX-License-Identifier: GPL-2.0
/* 6.2: del_timer_sync() became timer_delete_sync(). */
#include <linux/timer.h>

int probe(struct timer_list *t);
int probe(struct timer_list *t)
{
	return timer_delete_sync(t);
}
