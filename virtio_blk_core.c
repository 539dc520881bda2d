// SPDX-License-Identifier: GPL-2.0
/*
 * Device core: module parameters, probe and feature negotiation, queue
 * limits, disk naming, sysfs attributes, capacity changes, remove and PM.
 * The I/O paths live in virtio_blk_rq.c (blk-mq) and virtio_blk_bio.c.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hdreg.h>
#include <linux/idr.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "vbblk.h"
#include "include/vbblk_compat.h"

#ifndef VBBLK_VERSION
#define VBBLK_VERSION "unknown"
#endif

/* ---- Module parameters: each setter rejects bad values at load time. ---- */

enum vbblk_mode vbblk_mode = VBBLK_MODE_BIO;
unsigned int vbblk_num_queues = 64;
unsigned int vbblk_poll_queues;
unsigned int vbblk_queue_depth = 256;
bool vbblk_batch = true;
unsigned int vbblk_batch_max_bios = 64;
unsigned int vbblk_batch_max_kb = 512;
static unsigned int vbblk_remove_timeout = 120;
static bool vbblk_indirect = true;

/* rings=: how a queue uses the device's virtqueues (vbblk_wanted_vqs()). */
enum vbblk_rings {
	VBBLK_RINGS_AUTO,
	VBBLK_RINGS_PAIRS,
	VBBLK_RINGS_SINGLE,
	VBBLK_RINGS_DIRECT,
};

static enum vbblk_rings vbblk_rings = VBBLK_RINGS_AUTO;

static const char * const vbblk_mode_names[] = {
	[VBBLK_MODE_BIO]	= "bio",
	[VBBLK_MODE_REQUEST]	= "request",
};

static const char * const vbblk_rings_names[] = {
	[VBBLK_RINGS_AUTO]	= "auto",
	[VBBLK_RINGS_PAIRS]	= "pairs",
	[VBBLK_RINGS_SINGLE]	= "single",
	[VBBLK_RINGS_DIRECT]	= "direct",
};

/*
 * A parameter that names one of @names: its index, or -EINVAL and a dmesg
 * line that says what to use (@hint).
 */
static int vbblk_name_set(const char *val, const struct kernel_param *kp,
			  const char * const *names, size_t n, const char *hint)
{
	int i = __sysfs_match_string(names, n, val);

	if (i < 0) {
		pr_err("%s=%s is not valid: use %s\n", kp->name, val, hint);
		return -EINVAL;
	}
	return i;
}

