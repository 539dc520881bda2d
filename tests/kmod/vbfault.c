// SPDX-License-Identifier: GPL-2.0
/*
 * vbfault: fault injection for vbblk's tests, on guest kernels built
 * without any (Debian's has no FAILSLAB or FUNCTION_ERROR_INJECTION, but
 * has kretprobes). Test-only, like vbbiotest: tests/run builds it for the
 * guest kernel and puts it in the test initramfs; nothing installs it.
 *
 *   insmod vbfault.ko
 *   echo 1 > /sys/kernel/debug/vbfault/kvmalloc_fail_min
 *   insmod vbblk.ko ...	its kvmalloc()s get vmalloc memory
 *   echo 0 > /sys/kernel/debug/vbfault/kvmalloc_fail_min
 *   cat /sys/kernel/debug/vbfault/kvmalloc_fail
 *
 *   echo "3 17" > /sys/kernel/debug/vbfault/indirect_fail
 *   ...		the next 3 indirect tables of 17+ descriptors fail
 *   cat /sys/kernel/debug/vbfault/indirect_fail
 *
 * kvmalloc_fail_min: while not 0, a kvmalloc() of at least that many
 * bytes, and of more than a page (below that kvmalloc() has no fallback),
 * falls back to vmalloc: its kmalloc attempt is made to fail. Nothing
 * else does: a kretprobe on that kmalloc frees what it returned and
 * returns NULL only when it was called from kvmalloc() with the flags
 * kvmalloc() adds for its first try, and every kvmalloc() caller must
 * cope with vmalloc memory anyway. The probe exists only while the
 * switch is on. Writing a non-zero value fails with EOPNOTSUPP where the
 * kernel's kvmalloc() is not the one probed.
 *
 * kvmalloc_fail: "on min=N failed=F missed=M" (F kvmalloc()s sent to
 * vmalloc since load, M calls the probe had no room to look at), "off
 * failed=F missed=M", or "SKIP - why" where the switch cannot work.
 *
 * indirect_fail: writing "N [MIN]" makes the next N allocations of a
 * virtqueue's indirect descriptor table (GFP_ATOMIC in virtio_ring's add
 * path, any virtio device) of at least MIN descriptors (default 1) fail,
 * as a GFP_ATOMIC allocation may: a kretprobe on the kmalloc the add path
 * calls frees the table and returns NULL when its caller is that add
 * path. A MIN above the ring size fails only commands that no direct
 * descriptors can carry. The probe exists while failures are left; 0
 * switches it off. Reads "on left=N min=M failed=F missed=X", "off
 * failed=F missed=X" or "SKIP - why"; writing fails with EOPNOTSUPP where
 * the switch cannot work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/virtio_ring.h>
#include <linux/workqueue.h>

#include "vbtest_compat.h"

/* One switch: a kretprobe registered only while it is on. */
struct vbf_switch {
	const char *symbol;		/* the probed function */
	kretprobe_handler_t entry;
	kretprobe_handler_t handler;
	struct kretprobe probe;
	bool registered;
	unsigned long missed;		/* of unregistered probes */
	char skip[128];			/* why the switch cannot work, or "" */
};

static DEFINE_MUTEX(vbf_lock);		/* the switches: all but counters */
static struct dentry *vbf_dir;

/* Is @addr in the function @name (of vmlinux or a module)? */
static bool vbf_addr_in(unsigned long addr, const char *name)
{
	char sym[64];	/* names we look for are shorter: truncation is fine */
	size_t n = strlen(name);

	/* "%ps" gives "name" or "name [module]"; name.cold does not match. */
	snprintf(sym, sizeof(sym), "%ps", (void *)addr);
	return !strncmp(sym, name, n) && (!sym[n] || sym[n] == ' ');
}

/* ---- kvmalloc_fail_min ---- */

static unsigned long vbf_min;		/* 0: off; read locklessly by the probe */
static atomic_long_t vbf_failed;

