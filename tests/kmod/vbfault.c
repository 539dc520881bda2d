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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "vbtest_compat.h"

static DEFINE_MUTEX(vbf_lock);		/* the switch: all below but counters */
static unsigned long vbf_min;		/* 0: off; read locklessly by the probe */
static bool vbf_registered;
static struct kretprobe vbf_probe;
static char vbf_skip[128];		/* why the switch cannot work, or "" */
static atomic_long_t vbf_failed;
static unsigned long vbf_missed;	/* of unregistered probes */
static struct dentry *vbf_dir;

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
	char caller[sizeof(VBF_KVMALLOC) + 1];

	if (!p)
		return 0;
	/* Truncated, a longer name (kvmalloc_node.cold) does not match. */
	snprintf(caller, sizeof(caller), "%ps",
		 (void *)get_kretprobe_retaddr(ri));
	if (strcmp(caller, VBF_KVMALLOC))
		return 0;
	kfree(p);
	regs_set_return_value(regs, 0);
	atomic_long_inc(&vbf_failed);
	return 0;
}

static void vbf_unregister(void)
{
	if (!vbf_registered)
		return;
	unregister_kretprobe(&vbf_probe);
	vbf_missed += vbf_probe.nmissed;
	vbf_registered = false;
}

static int vbf_register(void)
{
	int err;

	if (vbf_registered)
		return 0;
	/* A kretprobe keeps the address it was registered at: start afresh. */
	vbf_probe = (struct kretprobe) {
		.kp.symbol_name	= VBF_KMALLOC,
		.entry_handler	= vbf_kmalloc_entry,
		.handler	= vbf_kmalloc_return,
	};
	err = register_kretprobe(&vbf_probe);
	if (err == -ENOENT) {
		snprintf(vbf_skip, sizeof(vbf_skip),
			 "no %s() to probe in this kernel", VBF_KMALLOC);
		return -EOPNOTSUPP;
	}
	if (err)
		return err;
	vbf_registered = true;
	return 0;
}

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
		vbf_unregister();
	} else if (vbf_skip[0]) {
		err = -EOPNOTSUPP;
	} else {
		WRITE_ONCE(vbf_min, min);
		err = vbf_register();
		if (err) {
			WRITE_ONCE(vbf_min, 0);
			pr_warn("cannot probe %s(): %d %s\n", VBF_KMALLOC, err,
				vbf_skip);
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
	if (vbf_skip[0])
		n = scnprintf(buf, sizeof(buf), "SKIP - %s\n", vbf_skip);
	else
		n = scnprintf(buf, sizeof(buf), "%s min=%lu failed=%ld missed=%lu\n",
			      vbf_registered ? "on" : "off", vbf_min,
			      atomic_long_read(&vbf_failed),
			      vbf_missed + (vbf_registered ? vbf_probe.nmissed : 0));
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

static int __init vbf_init(void)
{
	if (!VBF_KVMALLOC_PROBED)
		snprintf(vbf_skip, sizeof(vbf_skip),
			 "kvmalloc() does not call %s() from 6.10", VBF_KMALLOC);
	vbf_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("kvmalloc_fail_min", 0600, vbf_dir, NULL,
			    &vbf_min_fops);
	debugfs_create_file("kvmalloc_fail", 0400, vbf_dir, NULL,
			    &vbf_status_fops);
	return 0;
}

static void __exit vbf_exit(void)
{
	debugfs_remove_recursive(vbf_dir);
	vbf_unregister();
}

module_init(vbf_init);
module_exit(vbf_exit);
MODULE_DESCRIPTION("vbblk test only: kvmalloc() forced to fall back to vmalloc");
MODULE_LICENSE("GPL");
