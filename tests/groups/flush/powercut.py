"""Power-cut crash consistency (the `powercut` test).

One nbdkit serves tests/nbdkit/volcache.c over a unix socket: a disk with a
volatile write cache. A cycle boots the guest (tests/groups/flush/powercut.sh),
which checks what the last boot acknowledged and starts one writer (raw
O_DSYNC, raw fdatasync, ext4 fsync or ext4 O_DIRECT|O_DSYNC records, in turn) that prints "ACK <stream> <seq>"
once each record is durable; a random 0.5-4 s later the
host kills QEMU with SIGKILL, and nbdkit keeps a random subset of the
unflushed sectors. After the last cut a final boot only checks.

POWERCUTS=N sets the cuts per variant (default 6); POWERCUT_SEED fixes the
random choices. A summary lands in <outdir>/summary.txt.

run_cache_switch() is the `cache_cut` test: one cut right after cache_type
went from write back to write through, with writes completed and never
flushed before the switch (tests/groups/flush/cache_cut.sh).
"""
import hashlib
import os
import random
import re
import signal
import subprocess
import threading
import time

from cases import REPO
from vm import Disk, Guest, _BAD_RE

STREAMS = ('dsync', 'fdatasyn', 'fsync', 'extdsync')
_ACK = re.compile(r'^ACK (\w+) (\d+)$')
_CHECKED = re.compile(r'pcrec: (\w+): (\d+) acknowledged records checked')
# QEMU's own deaths, not the harness's SIGKILL
QEMU_CRASH = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL)


def _build_plugin(outdir):
    so = os.path.join(outdir, 'volcache.so')
    subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC', '-o', so,
                    os.path.join(REPO, 'tests', 'nbdkit', 'volcache.c')], check=True)
    return so


def _lines(path):
    try:
        data = open(path, errors='replace').read()
    except OSError:
        return []
    # a line cut by the kill has no newline: drop it
    return data.split('\n')[:-1]


def _take_acks(lines, acked):
    """The newest record of each stream a boot acknowledged."""
    for l in lines:
        m = _ACK.match(l.strip())
        if m and m.group(1) in acked:
            acked[m.group(1)] = max(acked[m.group(1)], int(m.group(2)))


def _wait_cut(stats, n):
    """Whether nbdkit has recorded n cuts: it applies one when it sees the
    connection close."""
    for _ in range(100):
        if len(_lines(stats)) >= n:
            return True
        time.sleep(0.1)
    return False


def run(outdir, ctx, cuts=None, keep='random'):
    cuts = cuts if cuts is not None else int(os.environ.get('POWERCUTS', '6'))
    seed = int(os.environ.get('POWERCUT_SEED', '0')) or int(time.time())
    rnd = random.Random(seed)
    os.makedirs(outdir, exist_ok=True)
    os.makedirs(ctx['imgdir'], exist_ok=True)
    img = os.path.join(ctx['imgdir'], 'pc.img')
    with open(img, 'wb') as f:
        f.truncate(64 << 20)
    stats = os.path.join(outdir, 'cuts.txt')
    open(stats, 'w').close()
    nbd, sock = _start_nbdkit(outdir, img, keep, seed, stats)
    summary = ['seed %d, %d cuts, params "%s"' % (seed, cuts, ctx['params'])]
    acked = {s: -1 for s in STREAMS}
    checked = {s: 0 for s in STREAMS}
    crashes = []
    try:
        if not sock:
            return 'nbdkit did not start (see nbdkit.log)'
        i = 0
        while i <= cuts:
            final = i == cuts
            bdir = os.path.join(outdir, 'boot%03d' % i + ('.%d' % len(crashes) if crashes else ''))
            disk = Disk('pc', backend='nbd', serial='PC-1')
            disk.path = sock
            timers = []

            def cut(guest, *args):
                delay = rnd.uniform(0.5, 4.0)
                timers.append(threading.Timer(delay, lambda: os.killpg(guest.proc.pid,
                                                                       signal.SIGKILL)))
                timers[-1].start()
                return 'in %.1fs\n' % delay

            g = Guest('powercut', bdir, ctx['kernel'], ctx['initrd'], disks=[disk],
                      driver=ctx['driver'], timeout=int(180 * ctx['scale']),
                      imgdir=ctx['imgdir'], actions={'powercut': cut},
                      vbblk_params=ctx['params'])
            g.prepare()
            g.prepare = lambda: None
            with open(os.path.join(g.share, 'pc.state'), 'w') as f:
                f.write('%d %d %d %d %s\n' % (tuple(acked[s] for s in STREAMS) +
                                            (STREAMS[i % len(STREAMS)],)))
            if final:
                open(os.path.join(g.share, 'pc.final'), 'w').close()
            res = g.run()
            for t in timers:
                t.cancel()
            lines = _lines(g.console)
            bad = [l for l in lines if _BAD_RE.search(l)]
            if bad:
                return 'boot %d: kernel problem: %s' % (i, bad[0].strip()[:200])
            if -(g.proc.returncode or 0) in QEMU_CRASH:
                # QEMU itself died (seen once: a SIGSEGV at guest time 1.3 s,
                # before any driver loaded): to the disk that is one more
                # power cut, so keep what this boot acknowledged and boot
                # again; a second crash in one run fails
                crashes.append('boot %d: QEMU died of signal %d' % (i, -g.proc.returncode))
                if len(crashes) > 1:
                    return '; '.join(crashes)
                _take_acks(lines, acked)
                if not _wait_cut(stats, i + len(crashes)):
                    return 'nbdkit did not record the crash at boot %d' % i
                continue
            for l in lines:
                m = _CHECKED.search(l)
                if m:
                    checked[m.group(1)] += int(m.group(2))
            if i and not any('PC-VERIFIED' in l for l in lines):
                fails = [l.strip() for l in lines if 'FAIL' in l or 'lost' in l]
                return 'boot %d (after cut %d): %s' % (i, i, '; '.join(fails[-4:]) or res.reason)
            if final:
                if not res.ok:
                    return 'final check boot: %s' % res.reason
                break
            if g.proc.returncode != -signal.SIGKILL:
                return 'boot %d was not cut (%s)' % (i, res.reason)
            _take_acks(lines, acked)
            if not _wait_cut(stats, i + 1 + len(crashes)):
                return 'nbdkit did not record cut %d' % (i + 1)
            i += 1
        st = _lines(stats)
        dirty = sum(int(l.split()[1]) for l in st)
        kept = sum(int(l.split()[3]) for l in st)
        summary.append('cuts survived: %d; acknowledged records checked: %s (%d); '
                       'unflushed sectors at the cuts: %d, of which written back: %d'
                       % (cuts, ', '.join('%s %d' % (s, checked[s]) for s in STREAMS),
                          sum(checked.values()), dirty, kept))
        summary += ['%s, taken as one more cut' % c for c in crashes]
        return None
    finally:
        _stop_nbdkit(nbd)
        with open(os.path.join(outdir, 'summary.txt'), 'w') as f:
            f.write('\n'.join(summary) + '\n')


