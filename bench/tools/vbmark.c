// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vbmark - marker instructions for the kinsn QEMU plugin.
 *
 *   vbmark                       snapshot the kernel/user instruction counters
 *   vbmark prof-on | prof-off    open / close a per-TB profile window
 *   vbmark window SETTLE_MS WINDOW_MS [prof]
 *        wait until block I/O is flowing (/proc/vmstat pgpgin+pgpgout moves),
 *        wait SETTLE_MS more, then snapshot, sleep WINDOW_MS, snapshot, and
 *        print "kib=<KiB submitted between the snapshots>". With "prof" the
 *        window is also a profile window.
 *
 * A marker is an 8-byte NOP whose displacement is the tag, so this is a
 * no-op without the plugin. The window form measures inside a running fio,
 * in one process: nothing is exec'd between its two snapshots, and only a
 * vmstat read and a nanosleep are added to what it measures.
 * pgpgin/pgpgout count every bio at submit_bio(), whatever the driver.
 * I/O that no bio carries (the io_uring passthrough node) is counted by a
 * file instead: VBMARK_COUNTER=PATH:KIB reads a number of I/Os from PATH
 * (e.g. /sys/block/vdb/vbblk/uring_cmds), each KIB KiB.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* nopl disp32(%rax,%rax,1) with the tag as displacement */
static inline void marker_snapshot(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x84,0x00,0x56,0x42,0x4d,0x4b" ::: "memory");
}

static inline void marker_prof_on(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x84,0x00,0x56,0x42,0x50,0x31" ::: "memory");
}

static inline void marker_prof_off(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x84,0x00,0x56,0x42,0x50,0x30" ::: "memory");
}

static char buf[16384];

/* KiB submitted so far (pgpgin + pgpgout); -1 on error */
static long long pgpg(void)
{
	long long sum = 0;
	int fd = open("/proc/vmstat", O_RDONLY);
	ssize_t n;
	char *p;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, "pgpgin ", 7))
			sum += atoll(p + 7);
		else if (!strncmp(p, "pgpgout ", 8))
			sum += atoll(p + 8);
	}
	return sum;
}

/* KiB moved so far: VBMARK_COUNTER's, else pgpg(); -1 on error */
static long long io_kib(void)
{
	static const char *path;
	static long long kib;
	char num[32], *colon;
	ssize_t n;
	int fd;

	if (!path) {
		const char *env = getenv("VBMARK_COUNTER");

		path = "";
		colon = env ? strrchr(env, ':') : NULL;
		if (colon) {
			path = strndup(env, colon - env);
			kib = atoll(colon + 1);
		}
	}
	if (!*path)
		return pgpg();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, num, sizeof(num) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	num[n] = 0;
	return atoll(num) * kib;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static int window(long settle, long len, int prof)
{
	long long start = io_kib(), a, b;
	int i;

	for (i = 0; io_kib() == start; i++) {
		if (start < 0 || i > 3000) {
			fprintf(stderr, "vbmark: no block I/O started in 30 s\n");
			return 1;
		}
		sleep_ms(10);
	}
	/* A slow start skews nothing measured, but says something is off. */
	if (i > 500)
		fprintf(stderr, "vbmark: the first I/O came after %d.%02d s\n",
			i / 100, i % 100);
	sleep_ms(settle);
	if (prof)
		marker_prof_on();
	marker_snapshot();
	a = io_kib();
	sleep_ms(len);
	marker_snapshot();
	b = io_kib();
	if (prof)
		marker_prof_off();
	printf("kib=%lld\n", b - a);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		marker_snapshot();
	else if (!strcmp(argv[1], "prof-on"))
		marker_prof_on();
	else if (!strcmp(argv[1], "prof-off"))
		marker_prof_off();
	else if (!strcmp(argv[1], "window") && argc >= 4)
		return window(atol(argv[2]), atol(argv[3]), argc > 4 && !strcmp(argv[4], "prof"));
	else
		return 2;
	return 0;
}