#define VBBLK_NAME_PARAM(name, var, names, hint, desc)			\
	static int vbblk_##name##_set(const char *val,			\
				      const struct kernel_param *kp)	\
	{								\
		int i = vbblk_name_set(val, kp, names,			\
				       ARRAY_SIZE(names), hint);	\
									\
		if (i < 0)						\
			return i;					\
		var = i;						\
		return 0;						\
	}								\
	static int vbblk_##name##_get(char *buf,			\
				      const struct kernel_param *kp)	\
	{								\
		return sysfs_emit(buf, "%s\n", names[var]);		\
	}								\
	static const struct kernel_param_ops vbblk_##name##_ops = {	\
		.set = vbblk_##name##_set,				\
		.get = vbblk_##name##_get,				\
	};								\
	module_param_cb(name, &vbblk_##name##_ops, NULL, 0444);	\
	MODULE_PARM_DESC(name, desc)

VBBLK_NAME_PARAM(mode, vbblk_mode, vbblk_mode_names, "mode=bio or mode=request",
		 "I/O path: bio (submit_bio, batching) or request (blk-mq) (default: bio)");
VBBLK_NAME_PARAM(rings, vbblk_rings, vbblk_rings_names,
		 "rings=auto, pairs, single or direct",
		 "How queues use the device's virtqueues: pairs (a direct ring for small commands beside an indirect one for large; over fewer queues if the device has fewer than two per queue), single (one ring per queue, an indirect table allocated per command), direct (one ring per queue, indirect descriptors off), auto (pairs where the device has two virtqueues per queue, else direct; dmesg says which and why) (default: auto)");

/*
 * An unsigned parameter with a range: the kernel's param_set_uint_minmax(),
 * and a dmesg line that says why a value is refused.
 */
static int vbblk_uint_set(const char *val, const struct kernel_param *kp,
			  unsigned int min, unsigned int max)
{
	int err = param_set_uint_minmax(val, kp, min, max);

	if (err)
		pr_err("%s=%s is not valid: use %u..%u\n", kp->name, val, min,
		       max);
	return err;
}

#define VBBLK_UINT_PARAM(name, var, min, max, perm, desc)		\
	static int vbblk_##name##_set(const char *val,			\
				      const struct kernel_param *kp)	\
	{								\
		return vbblk_uint_set(val, kp, (min), (max));		\
	}								\
	static const struct kernel_param_ops vbblk_##name##_ops = {	\
		.set = vbblk_##name##_set,				\
		.get = param_get_uint,					\
	};								\
	module_param_cb(name, &vbblk_##name##_ops, &(var), perm);	\
	MODULE_PARM_DESC(name, desc)

VBBLK_UINT_PARAM(num_queues, vbblk_num_queues, 1, VBBLK_MAX_QUEUES, 0444,
		 "Most virtqueues per disk, 1..256; the device and the CPU count may allow fewer (default: 64)");
VBBLK_UINT_PARAM(queue_depth, vbblk_queue_depth, 1, VBBLK_MAX_DEPTH, 0444,
		 "Commands in flight per queue, 1..1024, capped by the ring size (default: 256)");
VBBLK_UINT_PARAM(remove_timeout, vbblk_remove_timeout, 0, 86400, 0644,
		 "Seconds device removal waits for a device that holds I/O and completes none before failing it (a dead vhost-user backend), 0..86400, 0: wait forever; a device that is gone fails at once (default: 120)");
VBBLK_UINT_PARAM(poll_queues, vbblk_poll_queues, 0, VBBLK_MAX_POLL_QUEUES, 0444,
		 "Virtqueues reaped by polling, interrupts suppressed, for polled I/O (io_uring IOPOLL, fio hipri), 0..64; taken from the device's queues, leaving at least one for interrupts (default: 0)");

/*
 * Booleans, strictly: the kernel's own parser takes any word starting with
 * y, n, 1 or 0 ("yes2" is true): garbage must be refused like any other.
 */
static int vbblk_bool_set(const char *val, const struct kernel_param *kp)
{
	static const char * const on[] = { "1", "y", "Y", "yes", "on", "true" };
	static const char * const off[] = { "0", "n", "N", "no", "off", "false" };
	int i;

	for (i = 0; i < ARRAY_SIZE(on); i++) {
		if (sysfs_streq(val, on[i]) || sysfs_streq(val, off[i])) {
			WRITE_ONCE(*(bool *)kp->arg, sysfs_streq(val, on[i]));
			return 0;
		}
	}
	pr_err("%s=%s is not valid: use 1/0, y/n, yes/no, on/off or true/false\n",
	       kp->name, val);
	return -EINVAL;
}

/* Turning batching off sends what is held: nothing waits on it any more. */
static int vbblk_batch_set(const char *val, const struct kernel_param *kp)
{
	int err = vbblk_bool_set(val, kp);

	if (!err && !READ_ONCE(vbblk_batch))
		vbblk_batch_release_all();
	return err;
}

static const struct kernel_param_ops vbblk_batch_ops = {
	.set = vbblk_batch_set,
	.get = param_get_bool,
};

static const struct kernel_param_ops vbblk_strict_bool_ops = {
	.set = vbblk_bool_set,
	.get = param_get_bool,
};

module_param_cb(indirect, &vbblk_strict_bool_ops, &vbblk_indirect, 0444);
MODULE_PARM_DESC(indirect,
		 "Use the device's indirect descriptors; N puts every command straight on the ring: no table allocated and freed per command, but a ring holds size/3 4k commands and a command at most size-2 segments (default: Y)");

/* Batching bounds may change at run time; a batch reads them as it grows. */
module_param_cb(batch, &vbblk_batch_ops, &vbblk_batch, 0644);
MODULE_PARM_DESC(batch,
		 "bio mode: merge contiguous bios of one CPU into one command (default: Y)");
VBBLK_UINT_PARAM(batch_max_bios, vbblk_batch_max_bios, 1, 256, 0644,
		 "bio mode: most bios in one batched command, 1..256 (default: 64)");
VBBLK_UINT_PARAM(batch_max_kb, vbblk_batch_max_kb, 1, 4096, 0444,
		 "bio mode: most KiB in one batched command, 1..4096, capped by the queue's max_sectors_kb at probe (default: 512)");

#ifdef VBBLK_DEBUG
/*
 * Debug builds only (make VBBLK_DEBUG=y), in debugfs, never a module
 * parameter: skip_fua_flush breaks durability on purpose, so the
 * power-cut and flush tests can show they catch a missing flush.
 * uring_polled_foreign counts polled passthrough commands ended outside
 * their own ring's poll (vbblk_uring.c), which must never happen.
 */
bool vbblk_debug_skip_fua_flush;
static struct dentry *vbblk_debugfs;

static void vbblk_debugfs_init(void)
{
	vbblk_debugfs = debugfs_create_dir(VBBLK_NAME, NULL);
	debugfs_create_bool("skip_fua_flush", 0600, vbblk_debugfs,
			    &vbblk_debug_skip_fua_flush);
	debugfs_create_atomic_t("uring_polled_foreign", 0400, vbblk_debugfs,
				&vbblk_debug_uring_polled_foreign);
}

static void vbblk_debugfs_exit(void)
{
	debugfs_remove_recursive(vbblk_debugfs);
}
#else
static void vbblk_debugfs_init(void) { }
static void vbblk_debugfs_exit(void) { }
#endif

/* ---- Disk naming ---- */

static int vbblk_major;
static DEFINE_IDA(vbblk_index_ida);

/* vda..vdz, vdaa..vdzz, vdaaa...: the names users know from virtio_blk. */
static int vbblk_format_name(char *buf, size_t len, unsigned int index)
{
	char tmp[8];
	int n = 0;

	do {
		if (n == sizeof(tmp))
			return -EINVAL;
		tmp[n++] = 'a' + index % 26;
		index = index / 26;
	} while (index-- > 0);

	if (len < 2 + n + 1)
		return -EINVAL;
	buf[0] = 'v';
	buf[1] = 'd';
	for (len = 2; n > 0; len++)
		buf[len] = tmp[--n];
	buf[len] = '\0';
	return 0;
}

/*
 * Take the lowest index whose name no block device uses yet, so a disk
 * bound to us beside the stock virtio_blk gets the next free vdX name.
 */
static int vbblk_assign_name(struct gendisk *disk)
{
	unsigned int max = (1U << (MINORBITS - VBBLK_PART_BITS)) - 1;
	unsigned int min = 0;
	int index, err;

	for (;;) {
		index = ida_alloc_range(&vbblk_index_ida, min, max, GFP_KERNEL);
		if (index < 0)
			return index;
		err = vbblk_format_name(disk->disk_name, DISK_NAME_LEN, index);
		if (err) {
			ida_free(&vbblk_index_ida, index);
			return err;
		}
		if (!vbblk_disk_name_taken(disk, disk->disk_name))
			return index;
		ida_free(&vbblk_index_ida, index);
		min = index + 1;
	}
}

/* ---- sysfs attributes of the disk ---- */

static ssize_t serial_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct gendisk *disk = dev_to_disk(dev);
	char *id;
	int err;

	/* Kernel memory the request can map; sysfs buf is fine but page-sized. */
	id = kzalloc(VIRTIO_BLK_ID_BYTES + 1, GFP_KERNEL);
	if (!id)
		return -ENOMEM;
	err = vbblk_rq_get_id(disk->private_data, id);
	if (!err)
		err = sysfs_emit(buf, "%s\n", id);
	else if (err == -EIO)
		err = -ENOTTY;	/* no serial: as upstream, not an I/O error */
	kfree(id);
	return err;
}
static DEVICE_ATTR_RO(serial);

static const char * const vbblk_cache_types[] = {
	"write through", "write back"
};

/*
 * The device has no FUA. Request mode leaves it to blk-mq's flush
 * machinery; bio mode implements FUA itself (write, then flush, then
 * complete), so it says so, and upper layers may send FUA writes instead
 * of a write plus a separate flush.
 */
static bool vbblk_fua(struct vbblk *vblk)
{
	return vblk->mode == VBBLK_MODE_BIO;
}

