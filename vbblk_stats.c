// SPDX-License-Identifier: GPL-2.0
/*
 * Per-disk counters in /sys/block/vdX/vbblk/, one read-only file each.
 * Per-CPU while counting; summed when read, so exact once I/O is idle.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "vbblk.h"

struct vbblk_stat_attr {
	struct device_attribute attr;
	enum vbblk_stat stat;
};

static ssize_t vbblk_stat_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct vbblk *vblk = dev_to_disk(dev)->private_data;
	struct vbblk_stat_attr *sa = container_of(attr, struct vbblk_stat_attr,
						  attr);
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(vblk->stats, cpu)->c[sa->stat];
	return sysfs_emit(buf, "%llu\n", sum);
}

#define VBBLK_STAT_ATTR(_name, _stat)					\
	static struct vbblk_stat_attr vbblk_stat_attr_##_name = {	\
		.attr = __ATTR(_name, 0444, vbblk_stat_show, NULL),	\
		.stat = _stat,						\
	}

VBBLK_STAT_ATTR(bios, VBBLK_STAT_BIOS);
VBBLK_STAT_ATTR(uring_cmds, VBBLK_STAT_URING_CMDS);
VBBLK_STAT_ATTR(uring_polled_elsewhere, VBBLK_STAT_URING_POLLED_ELSEWHERE);
VBBLK_STAT_ATTR(uring_deferred, VBBLK_STAT_URING_DEFERRED);
VBBLK_STAT_ATTR(indirect_ring, VBBLK_STAT_INDIRECT_RING);
VBBLK_STAT_ATTR(requests, VBBLK_STAT_REQUESTS);
VBBLK_STAT_ATTR(flushes, VBBLK_STAT_FLUSHES);
VBBLK_STAT_ATTR(merged, VBBLK_STAT_MERGED);
VBBLK_STAT_ATTR(dispatch_direct, VBBLK_STAT_DISPATCH_DIRECT);
VBBLK_STAT_ATTR(dispatch_noncontig, VBBLK_STAT_DISPATCH_NONCONTIG);
VBBLK_STAT_ATTR(dispatch_limit, VBBLK_STAT_DISPATCH_LIMIT);
VBBLK_STAT_ATTR(dispatch_plug, VBBLK_STAT_DISPATCH_PLUG);
VBBLK_STAT_ATTR(dispatch_completion, VBBLK_STAT_DISPATCH_COMPLETION);
VBBLK_STAT_ATTR(dispatch_flush, VBBLK_STAT_DISPATCH_FLUSH);
VBBLK_STAT_ATTR(dispatch_drain, VBBLK_STAT_DISPATCH_DRAIN);
VBBLK_STAT_ATTR(dispatch_cpu_offline, VBBLK_STAT_DISPATCH_CPU_OFFLINE);
VBBLK_STAT_ATTR(notifies, VBBLK_STAT_NOTIFIES);
VBBLK_STAT_ATTR(plug_deferred, VBBLK_STAT_PLUG_DEFERRED);
VBBLK_STAT_ATTR(plug_callbacks, VBBLK_STAT_PLUG_CALLBACKS);
VBBLK_STAT_ATTR(ring_full_waits, VBBLK_STAT_RING_FULL_WAITS);
VBBLK_STAT_ATTR(parked, VBBLK_STAT_PARKED);
VBBLK_STAT_ATTR(nowait_eagain, VBBLK_STAT_NOWAIT_EAGAIN);
VBBLK_STAT_ATTR(retried, VBBLK_STAT_RETRIED);
VBBLK_STAT_ATTR(queue_rqs, VBBLK_STAT_QUEUE_RQS);
VBBLK_STAT_ATTR(poll_batched, VBBLK_STAT_POLL_BATCHED);

static struct attribute *vbblk_stats_attrs[] = {
	&vbblk_stat_attr_bios.attr.attr,
	&vbblk_stat_attr_requests.attr.attr,
	&vbblk_stat_attr_flushes.attr.attr,
	&vbblk_stat_attr_merged.attr.attr,
	&vbblk_stat_attr_dispatch_direct.attr.attr,
	&vbblk_stat_attr_dispatch_noncontig.attr.attr,
	&vbblk_stat_attr_dispatch_limit.attr.attr,
	&vbblk_stat_attr_dispatch_plug.attr.attr,
	&vbblk_stat_attr_dispatch_completion.attr.attr,
	&vbblk_stat_attr_dispatch_flush.attr.attr,
	&vbblk_stat_attr_dispatch_drain.attr.attr,
	&vbblk_stat_attr_dispatch_cpu_offline.attr.attr,
	&vbblk_stat_attr_notifies.attr.attr,
	&vbblk_stat_attr_plug_deferred.attr.attr,
	&vbblk_stat_attr_plug_callbacks.attr.attr,
	&vbblk_stat_attr_ring_full_waits.attr.attr,
	&vbblk_stat_attr_parked.attr.attr,
	&vbblk_stat_attr_nowait_eagain.attr.attr,
	&vbblk_stat_attr_retried.attr.attr,
	&vbblk_stat_attr_queue_rqs.attr.attr,
	&vbblk_stat_attr_poll_batched.attr.attr,
	&vbblk_stat_attr_uring_cmds.attr.attr,
	&vbblk_stat_attr_uring_polled_elsewhere.attr.attr,
	&vbblk_stat_attr_uring_deferred.attr.attr,
	&vbblk_stat_attr_indirect_ring.attr.attr,
	NULL,
};

const struct attribute_group vbblk_stats_group = {
	.name = VBBLK_NAME,
	.attrs = vbblk_stats_attrs,
};
