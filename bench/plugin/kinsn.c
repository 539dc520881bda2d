// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kinsn - QEMU TCG plugin: count guest instructions executed at kernel
 * addresses (x86-64 upper half) and at user addresses, per vCPU, exactly.
 *
 * The guest asks for a snapshot by executing a marker: an 8-byte NOP
 * (nopl disp32(%rax,%rax,1)) whose displacement spells a tag. It is a
 * plain NOP on any CPU, so the marker program is harmless without us.
 *
 *   VBMK  append "mark <seq> kernel <K> user <U>" to the output file
 *   VBP1  start a profile window (per-translation-block exec counts)
 *   VBP0  end it and write <out>.prof<N>: "<vaddr> <insns> <execs>" lines
 *
 * Arguments: out=<file> (required), profile=on (enable VBP1/VBP0).
 * A bench takes the difference between two marks, so boot and setup
 * cancel out. A TB is counted whole when it starts; one that faults part
 * way is over-counted by its tail, as in QEMU's own counting plugins.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_API_VERSION;

#define KERNEL_BASE	0xffff800000000000ULL
#define MAX_VCPUS	256
#define TAG_MARK	0x4b4d4256u	/* "VBMK" */
#define TAG_PROF_ON	0x31504256u	/* "VBP1" */
#define TAG_PROF_OFF	0x30504256u	/* "VBP0" */
#define PROF_BITS	20
#define PROF_PROBES	256

/*
 * One writer per slot (its vCPU thread); readers only at marks. Padded to
 * a cache line so that vCPU threads do not share one.
 */
struct vcpu_count {
	uint64_t kernel;
	uint64_t user;
	uint64_t pad[6];
};

static struct vcpu_count counts[MAX_VCPUS];
static struct vcpu_count overflow;	/* vCPUs beyond MAX_VCPUS: atomic */

struct tb_rec {
	uint64_t vaddr;
	uint32_t insns;
	uint32_t kernel;
	uint64_t execs;
};

static struct tb_rec *prof;		/* open-addressed, 1 << PROF_BITS */
static bool prof_enabled;
static int prof_window;			/* read by every exec cb */
static uint64_t prof_missed;		/* kernel TBs left out: no room */
static unsigned int prof_files;
static unsigned long mark_seq;
static FILE *out;
static char *out_path;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void add(unsigned int vcpu, bool kernel, uint64_t n)
{
	uint64_t *c;

	if (vcpu >= MAX_VCPUS) {
		__atomic_fetch_add(kernel ? &overflow.kernel : &overflow.user, n,
				   __ATOMIC_RELAXED);
		return;
	}
	c = kernel ? &counts[vcpu].kernel : &counts[vcpu].user;
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/* udata = insns << 1 | kernel */
static void tb_exec(unsigned int vcpu, void *udata)
{
	uintptr_t v = (uintptr_t)udata;

	add(vcpu, v & 1, v >> 1);
}

static void tb_exec_prof(unsigned int vcpu, void *udata)
{
	struct tb_rec *r = udata;

	add(vcpu, r->kernel, r->insns);
	if (__atomic_load_n(&prof_window, __ATOMIC_RELAXED))
		__atomic_fetch_add(&r->execs, 1, __ATOMIC_RELAXED);
}

static void totals(uint64_t *k, uint64_t *u)
{
	unsigned int i;

	*k = __atomic_load_n(&overflow.kernel, __ATOMIC_RELAXED);
	*u = __atomic_load_n(&overflow.user, __ATOMIC_RELAXED);
	for (i = 0; i < MAX_VCPUS; i++) {
		*k += __atomic_load_n(&counts[i].kernel, __ATOMIC_RELAXED);
		*u += __atomic_load_n(&counts[i].user, __ATOMIC_RELAXED);
	}
}

static void prof_dump(void)
{
	char path[4096];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s.prof%u", out_path, prof_files++);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "kinsn: %s: %s\n", path, strerror(errno));
		return;
	}
	for (i = 0; i < (1u << PROF_BITS); i++) {
		struct tb_rec *r = &prof[i];
		uint64_t e = __atomic_load_n(&r->execs, __ATOMIC_RELAXED);

		if (r->insns && e)
			fprintf(f, "%" PRIx64 " %u %" PRIu64 "\n", r->vaddr, r->insns, e);
	}
	fclose(f);
}

