// SPDX-License-Identifier: GPL-2.0
/* The tracepoints of vbblk_trace.h, defined once, below every layer. */
#define CREATE_TRACE_POINTS
#include "vbblk_trace.h"
