// SPDX-License-Identifier: GPL-2.0
/* After 6.12: destroy_timer_on_stack() became timer_destroy_on_stack(). */
#include <linux/timer.h>

void probe(struct timer_list *t);
void probe(struct timer_list *t)
{
	timer_destroy_on_stack(t);
}