/*
 * At the kmalloc's entry: look at its return only for the size and
 * flags of kvmalloc()'s first try (__GFP_NORETRY | __GFP_NOWARN above a
 * page), so that other calls take no instance of the probe.
 */
static int vbf_kmalloc_entry(struct kretprobe_instance *ri,
			     struct pt_regs *regs)
{
	const gfp_t kv = __GFP_NORETRY | __GFP_NOWARN;
	unsigned long min = READ_ONCE(vbf_min);
	size_t size = regs_get_kernel_argument(regs, 0);
	gfp_t flags = (__force gfp_t)regs_get_kernel_argument(regs, 1);

	return !min || size < min || size <= PAGE_SIZE || (flags & kv) != kv;
}

/* At its return: called from kvmalloc()? Then fail it, freeing the memory. */
static int vbf_kmalloc_return(struct kretprobe_instance *ri,
			      struct pt_regs *regs)
{
	void *p = (void *)regs_return_value(regs);

	if (!p || !vbf_addr_in(get_kretprobe_retaddr(ri), VBF_KVMALLOC))
		return 0;
	kfree(p);
	regs_set_return_value(regs, 0);
	atomic_long_inc(&vbf_failed);
	return 0;
}

static struct vbf_switch vbf_kv = {
	.symbol		= VBF_KMALLOC,
	.entry		= vbf_kmalloc_entry,
	.handler	= vbf_kmalloc_return,
};

/* ---- indirect_fail ---- */

/* Split and packed descriptors have one size: the table is N of them. */
#define VBF_DESC_SIZE	sizeof(struct vring_desc)

static const char * const vbf_ind_callers[] = { VBF_INDIRECT_CALLERS, NULL };
static atomic_t vbf_ind_left;		/* failures still to inject */
static unsigned long vbf_ind_min;	/* descriptors; read locklessly */
static atomic_long_t vbf_ind_failed;
static struct work_struct vbf_ind_off;

/*
 * At the kmalloc's entry: claim one of the failures for a table of at
 * least vbf_ind_min descriptors asked for by virtio_ring's add path.
 * Other calls take no instance, and concurrent adds claim no more than
 * were asked for. The return is not hooked yet (get_kretprobe_retaddr()
 * is not set): the return address is the stack's top, where the hook
 * takes it from.
 */
static int vbf_ind_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	size_t size = regs_get_kernel_argument(regs, 0);
	const char * const *fn;
	unsigned long caller;

	if (!atomic_read(&vbf_ind_left) ||
	    size < READ_ONCE(vbf_ind_min) * VBF_DESC_SIZE ||
	    size % VBF_DESC_SIZE)
		return 1;
	caller = regs_get_kernel_stack_nth(regs, 0);
	for (fn = vbf_ind_callers; *fn; fn++)
		if (vbf_addr_in(caller, *fn))
			return atomic_dec_if_positive(&vbf_ind_left) < 0;
	return 1;
}

/* At its return: fail the claimed call; the last one switches off. */
static int vbf_ind_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	kfree((void *)regs_return_value(regs));
	regs_set_return_value(regs, 0);
	atomic_long_inc(&vbf_ind_failed);
	if (!atomic_read(&vbf_ind_left))
		schedule_work(&vbf_ind_off);
	return 0;
}

static struct vbf_switch vbf_ind = {
	.symbol		= VBF_INDIRECT_KMALLOC,
	.entry		= vbf_ind_entry,
	.handler	= vbf_ind_return,
};

/* ---- drv_fail ---- */

static unsigned long vbf_drv_start, vbf_drv_len;	/* read locklessly */
static atomic_t vbf_drv_left;		/* nth mode: calls until the failure */
static unsigned int vbf_drv_pct;	/* pct mode: probability */
static atomic_long_t vbf_drv_seen, vbf_drv_failed;

/*
 * At an allocator's entry: a call from the range? Count it and decide;
 * only a call to fail takes an instance (its return is hooked).
 */