/*
 * Freeze @q, reaping the poll queues while it drains: a polled request
 * ends only when polled, and its poller may be waiting on this very freeze
 * (its next I/O blocks in blk_queue_enter()) or frozen (suspend). Returns
 * the task's memalloc flags (NOIO until vbblk_unfreeze_queue_restore()).
 */
static unsigned int vbblk_freeze_reaping(struct vbblk *vblk,
					 struct request_queue *q)
{
	unsigned int memflags = vbblk_freeze_queue_start(q);

	while (!blk_mq_freeze_queue_wait_timeout(q, msecs_to_jiffies(10)))
		vbblk_vqs_poll_all(vblk);
	return memflags;
}

/*
 * No I/O in flight and none admitted until vbblk_unquiesce(), in the same
 * call; the passthrough queue beside the bio path stays open. Returns the
 * task's memalloc flags: allocations meanwhile are NOIO, as reclaim must
 * not write back into the frozen queue.
 */
static unsigned int vbblk_quiesce(struct vbblk *vblk)
{
	unsigned int memflags = vbblk_freeze_reaping(vblk, vblk->disk->queue);

	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_drain(vblk);
	return memflags;
}

static void vbblk_unquiesce(struct vbblk *vblk, unsigned int memflags)
{
	if (vblk->mode == VBBLK_MODE_BIO)
		WRITE_ONCE(vblk->draining, false);
	vbblk_unfreeze_queue_restore(vblk->disk->queue, memflags);
}

static ssize_t cache_type_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct gendisk *disk = dev_to_disk(dev);
	struct vbblk *vblk = disk->private_data;
	struct request_queue *q = disk->queue;
	struct vbblk_wc_update u;
	unsigned int memflags;
	bool quiesce;
	int i, err;

	i = sysfs_match_string(vbblk_cache_types, buf);
	if (i < 0)
		return i;

	mutex_lock(&vblk->vdev_mutex);
	/* No rings (a failed restore): a dead disk, and no queue to FLUSH on. */
	if (!vblk->vdev || vblk->rings_gone) {
		mutex_unlock(&vblk->vdev_mutex);
		return -ENODEV;
	}
	/*
	 * Write back to write through: writes already completed may sit in
	 * the device's cache, and once the block layer knows the cache is
	 * gone it sends no flush for them. So no I/O runs while we flush and
	 * switch, and a failed flush leaves the cache as it was. One freeze
	 * covers both, taken after the limits, as the block layer orders them.
	 */
	quiesce = !i && vbblk_config_writeback(vblk->vdev);
	vbblk_write_cache_start(q, &u);
	if (quiesce) {
		memflags = vbblk_quiesce(vblk);
		err = vbblk_flush_sync(&vblk->vqs[0]);
	} else {
		memflags = vbblk_freeze_reaping(vblk, q);
		err = 0;
	}
	if (!err) {
		virtio_cwrite8(vblk->vdev,
			       offsetof(struct virtio_blk_config, wce), i);
		/* Report what the device accepted, not what we asked for. */
		err = vbblk_write_cache_commit(q, &u,
					       vbblk_config_writeback(vblk->vdev),
					       vbblk_fua(vblk));
	} else {
		vbblk_write_cache_cancel(q, &u);
	}
	if (quiesce)
		vbblk_unquiesce(vblk, memflags);
	else
		vbblk_unfreeze_queue_restore(q, memflags);
	mutex_unlock(&vblk->vdev_mutex);
	return err ? err : count;
}

static ssize_t cache_type_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct gendisk *disk = dev_to_disk(dev);

	return sysfs_emit(buf, "%s\n",
			  vbblk_cache_types[vbblk_write_cache_on(disk->private_data)]);
}
static DEVICE_ATTR_RW(cache_type);

static umode_t vbblk_attrs_visible(struct kobject *kobj, struct attribute *a,
				   int n)
{
	struct gendisk *disk = dev_to_disk(kobj_to_dev(kobj));
	struct vbblk *vblk = disk->private_data;

	/* cache_type is writable only when the device lets us switch it. */
	if (a == &dev_attr_cache_type.attr &&
	    !virtio_has_feature(vblk->vdev, VIRTIO_BLK_F_CONFIG_WCE))
		return 0444;
	return a->mode;
}

static struct attribute *vbblk_attrs[] = {
	&dev_attr_serial.attr,
	&dev_attr_cache_type.attr,
	NULL,
};

static const struct attribute_group vbblk_attr_group = {
	.attrs = vbblk_attrs,
	.is_visible = vbblk_attrs_visible,
};

static const struct attribute_group *vbblk_attr_groups[] = {
	&vbblk_attr_group,
	&vbblk_stats_group,
	NULL,
};

/* ---- block_device_operations ---- */

static int vbblk_getgeo(vbblk_geo_disk_t *d, struct hd_geometry *geo)
{
	struct gendisk *disk = vbblk_geo_gendisk(d);
	struct vbblk *vblk = disk->private_data;
	int err = 0;

	mutex_lock(&vblk->vdev_mutex);
	if (!vblk->vdev) {
		err = -ENXIO;
	} else if (virtio_has_feature(vblk->vdev, VIRTIO_BLK_F_GEOMETRY)) {
		virtio_cread(vblk->vdev, struct virtio_blk_config,
			     geometry.cylinders, &geo->cylinders);
		virtio_cread(vblk->vdev, struct virtio_blk_config,
			     geometry.heads, &geo->heads);
		virtio_cread(vblk->vdev, struct virtio_blk_config,
			     geometry.sectors, &geo->sectors);
	} else {
		/* The customary fake: 64 heads, 32 sectors per track. */
		geo->heads = 1 << 6;
		geo->sectors = 1 << 5;
		geo->cylinders = get_capacity(disk) >> 11;
	}
	mutex_unlock(&vblk->vdev_mutex);
	return err;
}

/* Runs when the last reference to the disk goes, possibly after remove. */
static void vbblk_free_disk(struct gendisk *disk)
{
	struct vbblk *vblk = disk->private_data;

	ida_free(&vbblk_index_ida, vblk->index);
	/*
	 * The passthrough queue beside the bio path lives as long as the
	 * disk: an fd held across remove may still try SG_IO on it, which a
	 * destroyed (dying) queue refuses with ENODEV.
	 */
	if (vblk->mode == VBBLK_MODE_BIO)
		blk_put_queue(vblk->rq_queue);
	mutex_destroy(&vblk->vdev_mutex);
	free_percpu(vblk->stats);
	kfree(vblk);
}