static void marker(unsigned int vcpu, void *udata)
{
	uint32_t tag = (uint32_t)(uintptr_t)udata;
	uint64_t k, u;
	size_t i;

	(void)vcpu;
	totals(&k, &u);
	pthread_mutex_lock(&lock);
	if (tag == TAG_MARK) {
		fprintf(out, "mark %lu kernel %" PRIu64 " user %" PRIu64 "\n",
			mark_seq++, k, u);
		fflush(out);
	} else if (prof_enabled && tag == TAG_PROF_ON) {
		for (i = 0; i < (1u << PROF_BITS); i++)
			__atomic_store_n(&prof[i].execs, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&prof_window, 1, __ATOMIC_RELAXED);
	} else if (prof_enabled && tag == TAG_PROF_OFF) {
		__atomic_store_n(&prof_window, 0, __ATOMIC_RELAXED);
		prof_dump();
	}
	pthread_mutex_unlock(&lock);
}

/*
 * Find or add the record of a TB; NULL when its neighbourhood is full.
 * Probing is bounded: it runs under a global lock at every translation,
 * and a table near full once made each one scan most of a million
 * entries, so that fio took over a minute to start in a long run.
 */
static struct tb_rec *prof_rec(uint64_t vaddr, uint32_t insns, bool kernel)
{
	size_t mask = (1u << PROF_BITS) - 1;
	size_t i = (size_t)((vaddr ^ (vaddr >> 17) ^ insns) * 0x9e3779b97f4a7c15ULL) & mask;
	size_t probes;
	struct tb_rec *r = NULL;

	pthread_mutex_lock(&lock);
	for (probes = 0; probes < PROF_PROBES; probes++, i = (i + 1) & mask) {
		struct tb_rec *c = &prof[i];

		if (!c->insns) {
			c->vaddr = vaddr;
			c->kernel = kernel;
			__atomic_store_n(&c->insns, insns, __ATOMIC_RELEASE);
			r = c;
			break;
		}
		if (c->vaddr == vaddr && c->insns == insns) {
			r = c;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

static uint32_t marker_tag(const struct qemu_plugin_insn *insn)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);
	uint32_t tag;

	if (qemu_plugin_insn_size(insn) != 8 || b[0] != 0x0f || b[1] != 0x1f ||
	    b[2] != 0x84 || b[3] != 0x00)
		return 0;
	memcpy(&tag, b + 4, 4);
	if (tag == TAG_MARK || tag == TAG_PROF_ON || tag == TAG_PROF_OFF)
		return tag;
	return 0;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	bool kernel = vaddr >= KERNEL_BASE;
	struct tb_rec *r = NULL;
	size_t i;

	(void)id;
	/*
	 * Kernel TBs only: the profile is of the kernel, and every process
	 * adds user TBs at new addresses (ASLR), which filled the table.
	 */
	if (prof_enabled && kernel) {
		r = prof_rec(vaddr, (uint32_t)n, kernel);
		if (!r)
			__atomic_fetch_add(&prof_missed, 1, __ATOMIC_RELAXED);
	}
	if (r)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_prof,
						     QEMU_PLUGIN_CB_NO_REGS, r);
	else
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)(n << 1 | kernel));
	if (kernel)
		return;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t tag = marker_tag(insn);

		if (tag)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)tag);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	uint64_t k, u;

	(void)id;
	(void)udata;
	totals(&k, &u);
	fprintf(out, "exit kernel %" PRIu64 " user %" PRIu64 "\n", k, u);
	fclose(out);
	if (prof_missed)
		fprintf(stderr, "kinsn: %" PRIu64 " kernel TB translations not profiled (table full)\n",
			prof_missed);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const struct qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = strdup(argv[i] + 4);
		} else if (!strcmp(argv[i], "profile=on")) {
			prof_enabled = true;
		} else if (strcmp(argv[i], "profile=off")) {
			fprintf(stderr, "kinsn: unknown argument '%s' (out=FILE, profile=on|off)\n",
				argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "kinsn: out=FILE is required\n");
		return -1;
	}
	out = fopen(out_path, "w");
	if (!out) {
		fprintf(stderr, "kinsn: %s: %s\n", out_path, strerror(errno));
		return -1;
	}
	if (prof_enabled) {
		prof = calloc(1u << PROF_BITS, sizeof(*prof));
		if (!prof) {
			fprintf(stderr, "kinsn: no memory for the profile table\n");
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
