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
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
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

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/*
 * Each CPU's view of the clocks, to stderr: the monotonic clock as user
 * space reads it (the vDSO, as fio does) and the TSC, taken in turn on
 * every CPU, beside the kernel's uptime. For a run where fio is slow to
 * start: a CPU whose clock lags or stands still shows here.
 */
static void clocks(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), c;
	cpu_set_t all, one;
	struct timespec ts;
	unsigned int lo, hi;
	char up[64] = "";
	int fd;

	sched_getaffinity(0, sizeof(all), &all);
	for (c = 0; c < n; c++) {
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		fprintf(stderr, "vbmark: cpu %ld: monotonic %ld.%09ld tsc %llu\n", c,
			(long)ts.tv_sec, ts.tv_nsec,
			(unsigned long long)hi << 32 | lo);
	}
	sched_setaffinity(0, sizeof(all), &all);
	fd = open("/proc/uptime", O_RDONLY);
	if (fd >= 0) {
		if (read(fd, up, sizeof(up) - 1) < 0)
			up[0] = 0;
		close(fd);
	}
	fprintf(stderr, "vbmark: uptime %s", up);
}

static int window(long settle, long len, int prof)
{
	long long start = pgpg(), a, b;
	int i;

	/*
	 * fio's start-up once took over a minute (the plugin's profile table
	 * had filled): wait up to two minutes, and say, with each CPU's
	 * clocks, when the first I/O is late.
	 */
	for (i = 0; pgpg() == start; i++) {
		if (i == 1000)
			clocks();
		if (start < 0 || i > 12000) {
			fprintf(stderr, "vbmark: no block I/O started in 120 s\n");
			return 1;
		}
		sleep_ms(10);
	}
	if (i > 500) {
		fprintf(stderr, "vbmark: the first I/O came after %d.%02d s\n",
			i / 100, i % 100);
		clocks();
	}
	sleep_ms(settle);
	if (prof)
		marker_prof_on();
	marker_snapshot();
	a = pgpg();
	sleep_ms(len);
	marker_snapshot();
	b = pgpg();
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