static const struct block_device_operations vbblk_rq_fops = {
	.owner		= THIS_MODULE,
	.ioctl		= vbblk_ioctl,
	.getgeo		= vbblk_getgeo,
	.free_disk	= vbblk_free_disk,
};

static const struct block_device_operations vbblk_bio_fops = {
	.owner		= THIS_MODULE,
	.submit_bio	= vbblk_submit_bio,
	.poll_bio	= vbblk_poll_bio,
	.ioctl		= vbblk_ioctl,
	.getgeo		= vbblk_getgeo,
	.free_disk	= vbblk_free_disk,
};

/* ---- Capacity ---- */

static void vbblk_update_capacity(struct vbblk *vblk, bool resize)
{
	struct virtio_device *vdev = vblk->vdev;
	u64 max = (U64_MAX >> SECTOR_SHIFT) / 2;
	unsigned int per_block =
		queue_logical_block_size(vblk->disk->queue) >> SECTOR_SHIFT;
	u64 capacity;

	/* The config field counts 512-byte sectors whatever the block size. */
	virtio_cread(vdev, struct virtio_blk_config, capacity, &capacity);
	/*
	 * Device-provided: more sectors than a byte offset can address would
	 * wrap every size computation; a tail short of one logical block is
	 * unaddressable. Both are cut off, with a word.
	 */
	if (capacity > max) {
		dev_warn(&vdev->dev, "capacity %llu sectors is too large, using %llu\n",
			 capacity, max);
		capacity = max;
	}
	if (capacity & (per_block - 1)) {
		dev_warn(&vdev->dev, "capacity %llu is not a whole number of logical blocks\n",
			 capacity);
		capacity = round_down(capacity, per_block);
	}

	dev_notice(&vdev->dev, "[%s] %s%llu 512-byte logical blocks (%llu MiB)\n",
		   vblk->disk->disk_name, resize ? "new size: " : "",
		   capacity, capacity >> 11);
	set_capacity_and_notify(vblk->disk, capacity);
}

static void vbblk_config_work(struct work_struct *work)
{
	struct vbblk *vblk = container_of(work, struct vbblk, config_work);

	vbblk_update_capacity(vblk, true);
}

static void vbblk_config_changed(struct virtio_device *vdev)
{
	struct vbblk *vblk = vdev->priv;

	queue_work(system_freezable_wq, &vblk->config_work);
}

/* ---- Probe: negotiate features top-down, each next to its limit. ---- */

/*
 * A SCSI command takes five descriptors beside its data. Without indirect
 * descriptors they must fit in the ring with the data, or the command
 * would wait for room forever.
 */
static void vbblk_scsi_limits(struct vbblk *vblk)
{
	struct virtio_device *vdev = vblk->vdev;
	unsigned int ring = virtqueue_get_vring_size(vblk->vqs[0].vq);

	vblk->scsi_passthrough = virtio_has_feature(vdev, VIRTIO_BLK_F_SCSI);
	vblk->scsi_max_segs = vblk->sg_elems;
	if (!virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC)) {
		if (ring < 6)
			vblk->scsi_passthrough = false;
		else
			vblk->scsi_max_segs = min(vblk->sg_elems, ring - 5);
	}
	vblk->sg_reserved = vbblk_sg_max_bytes(vblk);
}

/*
 * Virtqueues to ask for: poll queues first take what poll_queues asks,
 * leaving the interrupt-driven queues at least one; those are then capped
 * by num_queues and the CPU count. Returns the total; *npoll the polled,
 * *dev the device's count.
 */
static unsigned int vbblk_count_vqs(struct virtio_device *vdev,
				    unsigned int *npoll, unsigned int *dev)
{
	unsigned int io, poll;
	u16 n = 1;

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_MQ))
		virtio_cread(vdev, struct virtio_blk_config, num_queues, &n);
	if (!n)		/* device-provided: 0 queues still means one */
		n = 1;
	poll = min_t(unsigned int, vbblk_poll_queues, n - 1);
	io = min3(n - poll, vbblk_num_queues, nr_cpu_ids);
	*npoll = min(poll, VBBLK_MAX_QUEUES - io);
	*dev = n;
	return io + *npoll;
}

/*
 * Direct rings: indirect descriptors off, so that no command allocates an
 * indirect table. rings=auto takes them where the device has too few
 * virtqueues to pair each queue (QEMU's default: one per vCPU): a 4k
 * command then costs no allocation, and a large one its segments' worth
 * of descriptors. Decided before the features are final.
 */
static bool vbblk_direct_rings(struct virtio_device *vdev)
{
	unsigned int want, npoll, n;

	if (vbblk_rings == VBBLK_RINGS_DIRECT)
		return true;
	if (vbblk_rings != VBBLK_RINGS_AUTO)
		return false;
	want = vbblk_count_vqs(vdev, &npoll, &n);
	return n < 2 * want;
}

/*
 * Virtqueues to ask for (vbblk_count_vqs()); *paired: each queue gets a
 * direct ring for small commands and an indirect one beside it, so that a
 * 4k command allocates no indirect table, which takes two of the device's
 * virtqueues per queue. *why: the choice, for the probe's dmesg line.
 */
static unsigned int vbblk_wanted_vqs(struct virtio_device *vdev,
				     unsigned int *npoll, bool *paired,
				     const char **why)
{
	unsigned int want, n, half;

	want = vbblk_count_vqs(vdev, npoll, &n);
	*paired = false;
	if (!virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC)) {
		if (!READ_ONCE(vbblk_indirect))
			*why = "direct rings: indirect=0";
		else if (vbblk_rings == VBBLK_RINGS_DIRECT)
			*why = "direct rings: rings=direct";
		else if (vbblk_direct_rings(vdev))
			*why = "direct rings: fewer than two virtqueues per queue";
		else
			*why = "direct rings: the device has no indirect descriptors";
		return want;
	}
	if (vbblk_rings == VBBLK_RINGS_SINGLE) {
		*why = "indirect tables: rings=single";
		return want;
	}
	if (n >= 2 * want) {
		*paired = true;
		*why = "pairs: two virtqueues per queue";
		return want;
	}
	/* rings=pairs: over fewer queues, which CPUs share with their locks */
	half = n / 2;
	if (half > *npoll) {
		*paired = true;
		*why = "pairs: rings=pairs, over fewer queues";
		return min(want - *npoll, half - *npoll) + *npoll;
	}
	*why = "indirect tables: rings=pairs, but no room for a pair beside the poll queues";
	return want;
}

