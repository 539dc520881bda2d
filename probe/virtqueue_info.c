// SPDX-License-Identifier: GPL-2.0
/* 6.11: virtio_find_vqs() takes struct virtqueue_info, not two arrays. */
#include <linux/virtio_config.h>

int probe(struct virtio_device *vdev, struct virtqueue *vqs[]);
int probe(struct virtio_device *vdev, struct virtqueue *vqs[])
{
	struct virtqueue_info info[1] = { { .name = "probe" } };

	return virtio_find_vqs(vdev, 1, vqs, info, NULL);
}