static int vbf_drv_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long caller = regs_get_kernel_stack_nth(regs, 0);
	unsigned int pct = READ_ONCE(vbf_drv_pct);

	if (caller - READ_ONCE(vbf_drv_start) >= READ_ONCE(vbf_drv_len))
		return 1;
	atomic_long_inc(&vbf_drv_seen);
	if (pct)
		return get_random_u32() % 100 >= pct;
	return !atomic_dec_and_test(&vbf_drv_left);
}

static int vbf_drv_fail(struct pt_regs *regs, void (*release)(const void *p))
{
	void *p = (void *)regs_return_value(regs);

	if (!p)
		return 0;
	release(p);
	regs_set_return_value(regs, 0);
	atomic_long_inc(&vbf_drv_failed);
	return 0;
}

static void vbf_free_percpu(const void *p)
{
	free_percpu((void __percpu *)p);
}

static int vbf_drv_kfree(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return vbf_drv_fail(regs, kfree);
}

static int vbf_drv_kvfree(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return vbf_drv_fail(regs, kvfree);
}

static int vbf_drv_pfree(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return vbf_drv_fail(regs, vbf_free_percpu);
}

static const char * const vbf_drv_kmalloc[] = { VBF_DRV_KMALLOC };
#define VBF_DRV_N	(ARRAY_SIZE(vbf_drv_kmalloc) + 2)
static struct vbf_switch vbf_drv[VBF_DRV_N];
static char vbf_drv_skip[128];

static void vbf_drv_setup(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vbf_drv_kmalloc); i++)
		vbf_drv[i] = (struct vbf_switch) { .symbol = vbf_drv_kmalloc[i],
			.entry = vbf_drv_entry, .handler = vbf_drv_kfree };
	vbf_drv[i++] = (struct vbf_switch) { .symbol = VBF_DRV_KVMALLOC,
		.entry = vbf_drv_entry, .handler = vbf_drv_kvfree };
	vbf_drv[i] = (struct vbf_switch) { .symbol = VBF_DRV_PERCPU,
		.entry = vbf_drv_entry, .handler = vbf_drv_pfree };
	if (!VBF_DRV_PROBED)
		snprintf(vbf_drv_skip, sizeof(vbf_drv_skip),
			 "the allocators are not probed from 6.10");
}

/* ---- registration, under vbf_lock ---- */

static void vbf_unregister(struct vbf_switch *s)
{
	if (!s->registered)
		return;
	unregister_kretprobe(&s->probe);
	s->missed += s->probe.nmissed;
	s->registered = false;
}

static int vbf_register(struct vbf_switch *s)
{
	int err;

	if (s->registered)
		return 0;
	/* A kretprobe keeps the address it was registered at: start afresh. */
	s->probe = (struct kretprobe) {
		.kp.symbol_name	= s->symbol,
		.entry_handler	= s->entry,
		.handler	= s->handler,
	};
	err = register_kretprobe(&s->probe);
	if (err == -ENOENT) {
		snprintf(s->skip, sizeof(s->skip),
			 "no %s() to probe in this kernel", s->symbol);
		return -EOPNOTSUPP;
	}
	if (err)
		return err;
	s->registered = true;
	return 0;
}

static unsigned long vbf_nmissed(struct vbf_switch *s)
{
	return s->missed + (s->registered ? s->probe.nmissed : 0);
}

static void vbf_ind_off_work(struct work_struct *work)
{
	mutex_lock(&vbf_lock);
	if (!atomic_read(&vbf_ind_left))
		vbf_unregister(&vbf_ind);
	mutex_unlock(&vbf_lock);
}

static void vbf_drv_off(void)
{
	unsigned int i;

	WRITE_ONCE(vbf_drv_len, 0);
	for (i = 0; i < VBF_DRV_N; i++)
		vbf_unregister(&vbf_drv[i]);
}

/* ---- debugfs ---- */