/*
 * The disk's limits and features, from the device configuration. Nothing
 * is allocated yet: the compat helpers hand both to the allocation or set
 * them on the new queue, whichever the kernel wants.
 */
static int vbblk_build_limits(struct vbblk *vblk, struct queue_limits *lim,
			      struct vbblk_features *feat)
{
	struct virtio_device *vdev = vblk->vdev;
	u32 v, sg_elems = 1, size_max;
	u32 lbs = SECTOR_SIZE;
	u8 exp, align;
	u16 min_io;
	int err;

	memset(lim, 0, sizeof(*lim));
	memset(feat, 0, sizeof(*feat));

	/*
	 * Segments: seg_max (device-provided; 0 means one), and never more
	 * descriptors than the ring has: header and status take two, so a
	 * ring of two cannot carry data at all.
	 */
	err = virtio_cread_feature(vdev, VIRTIO_BLK_F_SEG_MAX,
				   struct virtio_blk_config, seg_max, &sg_elems);
	if (err || !sg_elems)
		sg_elems = 1;
	if (!virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC)) {
		v = virtqueue_get_vring_size(vblk->vqs[0].vq);
		if (v < 3) {
			dev_err(&vdev->dev, "a ring of %u descriptors cannot carry a request\n",
				v);
			return -EINVAL;
		}
		sg_elems = min(sg_elems, v - 2);
	}
	sg_elems = min_t(u32, sg_elems, USHRT_MAX);
	vblk->sg_elems = sg_elems;
	lim->max_segments = sg_elems;

	/* size_max 0 says nothing; the block layer raises tiny ones to a page. */
	size_max = virtio_max_dma_size(vdev);
	if (!virtio_cread_feature(vdev, VIRTIO_BLK_F_SIZE_MAX,
				  struct virtio_blk_config, size_max, &v) && v)
		size_max = min(size_max, v);
	lim->max_segment_size = size_max;
	lim->max_hw_sectors = UINT_MAX;

	if (!virtio_cread_feature(vdev, VIRTIO_BLK_F_BLK_SIZE,
				  struct virtio_blk_config, blk_size, &lbs)) {
		if (blk_validate_block_size(lbs)) {
			dev_err(&vdev->dev, "unsupported block size %u\n", lbs);
			return -EINVAL;
		}
	}
	lim->logical_block_size = lbs;
	lim->physical_block_size = lbs;

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_TOPOLOGY)) {
		virtio_cread(vdev, struct virtio_blk_config,
			     physical_block_exp, &exp);
		if (exp < 16)
			lim->physical_block_size = lbs << exp;
		virtio_cread(vdev, struct virtio_blk_config,
			     alignment_offset, &align);
		lim->alignment_offset = lbs * align;
		virtio_cread(vdev, struct virtio_blk_config, min_io_size,
			     &min_io);
		lim->io_min = lbs * min_io;
		virtio_cread(vdev, struct virtio_blk_config, opt_io_size, &v);
		lim->io_opt = lbs * v;
	}

	feat->write_cache = vbblk_config_writeback(vdev);
	feat->fua = vbblk_fua(vblk);

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_DISCARD)) {
		virtio_cread(vdev, struct virtio_blk_config,
			     max_discard_sectors, &v);
		lim->max_hw_discard_sectors = v ? v : UINT_MAX;
		virtio_cread(vdev, struct virtio_blk_config,
			     discard_sector_alignment, &v);
		/*
		 * Device-provided: 0 or absurd (no u32 byte count, under a
		 * block) means lbs; the block layer rounds with power-of-2
		 * masks, so anything else is rounded down to one.
		 */
		lim->discard_granularity =
			v && v <= (U32_MAX >> SECTOR_SHIFT) &&
			(v << SECTOR_SHIFT) >= lbs ?
			rounddown_pow_of_two(v << SECTOR_SHIFT) : lbs;
		virtio_cread(vdev, struct virtio_blk_config,
			     max_discard_seg, &v);
		lim->max_discard_segments = clamp_t(u32, v, 1,
						    VBBLK_MAX_RANGES);
	}

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_WRITE_ZEROES)) {
		virtio_cread(vdev, struct virtio_blk_config,
			     max_write_zeroes_sectors, &v);
		lim->max_write_zeroes_sectors = v ? v : UINT_MAX;
		virtio_cread(vdev, struct virtio_blk_config,
			     write_zeroes_may_unmap, &align);
		vblk->wz_may_unmap = align;
	}

	if (virtio_has_feature(vdev, VIRTIO_BLK_F_SECURE_ERASE)) {
		virtio_cread(vdev, struct virtio_blk_config,
			     max_secure_erase_sectors, &v);
		if (!v) {
			dev_err(&vdev->dev, "secure erase offered with max_secure_erase_sectors 0\n");
			return -EINVAL;
		}
		lim->max_secure_erase_sectors = v;
		/*
		 * 6.1 splits secure erase bios by the discard limit, so keep
		 * that within both. (Without DISCARD it cannot be set without
		 * enabling discard; vbblk_bio_submit_range() checks the size.)
		 */
		if (virtio_has_feature(vdev, VIRTIO_BLK_F_DISCARD))
			lim->max_hw_discard_sectors =
				min(lim->max_hw_discard_sectors, v);
		virtio_cread(vdev, struct virtio_blk_config,
			     max_secure_erase_seg, &v);
		/* Discard and secure erase share one segment limit. */
		v = clamp_t(u32, v, 1, VBBLK_MAX_RANGES);
		if (virtio_has_feature(vdev, VIRTIO_BLK_F_DISCARD))
			v = min_t(u32, v, lim->max_discard_segments);
		lim->max_discard_segments = v;
		virtio_cread(vdev, struct virtio_blk_config,
			     secure_erase_sector_alignment, &v);
		/* Device-provided: as discard_sector_alignment above. */
		if (v && v <= (U32_MAX >> SECTOR_SHIFT) &&
		    (v << SECTOR_SHIFT) >= lbs)
			lim->discard_granularity =
				max(lim->discard_granularity,
				    rounddown_pow_of_two(v << SECTOR_SHIFT));
	}
	return 0;
}