def _start_nbdkit(outdir, img, keep, seed, stats):
    """volcache on a unix socket; (process, socket) once it listens, or
    (process, None)."""
    so = _build_plugin(outdir)
    sock = os.path.join(outdir, 'nbd.sock')
    if os.path.exists(sock):
        os.unlink(sock)
    nbd = subprocess.Popen(['nbdkit', '-f', '-U', sock, so, 'file=' + img, 'keep=%s' % keep,
                            'seed=%d' % seed, 'stats=' + stats],
                           stdout=open(os.path.join(outdir, 'nbdkit.log'), 'w'),
                           stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(sock) or nbd.poll() is not None:
            break
        time.sleep(0.1)
    ok = nbd.poll() is None and os.path.exists(sock)
    return nbd, sock if ok else None


def _stop_nbdkit(nbd):
    nbd.send_signal(signal.SIGTERM)
    try:
        nbd.wait(10)
    except subprocess.TimeoutExpired:
        nbd.kill()


def run_cache_switch(outdir, ctx):
    """Write 1 MiB (completed, unflushed), switch cache_type to write
    through, cut the power with a cache that keeps nothing unflushed: the
    image must hold the data."""
    os.makedirs(outdir, exist_ok=True)
    os.makedirs(ctx['imgdir'], exist_ok=True)
    img = os.path.join(ctx['imgdir'], 'cc.img')
    with open(img, 'wb') as f:
        f.truncate(16 << 20)
    stats = os.path.join(outdir, 'cuts.txt')
    open(stats, 'w').close()
    nbd, sock = _start_nbdkit(outdir, img, 0, 1, stats)
    try:
        if not sock:
            return 'nbdkit did not start (see nbdkit.log)'
        disk = Disk('cc', backend='nbd', serial='CC-1')
        disk.path = sock

        def cut(guest, *args):
            threading.Timer(0.5, lambda: os.killpg(guest.proc.pid, signal.SIGKILL)).start()
            return 'in 0.5s\n'

        g = Guest('cache_cut', os.path.join(outdir, 'boot'), ctx['kernel'], ctx['initrd'],
                  disks=[disk], driver=ctx['driver'], timeout=int(180 * ctx['scale']),
                  imgdir=ctx['imgdir'], actions={'cut': cut}, vbblk_params=ctx['params'])
        res = g.run()
        lines = _lines(g.console)
        bad = [l for l in lines if _BAD_RE.search(l)]
        if bad:
            return 'kernel problem: %s' % bad[0].strip()[:200]
        want = [l.split()[-1] for l in lines if 'PATTERN ' in l]
        if g.proc.returncode != -signal.SIGKILL or not want:
            return 'the guest was not cut after the switch: %s' % res.reason
        for _ in range(100):
            if _lines(stats):
                break
            time.sleep(0.1)
        else:
            return 'nbdkit did not record the cut'
        with open(img, 'rb') as f:
            got = hashlib.sha256(f.read(1 << 20)).hexdigest()
        if got != want[0]:
            return ('data written before cache_type went to write through was lost at '
                    'the power cut (%s; image sha256 %s, written %s)'
                    % (_lines(stats)[0].strip(), got[:16], want[0][:16]))
        return None
    finally:
        _stop_nbdkit(nbd)