static ssize_t vbf_drv_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	unsigned long start, size;
	unsigned int i, n;
	char buf[96], mode[8];
	int err = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	mutex_lock(&vbf_lock);
	vbf_drv_off();
	if (sysfs_streq(buf, "0"))
		goto out;
	if (sscanf(buf, "%lx %lu %7s %u", &start, &size, mode, &n) != 4 ||
	    !size || !n || (strcmp(mode, "nth") && strcmp(mode, "pct")) ||
	    (!strcmp(mode, "pct") && n > 100)) {
		err = -EINVAL;
		goto out;
	}
	if (vbf_drv_skip[0]) {
		err = -EOPNOTSUPP;
		goto out;
	}
	atomic_long_set(&vbf_drv_seen, 0);
	atomic_long_set(&vbf_drv_failed, 0);
	atomic_set(&vbf_drv_left, strcmp(mode, "nth") ? 0 : n);
	WRITE_ONCE(vbf_drv_pct, strcmp(mode, "pct") ? 0 : n);
	WRITE_ONCE(vbf_drv_start, start);
	WRITE_ONCE(vbf_drv_len, size);
	for (i = 0; i < VBF_DRV_N && !err; i++)
		err = vbf_register(&vbf_drv[i]);
	if (err) {
		pr_warn("cannot probe the allocators: %d\n", err);
		vbf_drv_off();
	}
out:
	mutex_unlock(&vbf_lock);
	return err ?: len;
}