/*
 * The disk and the blk-mq queue. Request mode: one queue, the disk's. Bio
 * mode: a bio-based disk, plus a blk-mq queue without a disk that carries
 * passthrough commands over the same virtqueues.
 */
static int vbblk_alloc_queues(struct vbblk *vblk,
			      const struct queue_limits *lim,
			      struct vbblk_features *feat)
{
	int err;

	if (vblk->mode == VBBLK_MODE_REQUEST) {
		vblk->disk = vbblk_alloc_disk(&vblk->tag_set, lim, feat, vblk);
		if (IS_ERR(vblk->disk))
			return PTR_ERR(vblk->disk);
		vblk->rq_queue = vblk->disk->queue;
		vblk->disk->fops = &vbblk_rq_fops;
		return 0;
	}

	vblk->rq_queue = vbblk_alloc_queue(&vblk->tag_set, lim, feat, vblk);
	if (IS_ERR(vblk->rq_queue))
		return PTR_ERR(vblk->rq_queue);
	/*
	 * What blk-mq gives its own queues the bio path provides itself:
	 * REQ_NOWAIT, I/O accounting, and polling when it has poll queues.
	 */
	feat->nowait = true;
	feat->io_stat = true;
	feat->poll = vblk->num_poll_vqs;
	vblk->disk = vbblk_alloc_bio_disk(lim, feat);
	if (IS_ERR_OR_NULL(vblk->disk)) {
		err = vblk->disk ? PTR_ERR(vblk->disk) : -ENOMEM;
		vbblk_free_queue(vblk->rq_queue);
		return err;
	}
	vblk->disk->fops = &vbblk_bio_fops;
	return 0;
}

static void vbblk_free_queues(struct vbblk *vblk)
{
	put_disk(vblk->disk);
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_free_queue(vblk->rq_queue);
}

/*
 * Remove waits for what the device holds, and a slow device (a throttled
 * or remote backend) gets all the time it needs. A dead one never
 * completes it, and that wait would never end: while remove runs, a check
 * each second fails what the device holds (vbblk_vqs_abort()) once it is
 * gone (surprise removal reads all ones, the device asks for a reset, the
 * virtio core marked a ring broken), or after remove_timeout seconds
 * without a single completion: a vhost-user daemon killed under I/O leaves
 * a device that still answers and never completes.
 */
static bool vbblk_device_gone(struct vbblk *vblk)
{
	struct virtio_device *vdev = vblk->vdev;
	u8 status = vdev->config->get_status(vdev);
	unsigned int i;

	if (status == 0xff || (status & VIRTIO_CONFIG_S_NEEDS_RESET) ||
	    vblk->rings_gone)
		return true;
	for (i = 0; i < vblk->num_vqs; i++) {
		struct vbblk_vq *vq = &vblk->vqs[i];

		if (virtqueue_is_broken(vq->vq) ||
		    (vq->big && virtqueue_is_broken(vq->big)))
			return true;
	}
	return false;
}

static void vbblk_dead_mark(struct work_struct *work)
{
	struct vbblk *vblk = container_of(work, struct vbblk, dead_mark_work);

	blk_mark_disk_dead(vblk->disk);
}

static void vbblk_dead_check(struct work_struct *work)
{
	struct vbblk *vblk = container_of(to_delayed_work(work), struct vbblk,
					  dead_work);
	unsigned int timeout = READ_ONCE(vbblk_remove_timeout);
	unsigned long done = vbblk_vqs_completed(vblk);
	unsigned int held = vbblk_vqs_inflight(vblk);

	if (held && vbblk_device_gone(vblk)) {
		dev_err(&vblk->vdev->dev,
			"device gone with %u commands on the rings: failing them\n",
			held);
		vbblk_vqs_abort(vblk);
		return;
	}
	if (!held || done != vblk->dead_seen) {
		vblk->dead_seen = done;
		vblk->dead_stalled = 0;
	} else if (++vblk->dead_stalled >= timeout && timeout) {
		dev_err(&vblk->vdev->dev,
			"no completion for %u s (remove_timeout) with %u commands on the rings: failing them\n",
			vblk->dead_stalled, held);
		vbblk_vqs_abort(vblk);
		return;
	}
	schedule_delayed_work(&vblk->dead_work, HZ);
}

static int vbblk_probe(struct virtio_device *vdev)
{
	struct vbblk_features feat;
	struct queue_limits lim;
	unsigned int want, npoll;
	struct vbblk *vblk;
	const char *why;
	bool paired;
	int err;

	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}

	vblk = kzalloc(sizeof(*vblk), GFP_KERNEL);
	if (!vblk)
		return -ENOMEM;
	vdev->priv = vblk;
	vblk->vdev = vdev;
	vblk->mode = vbblk_mode;
	mutex_init(&vblk->vdev_mutex);
	INIT_WORK(&vblk->config_work, vbblk_config_work);
	INIT_WORK(&vblk->dead_mark_work, vbblk_dead_mark);
	INIT_DELAYED_WORK(&vblk->dead_work, vbblk_dead_check);
	vblk->stats = alloc_percpu(struct vbblk_stats);
	if (!vblk->stats) {
		err = -ENOMEM;
		goto out_free;
	}

	want = vbblk_wanted_vqs(vdev, &npoll, &paired, &why);
	err = vbblk_init_vqs(vblk, want, npoll, paired);
	if (err)
		goto out_free;

	err = vbblk_rq_init_tag_set(vblk);
	if (err)
		goto out_del_vqs;

	err = vbblk_build_limits(vblk, &lim, &feat);
	if (err)
		goto out_free_tags;

	err = vbblk_alloc_queues(vblk, &lim, &feat);
	if (err)
		goto out_free_tags;

	err = vbblk_assign_name(vblk->disk);
	if (err < 0)
		goto out_put_disk;
	vblk->index = err;

	vblk->disk->major = vbblk_major;
	vblk->disk->first_minor = vblk->index << VBBLK_PART_BITS;
	vblk->disk->minors = 1 << VBBLK_PART_BITS;
	vblk->disk->private_data = vblk;

	if (vblk->mode == VBBLK_MODE_BIO) {
		err = vbblk_bio_init(vblk);
		if (err)
			goto out_free_index;
		err = vbblk_batch_add_disk(vblk);
		if (err)
			goto out_bio_exit;
	}

	vblk->read_only = virtio_has_feature(vdev, VIRTIO_BLK_F_RO);
	if (vblk->read_only)
		set_disk_ro(vblk->disk, true);
	vblk->has_flush = virtio_has_feature(vdev, VIRTIO_BLK_F_FLUSH);
	vblk->has_discard = virtio_has_feature(vdev, VIRTIO_BLK_F_DISCARD);
	vblk->has_write_zeroes = virtio_has_feature(vdev,
						    VIRTIO_BLK_F_WRITE_ZEROES);
	vblk->wce_changeable = virtio_has_feature(vdev,
						  VIRTIO_BLK_F_CONFIG_WCE);
	vbblk_scsi_limits(vblk);

	virtio_device_ready(vdev);

	vbblk_update_capacity(vblk, false);
	err = device_add_disk(&vdev->dev, vblk->disk, vbblk_attr_groups);
	if (err)
		goto out_reset;

	/* Without its passthrough device the disk still works: say so. */
	err = vbblk_uring_add(vblk);
	if (err)
		dev_warn(&vdev->dev, "%s: no /dev/vbblk/%s (error %d)\n",
			 vblk->disk->disk_name, vblk->disk->disk_name, err);

	dev_info(&vdev->dev, "%s: %s mode, %u queue%s (%u polled), %s (%s), depth %u, %u segments\n",
		 vblk->disk->disk_name, vbblk_mode_names[vblk->mode],
		 vblk->num_vqs, vblk->num_vqs > 1 ? "s" : "",
		 vblk->num_poll_vqs,
		 vblk->paired ? "each with an indirect ring" :
		 "one ring each", why,
		 vblk->tag_set.queue_depth, vblk->sg_elems);
	return 0;

