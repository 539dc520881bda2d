// SPDX-License-Identifier: GPL-2.0
/*
 * Until after 6.12: linux/blk-mq-virtio.h maps queues by the virtqueues'
 * interrupt affinity. Its successor, blk_mq_map_hw_queues(), asks the bus,
 * which kernels that have both may not wire up for virtio: the old one is
 * used while it exists.
 */
#include <linux/blk-mq-virtio.h>

void probe(struct blk_mq_queue_map *qmap, struct virtio_device *vdev);
void probe(struct blk_mq_queue_map *qmap, struct virtio_device *vdev)
{
	blk_mq_virtio_map_queues(qmap, vdev, 0);
}