static ssize_t vbf_drv_read(struct file *file, char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	unsigned long missed = 0;
	char buf[160];
	unsigned int i;
	int n;

	mutex_lock(&vbf_lock);
	for (i = 0; i < VBF_DRV_N; i++)
		missed += vbf_nmissed(&vbf_drv[i]);
	if (vbf_drv_skip[0])
		n = scnprintf(buf, sizeof(buf), "SKIP - %s\n", vbf_drv_skip);
	else
		n = scnprintf(buf, sizeof(buf), "%s seen=%ld failed=%ld missed=%lu\n",
			      vbf_drv[0].registered ? "on" : "off",
			      atomic_long_read(&vbf_drv_seen),
			      atomic_long_read(&vbf_drv_failed), missed);
	mutex_unlock(&vbf_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations vbf_drv_fops = {
	.owner	= THIS_MODULE,
	.read	= vbf_drv_read,
	.write	= vbf_drv_write,
	.llseek	= default_llseek,
};


static ssize_t vbf_min_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	unsigned long min;
	int err;

	err = kstrtoul_from_user(ubuf, len, 0, &min);
	if (err)
		return err;
	mutex_lock(&vbf_lock);
	if (!min) {
		WRITE_ONCE(vbf_min, 0);
		vbf_unregister(&vbf_kv);
	} else if (vbf_kv.skip[0]) {
		err = -EOPNOTSUPP;
	} else {
		WRITE_ONCE(vbf_min, min);
		err = vbf_register(&vbf_kv);
		if (err) {
			WRITE_ONCE(vbf_min, 0);
			pr_warn("cannot probe %s(): %d %s\n", VBF_KMALLOC, err,
				vbf_kv.skip);
		}
	}
	mutex_unlock(&vbf_lock);
	return err ?: len;
}

static ssize_t vbf_min_read(struct file *file, char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	char buf[24];
	int n;

	mutex_lock(&vbf_lock);
	n = scnprintf(buf, sizeof(buf), "%lu\n", vbf_min);
	mutex_unlock(&vbf_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static ssize_t vbf_status_read(struct file *file, char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	char buf[160];
	int n;

	mutex_lock(&vbf_lock);
	if (vbf_kv.skip[0])
		n = scnprintf(buf, sizeof(buf), "SKIP - %s\n", vbf_kv.skip);
	else
		n = scnprintf(buf, sizeof(buf), "%s min=%lu failed=%ld missed=%lu\n",
			      vbf_kv.registered ? "on" : "off", vbf_min,
			      atomic_long_read(&vbf_failed),
			      vbf_nmissed(&vbf_kv));
	mutex_unlock(&vbf_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static ssize_t vbf_ind_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	unsigned int count, min = 1;
	char buf[32];
	int err = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%u %u", &count, &min) < 1 || count > INT_MAX)
		return -EINVAL;
	mutex_lock(&vbf_lock);
	if (!count) {
		atomic_set(&vbf_ind_left, 0);
		vbf_unregister(&vbf_ind);
	} else if (vbf_ind.skip[0]) {
		err = -EOPNOTSUPP;
	} else {
		WRITE_ONCE(vbf_ind_min, min);
		atomic_set(&vbf_ind_left, count);
		err = vbf_register(&vbf_ind);
		if (err) {
			atomic_set(&vbf_ind_left, 0);
			pr_warn("cannot probe %s(): %d %s\n",
				VBF_INDIRECT_KMALLOC, err, vbf_ind.skip);
		}
	}
	mutex_unlock(&vbf_lock);
	return err ?: len;
}

static ssize_t vbf_ind_read(struct file *file, char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	long failed = atomic_long_read(&vbf_ind_failed);
	char buf[160];
	int n;

	mutex_lock(&vbf_lock);
	if (vbf_ind.skip[0])
		n = scnprintf(buf, sizeof(buf), "SKIP - %s\n", vbf_ind.skip);
	else if (vbf_ind.registered)
		n = scnprintf(buf, sizeof(buf),
			      "on left=%d min=%lu failed=%ld missed=%lu\n",
			      atomic_read(&vbf_ind_left), vbf_ind_min, failed,
			      vbf_nmissed(&vbf_ind));
	else
		n = scnprintf(buf, sizeof(buf), "off failed=%ld missed=%lu\n",
			      failed, vbf_nmissed(&vbf_ind));
	mutex_unlock(&vbf_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations vbf_min_fops = {
	.owner	= THIS_MODULE,
	.read	= vbf_min_read,
	.write	= vbf_min_write,
	.llseek	= default_llseek,
};

static const struct file_operations vbf_status_fops = {
	.owner	= THIS_MODULE,
	.read	= vbf_status_read,
	.llseek	= default_llseek,
};

static const struct file_operations vbf_ind_fops = {
	.owner	= THIS_MODULE,
	.read	= vbf_ind_read,
	.write	= vbf_ind_write,
	.llseek	= default_llseek,
};

static int __init vbf_init(void)
{
	BUILD_BUG_ON(sizeof(struct vring_packed_desc) != VBF_DESC_SIZE);
	INIT_WORK(&vbf_ind_off, vbf_ind_off_work);
	if (!VBF_KVMALLOC_PROBED)
		snprintf(vbf_kv.skip, sizeof(vbf_kv.skip),
			 "kvmalloc() does not call %s() from 6.10", VBF_KMALLOC);
	if (!VBF_INDIRECT_PROBED)
		snprintf(vbf_ind.skip, sizeof(vbf_ind.skip),
			 "virtio_ring's indirect tables are not probed from 6.10");
	vbf_drv_setup();
	vbf_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("drv_fail", 0600, vbf_dir, NULL, &vbf_drv_fops);
	debugfs_create_file("kvmalloc_fail_min", 0600, vbf_dir, NULL,
			    &vbf_min_fops);
	debugfs_create_file("kvmalloc_fail", 0400, vbf_dir, NULL,
			    &vbf_status_fops);
	debugfs_create_file("indirect_fail", 0600, vbf_dir, NULL,
			    &vbf_ind_fops);
	return 0;
}

static void __exit vbf_exit(void)
{
	debugfs_remove_recursive(vbf_dir);
	/* No handler runs once unregistered: then nothing queues the work. */
	mutex_lock(&vbf_lock);
	vbf_unregister(&vbf_kv);
	vbf_unregister(&vbf_ind);
	vbf_drv_off();
	mutex_unlock(&vbf_lock);
	cancel_work_sync(&vbf_ind_off);
}

module_init(vbf_init);
module_exit(vbf_exit);
MODULE_DESCRIPTION("vbblk test only: kvmalloc() fallback, indirect descriptor and driver allocation failures");
MODULE_LICENSE("GPL");