out_reset:
	virtio_reset_device(vdev);
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_batch_remove_disk(vblk);
out_bio_exit:
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_exit(vblk);
out_free_index:
	/* The disk was never added, so put_disk() won't call free_disk. */
	ida_free(&vbblk_index_ida, vblk->index);
out_put_disk:
	vbblk_free_queues(vblk);
out_free_tags:
	blk_mq_free_tag_set(&vblk->tag_set);
out_del_vqs:
	/*
	 * find_vqs enabled the queues, and a device keeps them until reset:
	 * the next probe's find_vqs would fail (-ENOENT). After out_reset
	 * this is a second reset, which is harmless.
	 */
	virtio_reset_device(vdev);
	vbblk_del_vqs(vblk);
	kfree(vblk->vqs);
out_free:
	free_percpu(vblk->stats);
	mutex_destroy(&vblk->vdev_mutex);
	kfree(vblk);
	vdev->priv = NULL;
	return err;
}

static void vbblk_remove(struct virtio_device *vdev)
{
	struct vbblk *vblk = vdev->priv;

	/* The virtio core disabled config callbacks before calling us. */
	flush_work(&vblk->config_work);
	flush_work(&vblk->dead_mark_work);

	vblk->dead_seen = vbblk_vqs_completed(vblk);
	vblk->dead_stalled = 0;
	schedule_delayed_work(&vblk->dead_work, HZ);

	/* Passthrough first: its node is the disk's child. */
	vbblk_uring_remove(vblk);

	/*
	 * No new I/O after this. blk-mq waits for its requests here; bios
	 * do not hold the queue once submitted, so drain those ourselves.
	 */
	del_gendisk(vblk->disk);
	if (vblk->mode == VBBLK_MODE_BIO) {
		vbblk_batch_remove_disk(vblk);
		/* Freeze drained it, and no bio got in since: no rings to kick. */
		if (!vblk->rings_gone)
			vbblk_bio_drain(vblk);
		blk_mq_destroy_queue(vblk->rq_queue);
	}
	cancel_delayed_work_sync(&vblk->dead_work);
	blk_mq_free_tag_set(&vblk->tag_set);

	mutex_lock(&vblk->vdev_mutex);
	virtio_reset_device(vdev);
	if (!vblk->rings_gone)
		vbblk_del_vqs(vblk);
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_exit(vblk);
	kfree(vblk->vqs);
	vblk->vqs = NULL;
	vblk->vdev = NULL;
	mutex_unlock(&vblk->vdev_mutex);

	/* Last reference may be an opener's: vbblk_free_disk() frees vblk. */
	put_disk(vblk->disk);
}

#ifdef CONFIG_PM_SLEEP
/*
 * Suspend holds no queue frozen while the rings go: reset and vq teardown
 * allocate and take the MSI mutex, and a frozen queue is a lock reclaim may
 * wait on. Freezing only waits out what is in flight; then blk-mq holds
 * requests at dispatch (quiesced, as upstream virtio_blk does) and new
 * bios park (vbblk_bio_suspend()) until restore.
 */
static void vbblk_stop_requests(struct vbblk *vblk)
{
	struct request_queue *q = vblk->rq_queue;
	/* Pollers are frozen tasks by now (6.1's virtio_blk waits for ever) */
	unsigned int memflags = vbblk_freeze_reaping(vblk, q);

	/*
	 * A dispatch whose request the device has already completed may still
	 * be on its way to notify (after the lock): wait for it, or the
	 * notify meets a deleted virtqueue.
	 */
	blk_mq_quiesce_queue(q);
	vbblk_unfreeze_queue_restore(q, memflags);
}

static int vbblk_freeze(struct virtio_device *vdev)
{
	struct vbblk *vblk = vdev->priv;

	/* An earlier restore failed: no rings, a dead disk, nothing to stop. */
	if (vblk->rings_gone)
		return 0;
	/* Drain and block new I/O, passthrough too, before the rings go. */
	vbblk_uring_freeze(vblk);
	if (vblk->mode == VBBLK_MODE_BIO) {
		unsigned int memflags;

		vbblk_bio_suspend(vblk);
		memflags = vbblk_quiesce(vblk);
		vbblk_unfreeze_queue_restore(vblk->disk->queue, memflags);
	}
	vbblk_stop_requests(vblk);
	virtio_reset_device(vdev);
	flush_work(&vblk->config_work);
	vbblk_del_vqs(vblk);
	vblk->rings_gone = true;
	return 0;
}

/*
 * Restore could not make the rings: the disk is dead until it is unbound.
 * Held I/O would wait for ever, and unbind would then hang writing dirty
 * pages back into it; so everything fails instead. The ring refuses
 * commands (broken), and so do the bio path and the driver's requests
 * (vbblk_rq_alloc_drv()): parked bios and quiesced requests fail once let
 * go, and the passthrough node goes. The disk is marked dead
 * (blk_mark_disk_dead(): capacity 0, its file systems shut down) from a
 * work item, as nvme does from its reset work: not in the resume callback,
 * while kernel threads a file system may wait on (jbd2, writeback) are
 * still frozen.
 */
static void vbblk_restore_failed(struct vbblk *vblk, int err)
{
	dev_err(&vblk->vdev->dev,
		"%s: no virtqueues after resume (error %d): failing all I/O\n",
		vblk->disk->disk_name, err);
	WRITE_ONCE(vblk->broken, true);
	vbblk_uring_remove(vblk);
	blk_mq_unquiesce_queue(vblk->rq_queue);
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_resume(vblk);
	schedule_work(&vblk->dead_mark_work);
}

static int vbblk_restore(struct virtio_device *vdev)
{
	struct vbblk *vblk = vdev->priv;
	int err, tries;

	/* Dead since an earlier restore failed: GD_DEAD cannot be undone. */
	if (READ_ONCE(vblk->broken))
		return -ENODEV;
	/*
	 * An allocation may fail for a moment, and there is no later chance:
	 * retry. If the rings still cannot be made, the disk fails all I/O
	 * until it is unbound.
	 */
	for (tries = 0; tries < 3; tries++) {
		err = vbblk_init_vqs(vblk, vblk->num_vqs, vblk->num_poll_vqs,
				     vblk->paired);
		if (err != -ENOMEM)
			break;
		msleep(100);
	}
	if (err) {
		vbblk_restore_failed(vblk, err);
		return err;
	}
	vblk->rings_gone = false;
	virtio_device_ready(vdev);
	blk_mq_unquiesce_queue(vblk->rq_queue);
	if (vblk->mode == VBBLK_MODE_BIO)
		vbblk_bio_resume(vblk);
	vbblk_uring_restore(vblk);
	return 0;
}
#endif

static const struct virtio_device_id vbblk_id_table[] = {
	{ VIRTIO_ID_BLOCK, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static unsigned int vbblk_features[] = {
	VIRTIO_BLK_F_SEG_MAX, VIRTIO_BLK_F_SIZE_MAX, VIRTIO_BLK_F_GEOMETRY,
	VIRTIO_BLK_F_RO, VIRTIO_BLK_F_BLK_SIZE, VIRTIO_BLK_F_FLUSH,
	VIRTIO_BLK_F_TOPOLOGY, VIRTIO_BLK_F_CONFIG_WCE, VIRTIO_BLK_F_MQ,
	VIRTIO_BLK_F_DISCARD, VIRTIO_BLK_F_WRITE_ZEROES,
	VIRTIO_BLK_F_SECURE_ERASE,
};

/* SCSI passthrough exists only in the legacy interface. */
static unsigned int vbblk_features_legacy[] = {
	VIRTIO_BLK_F_SEG_MAX, VIRTIO_BLK_F_SIZE_MAX, VIRTIO_BLK_F_GEOMETRY,
	VIRTIO_BLK_F_RO, VIRTIO_BLK_F_BLK_SIZE, VIRTIO_BLK_F_FLUSH,
	VIRTIO_BLK_F_TOPOLOGY, VIRTIO_BLK_F_CONFIG_WCE, VIRTIO_BLK_F_MQ,
	VIRTIO_BLK_F_DISCARD, VIRTIO_BLK_F_WRITE_ZEROES,
	VIRTIO_BLK_F_SECURE_ERASE, VIRTIO_BLK_F_SCSI,
};

/*
 * Before the features are final: indirect=N, and direct rings
 * (vbblk_direct_rings()), turn indirect descriptors off.
 */
static int vbblk_validate(struct virtio_device *vdev)
{
	if (!READ_ONCE(vbblk_indirect) || vbblk_direct_rings(vdev))
		__virtio_clear_bit(vdev, VIRTIO_RING_F_INDIRECT_DESC);
	return 0;
}

static struct virtio_driver vbblk_driver = {
	.driver.name		= VBBLK_NAME,
	.driver.owner		= THIS_MODULE,
	.feature_table		= vbblk_features,
	.feature_table_size	= ARRAY_SIZE(vbblk_features),
	.feature_table_legacy	= vbblk_features_legacy,
	.feature_table_size_legacy = ARRAY_SIZE(vbblk_features_legacy),
	.id_table		= vbblk_id_table,
	.validate		= vbblk_validate,
	.probe			= vbblk_probe,
	.remove			= vbblk_remove,
	.config_changed		= vbblk_config_changed,
#ifdef CONFIG_PM_SLEEP
	.freeze			= vbblk_freeze,
	.restore		= vbblk_restore,
#endif
};

static int __init vbblk_init(void)
{
	int err;

	err = vbblk_batch_cpuhp_init();
	if (err)
		return err;

	vbblk_major = register_blkdev(0, VBBLK_NAME);
	if (vbblk_major < 0) {
		err = vbblk_major;
		goto out_cpuhp;
	}

	err = vbblk_uring_register();
	if (err)
		goto out_blkdev;

	err = register_virtio_driver(&vbblk_driver);
	if (err)
		goto out_uring;
	vbblk_debugfs_init();
	return 0;

out_uring:
	vbblk_uring_unregister();
out_blkdev:
	unregister_blkdev(vbblk_major, VBBLK_NAME);
out_cpuhp:
	vbblk_batch_cpuhp_exit();
	return err;
}

static void __exit vbblk_exit(void)
{
	vbblk_debugfs_exit();
	unregister_virtio_driver(&vbblk_driver);
	vbblk_uring_unregister();
	unregister_blkdev(vbblk_major, VBBLK_NAME);
	vbblk_batch_cpuhp_exit();
	ida_destroy(&vbblk_index_ida);
}

module_init(vbblk_init);
module_exit(vbblk_exit);

/*
 * No MODULE_DEVICE_TABLE on purpose: udev would then load us for every
 * virtio disk and race the stock virtio_blk for the root disk. vbblk is
 * loaded explicitly and takes the disks no other driver holds.
 */
MODULE_DESCRIPTION("Virtio block driver with bio and request I/O paths");
MODULE_AUTHOR("vbblk developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(VBBLK_VERSION);
