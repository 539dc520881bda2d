"""Boot one QEMU guest for a vbblk test, service its host-action requests
over a 9p share, and judge the outcome from the console log."""
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time

import kver
from bootimg import boot_image
from qmp import QMP, QMPError

# BUG: also starts KASAN, KFENCE and KCSAN reports; WARNING: lockdep's and
# DEBUG_OBJECTS' (ODEBUG) ones
BAD_PATTERNS = ['BUG:', 'WARNING:', 'Oops', 'Call Trace', 'hung_task', 'soft lockup',
                'hard LOCKUP', 'Kernel panic', 'UBSAN:', 'ODEBUG:', 'INFO: possible',
                'general protection fault']
_BAD_RE = re.compile('|'.join(re.escape(p) for p in BAD_PATTERNS))
# seconds a guest gets to power off after printing a FAIL verdict
FAIL_GRACE = 20


_OURS_RE = re.compile(r'vbblk|vbfault|vbbiotest')

# Reports of the kernel's own bugs that a test cannot avoid: (the report's
# first line, what its block must all hold). With no frame of ours in the
# block, such a report does not fail a test (the console keeps it).
KNOWN_KERNEL = [
    # pciehp drops and retakes reset_lock inside pci_rescan_remove_lock on
    # every hot-unplug (since f5eff5591b8f "PCI: pciehp: Fix AB-BA deadlock
    # between reset_lock and device_lock"; 6.1 and 7.2 alike): the unplug
    # tests' native PCIe hot-unplug on q35. Lockdep is off for the rest of
    # that boot.
    ('WARNING: possible circular locking dependency detected',
     ('&ctrl->reset_lock', 'pci_rescan_remove_lock', 'pciehp_unconfigure_device')),
]


def _block(lines, i, end, most=150):
    """The lines of the report starting at lines[i], up to the first for
    which end(line) holds, at most most - 1."""
    out = []
    for b in lines[i + 1:i + most]:
        out.append(b)
        if end(b):
            break
    return out


def known_reports(text):
    """[(first line index, last line index)] of the reports in text that
    KNOWN_KERNEL names and no frame of ours is in."""
    lines = text.splitlines()
    out = []
    for i, l in enumerate(lines):
        for first, holds in KNOWN_KERNEL:
            if first not in l:
                continue
            block = _block(lines, i, lambda b: '</TASK>' in b or '---[ end trace' in b)
            body = '\n'.join(block)
            if all(h in body for h in holds) and not _OURS_RE.search(body):
                out.append((i, i + len(block)))
    return out


# Under TCG the clocksource watchdog finds the TSC unstable about 2 s into
# boot, and the kernel then patches the sched_clock static branch in live
# text; with multi-threaded TCG a vCPU can still run a stale int3 of that
# patch: "Oops: int3" in sched_clock_cpu (seen once in ~50 boots of 7.2).
# A TSC declared reliable is never watched, so nothing is patched (the bench
# boots so too, for its own reason).
TSC_ARG = 'tsc=reliable'

# VBBLK_DEBUGFS="knob=value ...": the debug knobs of a `make VBBLK_DEBUG=y`
# vbblk (/sys/kernel/debug/vbblk/), set by the guest's drv_load in every boot
DEBUGFS = os.environ.get('VBBLK_DEBUGFS', '').strip()


def _bad_lines(text):
    """The lines of text that fail a test. A KCSAN report none of whose
    frames is ours (vbblk or a test module) is the kernel's own data race
    (upstream fixes or annotates those, e.g. the block device inode's
    timestamps): it does not fail a vbblk test; nor does a report of
    KNOWN_KERNEL's."""
    lines = text.splitlines()
    skip = set()
    for a, b in known_reports(text):
        skip.update(range(a, b + 1))
    out = []
    for i, l in enumerate(lines):
        if i in skip or not _BAD_RE.search(l):
            continue
        if 'BUG: KCSAN:' in l:
            block = _block(lines, i, lambda b: b.strip().endswith('=' * 20), 80)
            if not any(_OURS_RE.search(b) for b in [l] + block):
                continue
        out.append(l.strip())
    return out


def parse_size(s):
    s = str(s).strip()
    m = re.fullmatch(r'(\d+)\s*([KMGT]?)(i?B)?', s, re.I)
    if not m:
        raise ValueError('bad size %r' % s)
    return int(m.group(1)) << {'': 0, 'K': 10, 'M': 20, 'G': 30, 'T': 40}[m.group(2).upper()]


CACHE_MODES = {  # mode: (cache.direct, cache.no-flush, device write-cache)
    'writeback': ('off', 'off', 'on'),
    'none': ('on', 'off', 'on'),
    'writethrough': ('off', 'off', 'off'),
    'directsync': ('on', 'off', 'off'),
    'unsafe': ('off', 'on', 'on'),
}


# The device side that implements virtio-blk for a disk (Disk.side):
#   main        virtio-blk-pci in QEMU's main loop
#   iothread    virtio-blk-pci with its own -object iothread (dataplane)
#   vhost-user  vhost-user-blk-pci; the device is a qemu-storage-daemon process
#               serving the image over a unix socket (guest RAM is shared memfd)
SIDES = ('main', 'iothread', 'vhost-user')
# vhost-user disks get fixed PCI slots from here on, so the guest can find
# them: the daemon answers GET_ID with one fixed string for every disk.
VU_SLOT0 = 0x10


class Disk:
    """One virtio-blk disk.

    backend: 'raw' (a file of `size` bytes in the image dir), 'null-co',
    'blkdebug' (raw format over blkdebug over a file; blkdebug_config = text of
    its config file), or 'nbd' (an NBD server listening on the unix socket
    set as `path` by the caller).  The top block node-name and the qdev id are both `id`
    (a blkdebug disk also has nodes `<id>-dbg` and `<id>-file`).  `props` go verbatim to -device, e.g.
    {'num-queues': 2, 'queue-size': 256, 'discard': 'on', 'write-zeroes': 'on',
     'config-wce': 'on', 'logical_block_size': 4096, 'physical_block_size': 4096,
     'min_io_size': 4096, 'opt_io_size': 65536, 'cyls': 100, 'heads': 16, 'secs': 63}.
    Without num-queues in `props` the device gets 4 (vhost-user: 1).
    `prefill(path)` is called on the host to fill the backing file before boot.
    `side` (SIDES) picks the device implementation; vhost-user takes the
    'raw' backend and, of the props, num-queues and queue-size. Its
    `cache` is what the guest makes of it: QEMU 7.2's export always reports
    a write-through cache (wce 0) and flushes when the guest asks; a guest
    that writes "write back" to cache_type gets flushes sent.
    """

    def __init__(self, id, size='64M', backend='raw', serial=None, read_only=False,
                 cache='writeback', discard='unmap', props=None, blkdebug_config=None,
                 prefill=None, sparse=True, side='main', latency_ns=0):
        if side not in SIDES:
            raise ValueError('unknown device side %r' % side)
        self.side = side
        self.vu_slot = None     # set by Guest for vhost-user disks
        self.id = id
        self.size = parse_size(size)
        self.backend = backend
        self.serial = serial if serial is not None else id
        self.read_only = read_only
        self.cache = cache
        self.discard = discard
        self.props = dict(props or {})
        # QEMU's default is one queue per vCPU. Four (two per vCPU of the
        # usual guest) makes vbblk pair each queue with an indirect ring,
        # which most tests then cover; a disk that names num-queues does not.
        if side != 'vhost-user':
            self.props.setdefault('num-queues', 4)
        self.blkdebug_config = blkdebug_config
        self.prefill = prefill
        self.sparse = sparse
        self.latency_ns = latency_ns    # null-co: every read, write and flush takes this long
        self.path = None

    def create(self, imgdir):
        if self.backend in ('null-co', 'nbd'):
            return
        self.path = os.path.join(imgdir, '%s.img' % self.id)
        with open(self.path, 'wb') as f:
            f.truncate(self.size)
        if self.prefill:
            self.prefill(self.path)
        if self.backend == 'blkdebug' and self.blkdebug_config is not None:
            with open(os.path.join(imgdir, '%s.blkdebug' % self.id), 'w') as f:
                f.write(self.blkdebug_config)

    # ---- vhost-user-blk: the device lives in a qemu-storage-daemon -------
    @property
    def queues(self):
        """num-queues; the export and the device must be given the same."""
        return int(self.props.get('num-queues', 1))

    def vu_paths(self, outdir):
        base = os.path.join(outdir, 'qsd-%s' % self.id)
        return dict(sock=base + '.sock', qmp=base + '.qmp', log=base + '.log',
                    trace=base + '.trace')

    def daemon_args(self, outdir):
        """qemu-storage-daemon command line serving this disk. Its trace
        (luring_* events: the file is opened with aio=io_uring) is the
        device-side record of reads, writes and flushes."""
        if self.backend not in ('raw', 'null-co') or \
                self.cache not in ('writeback', 'writethrough'):
            raise ValueError('vhost-user disk %s: raw or null-co backend, writeback or '
                             'writethrough only' % self.id)
        bad = set(self.props) - {'num-queues', 'queue-size'}
        if bad:
            raise ValueError('vhost-user disk %s: unsupported props %s' % (self.id, sorted(bad)))
        p = self.vu_paths(outdir)
        ro = 'on' if self.read_only else 'off'
        if self.backend == 'null-co':
            nodes = ['--blockdev', 'driver=null-co,node-name=%s,size=%d,read-zeroes=on'
                     % (self.id, self.size)]
        else:
            nodes = ['--blockdev', 'driver=file,node-name=%s-file,filename=%s,cache.direct=off,'
                     'aio=io_uring,discard=%s,read-only=%s' % (self.id, self.path, self.discard, ro),
                     '--blockdev', 'driver=raw,node-name=%s,file=%s-file,discard=%s,read-only=%s'
                     % (self.id, self.id, self.discard, ro)]
        return ['qemu-storage-daemon'] + nodes + [
                '--export', 'type=vhost-user-blk,id=exp-%s,node-name=%s,addr.type=unix,'
                'addr.path=%s,writable=%s,num-queues=%d'
                % (self.id, self.id, p['sock'], 'off' if self.read_only else 'on', self.queues),
                '--chardev', 'socket,id=qmp,path=%s,server=on,wait=off' % p['qmp'],
                '--monitor', 'chardev=qmp',
                '--trace', 'enable=luring_co_submit,file=%s' % p['trace'],
                '--trace', 'enable=luring_process_completion',
                '--trace', 'enable=blk_co_preadv', '--trace', 'enable=blk_co_pwritev']

    def qemu_args(self, imgdir, outdir=None, port=None):
        """QEMU arguments for the disk; port: the id of a PCIe root port to
        put it behind (its slot then takes the disk's PCI address)."""
        at = ['bus=%s' % port] if port else []
        if self.side == 'vhost-user':
            p = self.vu_paths(outdir)
            # num-queues: the device's default asks for more than the daemon serves
            dev = ['vhost-user-blk-pci', 'chardev=vu-%s' % self.id, 'id=%s' % self.id] + \
                (at or ['addr=0x%x' % self.vu_slot]) + ['num-queues=%d' % self.queues]
            for k, v in self.props.items():
                if k != 'num-queues':
                    dev.append('%s=%s' % (k, v))
            # reconnect=1: a restarted daemon is picked up again
            return ['-chardev', 'socket,id=vu-%s,path=%s,reconnect=1' % (self.id, p['sock']),
                    '-device', ','.join(dev)]
        direct, noflush, wce = CACHE_MODES[self.cache]
        ro = 'on' if self.read_only else 'off'
        args = []
        if self.backend == 'null-co':
            args += ['-blockdev', 'driver=null-co,node-name=%s,size=%d,read-zeroes=on,read-only=%s'
                     % (self.id, self.size, ro) +
                     (',latency-ns=%d' % self.latency_ns if self.latency_ns else '')]
        elif self.backend == 'nbd':
            # an NBD server on a unix socket (self.path); flushes reach it
            args += ['-blockdev', 'driver=nbd,node-name=%s,server.type=unix,server.path=%s,'
                     'cache.no-flush=off,read-only=%s' % (self.id, self.path, ro)]
        else:
            fnode = self.id if self.backend == 'raw' else self.id + '-file'
            args += ['-blockdev', 'driver=file,node-name=%s,filename=%s,cache.direct=%s,'
                     'cache.no-flush=%s,discard=%s,read-only=%s'
                     % (fnode, self.path, direct, noflush, self.discard, ro)]
            if self.backend == 'blkdebug':
                # raw format (node `id`) over blkdebug (`id-dbg`) over the file
                # (`id-file`): the raw layer emits the read_aio/write_aio
                # events that blkdebug [inject-error] rules trigger on.
                b = 'driver=blkdebug,node-name=%s-dbg,image=%s,read-only=%s' % (self.id, fnode, ro)
                if self.blkdebug_config is not None:
                    b += ',config=%s' % os.path.join(imgdir, '%s.blkdebug' % self.id)
                args += ['-blockdev', b,
                         '-blockdev', 'driver=raw,node-name=%s,file=%s-dbg,read-only=%s,discard=%s'
                         % (self.id, self.id, ro, self.discard)]
            elif self.backend != 'raw':
                raise ValueError('unknown backend %s' % self.backend)
        dev = ['virtio-blk-pci', 'drive=%s' % self.id, 'id=%s' % self.id,
               'serial=%s' % self.serial, 'write-cache=%s' % wce] + at
        if self.side == 'iothread':
            args += ['-object', 'iothread,id=io-%s' % self.id]
            dev.append('iothread=io-%s' % self.id)
        for k, v in self.props.items():
            dev.append('%s=%s' % (k, v))
        args += ['-device', ','.join(dev)]
        return args


def choose_accel():
    a = os.environ.get('ACCEL', '').strip()
    if a:
        return a
    try:
        flags = open('/proc/cpuinfo').read()
    except OSError:
        flags = ''
    if re.search(r'\b(vmx|svm)\b', flags) and os.access('/dev/kvm', os.W_OK):
        return 'kvm'
    return 'tcg'


class Result:
    def __init__(self, ok, reason='', duration=0.0, skipped=False):
        self.ok = ok
        self.reason = reason      # why it failed, or why it skipped
        self.duration = duration
        self.skipped = skipped    # ok, but the guest script could not test


class Guest:
    def __init__(self, name, outdir, kernel, initrd, disks=(), driver='vbblk', mem=1024,
                 smp=2, timeout=300, imgdir=None, append='', actions=None, extra_args=(),
                 vbblk_params='', hotplug=False):
        self.name = name
        self.hotplug = hotplug    # hot-unplugs: on q35, each disk behind a PCIe root port
        self.outdir = outdir
        self.kernel = kernel
        self.initrd = initrd
        self.disks = list(disks)
        self.driver = driver
        self.mem = mem
        self.smp = smp
        self.timeout = timeout
        self.imgdir = imgdir
        self.append = append
        self.vbblk_params = vbblk_params
        self.actions = dict(actions or {})
        self.extra_args = list(extra_args)
        self.share = os.path.join(outdir, 'share')
        self.console = os.path.join(outdir, 'console.log')
        self.qmp_path = os.path.join(outdir, 'qmp.sock')
        self.token = secrets.token_hex(6)
        self.proc = None
        self.qmp = None
        self.disk_by_id = {d.id: d for d in self.disks}
        self.hostlog = []
        self.daemons = {}   # disk id -> qemu-storage-daemon Popen (vhost-user disks)
        # a test fails on a daemon's vu_panic; the bench reports it per cell
        self.daemon_panic_fails = True
        self.vu_seen = {}   # disk id -> (trace bytes counted, [reads, writes, flushes])
        for i, d in enumerate(d for d in self.disks if d.side == 'vhost-user'):
            d.vu_slot = VU_SLOT0 + i

    # ---- setup -------------------------------------------------------
    def prepare(self):
        if os.path.exists(self.outdir):
            shutil.rmtree(self.outdir)
        os.makedirs(os.path.join(self.share, 'req'))
        os.makedirs(self.imgdir, exist_ok=True)
        for d in self.disks:
            d.create(self.imgdir)
        # SERIAL PCI-ADDRESS for disks whose device cannot carry a serial
        # (tests/guest/lib.sh disk_by_serial reads it)
        with open(os.path.join(self.share, 'disks.map'), 'w') as f:
            for d in self.disks:
                if d.vu_slot is not None:
                    f.write('%s 0000:00:%02x.0\n' % (d.serial, d.vu_slot))

    def cmdline(self):
        accel = choose_accel()
        boot_args = kver.boot_args(self.kernel)
        machine = kver.machine(self.kernel)
        cmd = ['qemu-system-x86_64', '-nodefaults', '-nographic', '-no-reboot',
               '-machine', machine,
               '-accel', 'kvm' if accel == 'kvm' else 'tcg,thread=multi',
               '-cpu', 'host' if accel == 'kvm' else 'max',
               '-smp', str(self.smp), '-m', str(self.mem),
               '-kernel', boot_image(self.kernel), '-initrd', self.initrd,
               '-append', ' '.join(['console=ttyS0,115200', 'loglevel=5', 'panic=-1',
                                    'oops=panic', 'mitigations=off', 'nokaslr', TSC_ARG,
                                    'vbtest=%s' % self.name, 'vbdriver=%s' % self.driver,
                                    'vbtoken=%s' % self.token] +
                                   (['vbparams=%s' % ','.join(self.vbblk_params.split())]
                                    if self.vbblk_params else []) +
                                   (['vbdebugfs=%s' % ','.join(DEBUGFS.split())]
                                    if DEBUGFS else []) +
                                   ([self.append] if self.append else []) +
                                   ([boot_args] if boot_args else [])),
               '-serial', 'file:%s' % self.console, '-monitor', 'none',
               '-qmp', 'unix:%s,server=on,wait=off' % self.qmp_path,
               '-nic', 'none',
               '-fsdev', 'local,id=vbhost,path=%s,security_model=none' % self.share,
               '-device', 'virtio-9p-pci,fsdev=vbhost,mount_tag=vbhost']
        if any(d.side == 'vhost-user' for d in self.disks):
            # the daemon maps guest RAM: it must be shared memory
            cmd += ['-object', 'memory-backend-memfd,id=mem,size=%dM,share=on' % self.mem,
                    '-numa', 'node,memdev=mem']
        # q35 unplugs nothing from its root bus: a disk a test unplugs sits
        # behind a root port, and native PCIe hotplug (no ACPI, whose AML
        # crawls under KASAN) removes it
        ports = self.hotplug and machine != 'pc'
        if ports:
            cmd += ['-global', 'ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off']
        for i, d in enumerate(self.disks):
            port = None
            if ports:
                port = 'rp-%s' % d.id
                cmd += ['-device', 'pcie-root-port,id=%s,chassis=%d,slot=%d' % (port, i + 1, i + 1)
                        + (',addr=0x%x' % d.vu_slot if d.vu_slot is not None else '')]
            cmd += d.qemu_args(self.imgdir, self.outdir, port)
        return cmd + self.extra_args

    # ---- vhost-user-blk daemons ------------------------------------------
    def start_daemon(self, d):
        """Start the disk's qemu-storage-daemon; wait for its socket. Returns
        None or why it failed (with the end of its log)."""
        p = d.vu_paths(self.outdir)
        for k in ('sock', 'qmp'):
            if os.path.exists(p[k]):
                os.unlink(p[k])
        # a new daemon writes its trace afresh: count it from the start
        self.vu_seen.pop(d.id, None)
        log = open(p['log'], 'a')
        proc = subprocess.Popen(d.daemon_args(self.outdir), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.daemons[d.id] = proc
        for _ in range(100):
            if proc.poll() is not None or os.path.exists(p['sock']):
                break
            time.sleep(0.1)
        if proc.poll() is not None or not os.path.exists(p['sock']):
            try:
                tail = open(p['log'], errors='replace').read().strip().splitlines()[-5:]
            except OSError:
                tail = []
            return 'qemu-storage-daemon for %s did not start (exit %s): %s' % (
                d.id, proc.poll(), ' | '.join(tail) or 'no output')
        return None

    def stop_daemon(self, id, sig=signal.SIGTERM):
        proc = self.daemons.pop(id, None)
        if proc and proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def vu_counts(self, d):
        """The daemon's device statistics, from its trace: reads and writes
        as they reach its block layer (blk_co_preadv/pwritev), flushes as it
        sends them to the image file (io_uring submissions of type 8,
        QEMU_AIO_FLUSH; QEMU's block layer drops a flush that follows no
        write, so there may be fewer than the guest sent). Each call reads
        only what the trace gained since the last one: the bench asks twice
        per timed run, while the guest runs."""
        off, n = self.vu_seen.get(d.id, (0, [0, 0, 0]))
        try:
            with open(d.vu_paths(self.outdir)['trace'], 'rb') as f:
                f.seek(off)
                data = f.read()
        except OSError:
            data = b''
        # count whole lines only; a partly written one waits for the next call
        data = data[:data.rfind(b'\n') + 1]
        for line in data.decode(errors='replace').splitlines():
            if 'blk_co_preadv ' in line:
                n[0] += 1
            elif 'blk_co_pwritev ' in line:
                n[1] += 1
            elif re.search(r'luring_co_submit .* type 8$', line.rstrip()):
                n[2] += 1
        self.vu_seen[d.id] = (off + len(data), n)
        return 'rd_operations=%d\nwr_operations=%d\nflush_operations=%d\n' % tuple(n)

    # ---- host actions ------------------------------------------------
    def _disk(self, id):
        if id not in self.disk_by_id:
            raise ValueError('unknown disk %s' % id)
        return self.disk_by_id[id]

    @staticmethod
    def _match(entry, id):
        return entry.get('node-name') == id or entry.get('device') == id or \
            entry.get('qdev') in (id, '/machine/peripheral/%s/virtio-backend' % id)

    def do_action(self, line):
        w = line.split()
        if not w:
            raise ValueError('empty request')
        op, args = w[0], w[1:]
        if op in self.actions:
            return self.actions[op](self, *args) or ''
        if op == 'resize':
            size = parse_size(args[1])
            self.qmp.execute('block_resize', **{'node-name': args[0], 'size': size})
            return 'size=%d\n' % size
        if op == 'device_del':
            self.qmp.execute('device_del', id=args[0])
            return ''
        if op in ('vu_pause', 'vu_resume'):
            # SIGSTOP/SIGCONT: a device that is slow, not dead
            d = self._disk(args[0])
            proc = self.daemons.get(d.id)
            if not proc or proc.poll() is not None:
                raise ValueError('no daemon running for %s' % d.id)
            proc.send_signal(signal.SIGSTOP if op == 'vu_pause' else signal.SIGCONT)
            return ''
        if op in ('vu_kill', 'vu_stop', 'vu_start'):
            d = self._disk(args[0])
            if d.side != 'vhost-user':
                raise ValueError('%s is not a vhost-user disk' % d.id)
            if op == 'vu_start':
                err = self.start_daemon(d)
                if err:
                    raise ValueError(err)
            else:
                self.stop_daemon(d.id, signal.SIGKILL if op == 'vu_kill' else signal.SIGTERM)
            return ''
        if op == 'blockstats' and args and args[0] in self.disk_by_id and \
                self.disk_by_id[args[0]].side == 'vhost-user':
            return self.vu_counts(self.disk_by_id[args[0]])
        if op == 'blockstats':
            for e in self.qmp.execute('query-blockstats'):
                if self._match(e, args[0]):
                    return ''.join('%s=%s\n' % (k, v) for k, v in sorted(e['stats'].items())
                                   if not isinstance(v, (dict, list)))
            raise ValueError('no blockstats for %s' % args[0])
        if op == 'cache':
            for e in self.qmp.execute('query-block'):
                if self._match(e, args[0]) and 'inserted' in e:
                    ins = e['inserted']
                    out = ''.join('%s=%s\n' % (k, str(v).lower()) for k, v in ins['cache'].items())
                    return out + 'ro=%s\n' % str(ins.get('ro')).lower()
            raise ValueError('no block device %s' % args[0])
        if op == 'alloc':
            return '%d\n' % (os.stat(self._disk(args[0]).path).st_blocks * 512)
        if op == 'filesize':
            return '%d\n' % os.path.getsize(self._disk(args[0]).path)
        if op == 'sha256':
            return sha256_file(self._disk(args[0]).path) + '\n'
        if op == 'qmp':
            rest = line.split(None, 2)
            a = json.loads(rest[2]) if len(rest) > 2 else {}
            return json.dumps(self.qmp.cmd(rest[1], **a)) + '\n'
        if op == 'log':
            return ''
        raise ValueError('unknown host action %r' % op)

    def _service_requests(self):
        rdir = os.path.join(self.share, 'req')
        for f in sorted(os.listdir(rdir)):
            if not f.endswith('.req'):
                continue
            p = os.path.join(rdir, f)
            try:
                line = open(p).read().strip()
            except OSError:
                continue
            try:
                body = self.do_action(line)
                resp = 'OK\n' + body
            except (QMPError, ValueError, IndexError, OSError, TypeError) as e:
                resp = 'ERR %s: %s\n' % (type(e).__name__, e)
            self.hostlog.append('%.1fs %s -> %s' % (time.time() - self.t0, line,
                                                    resp.strip().replace('\n', ' | ')))
            base = p[:-4]
            with open(base + '.resp.tmp', 'w') as o:
                o.write(resp)
            os.rename(p, base + '.done')
            os.rename(base + '.resp.tmp', base + '.resp')

    # ---- run ---------------------------------------------------------
    def run(self):
        """Boot the guest and judge the test; boot once more if the kernel
        crashed in its own early boot (early_crash())."""
        res = self._run_once()
        why = None if res.ok else (self.early_crash() or self.early_hang(res))
        if why:
            os.replace(self.console, self.console + '.boot1')
            print('  note: %s: the kernel failed in its own boot, before the test began '
                  'and before any module of ours loaded (%s): booted again, first console '
                  'in %s.boot1' % (self.name, why[:120], os.path.basename(self.console)),
                  flush=True)
            self.hostlog.append('early kernel crash (%s): booted again' % why[:120])
            res = self._run_once()
        return res

    def early_crash(self):
        """The first line that fails a test, if every such line of the console
        comes before the guest's init started the test and nothing of ours
        appears up to there: the kernel failed in its own boot. Under
        multi-threaded TCG a vCPU can run a stale int3 of live text patching
        (TSC_ARG avoids the usual one; CI still saw "Oops: int3" 2.7 s into a
        7.2 boot, long before any module loaded). None otherwise."""
        con = self._boot_console()
        if not con:
            return None
        log, early = con
        bad = _bad_lines(early)
        if not bad or len(_bad_lines(log)) != len(bad):
            return None
        return bad[0]

    def early_hang(self, res):
        """A timeout whose console never reached the test's start and names
        nothing of ours: the kernel stopped in its own boot (seen once in
        about 150 boots: both vCPUs running kernel text 1.3 s into a 6.1
        boot, no output after). None otherwise."""
        if not res.reason.startswith('timeout after'):
            return None
        con = self._boot_console()
        if not con or con[0] != con[1]:
            return None
        return 'no console output past the kernel\'s own boot, then a timeout'

    def _boot_console(self):
        """(whole console, its part before init started the test), if that
        part names nothing of ours (the kernel command line aside); else
        None."""
        try:
            log = open(self.console, errors='replace').read()
        except OSError:
            return None
        cut = log.find('init: running test')
        early = log if cut < 0 else log[:cut]
        if any(_OURS_RE.search(l) and 'command line' not in l.lower()
               for l in early.splitlines()):
            return None
        return log, early

    def _run_once(self):
        self.prepare()
        cmd = self.cmdline()
        with open(os.path.join(self.outdir, 'cmdline.txt'), 'w') as f:
            f.write(' '.join(shlex.quote(c) for c in cmd) + '\n')
        self.t0 = time.time()
        for d in self.disks:
            if d.side == 'vhost-user':
                err = self.start_daemon(d)
                if err:
                    for id in list(self.daemons):
                        self.stop_daemon(id)
                    return Result(False, err, 0.0)
        qlog = open(os.path.join(self.outdir, 'qemu.log'), 'w')
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=qlog, stderr=qlog,
                                     start_new_session=True)
        timed_out = False
        err = None
        failed_at = None
        self._con_off = 0
        try:
            try:
                self.qmp = QMP(self.qmp_path, timeout=15)
            except QMPError as e:
                if self.proc.poll() is None:
                    err = str(e)
            while self.proc.poll() is None:
                if time.time() - self.t0 > self.timeout:
                    timed_out = True
                    break
                # A FAIL verdict is final; a guest whose I/O is stuck may
                # never get through init's sync to power off.
                if failed_at is None and self._fail_verdict_seen():
                    failed_at = time.time()
                if failed_at and time.time() - failed_at > FAIL_GRACE:
                    self.hostlog.append('guest still up %ds after its FAIL verdict: stopped'
                                        % FAIL_GRACE)
                    break
                if self.qmp:
                    try:
                        self._service_requests()
                    except (QMPError, OSError) as e:
                        if self.proc.poll() is None:
                            self.hostlog.append('host action error: %s' % e)
                time.sleep(0.1)
            if timed_out and self.qmp:
                self._timeout_report()
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            if self.qmp:
                self.qmp.close()
            qlog.close()
            for id in list(self.daemons):
                self.stop_daemon(id)
        dur = time.time() - self.t0
        with open(os.path.join(self.outdir, 'host-actions.log'), 'w') as f:
            f.write('\n'.join(self.hostlog) + '\n')
        return self.judge(timed_out, err, dur)

    def _timeout_report(self):
        """A guest that outlived its timeout: where each vCPU is (registers,
        in timeout-regs.txt), then sysrq w and l (blocked tasks, every CPU's
        backtrace) onto the console, before it is stopped."""
        try:
            regs = self.qmp.execute('human-monitor-command', **{'command-line':
                                                                  'info registers -a'})
            with open(os.path.join(self.outdir, 'timeout-regs.txt'), 'w') as f:
                f.write(regs if isinstance(regs, str) else str(regs))
            for key in ('w', 'l'):
                self.qmp.execute('human-monitor-command',
                                 **{'command-line': 'sendkey alt-sysrq-%s' % key})
                time.sleep(3)
            self.hostlog.append('timeout: vCPU registers in timeout-regs.txt; '
                                'sysrq w and l sent (console)')
        except (QMPError, OSError) as e:
            self.hostlog.append('timeout report failed: %s' % e)

    def _fail_verdict_seen(self):
        """Has the console log gained a FAIL verdict line since the last call?"""
        try:
            with open(self.console, 'rb') as f:
                f.seek(self._con_off)
                new = f.read()
        except OSError:
            return False
        cut = new.rfind(b'\n') + 1     # a partial line waits for the next call
        self._con_off += cut
        return ('VBTEST-VERDICT %s FAIL' % self.token).encode() in new[:cut]

    def judge(self, timed_out, err, dur):
        try:
            log = open(self.console, errors='replace').read()
        except OSError:
            log = ''
        verdict = None
        for line in log.splitlines():
            m = re.search(r'VBTEST-VERDICT %s (PASS|FAIL|SKIP) rc=(\d+)' % self.token, line)
            if m:
                verdict = (m.group(1), int(m.group(2)))
        bad = _bad_lines(log)
        for a, _ in known_reports(log):
            print('  note: %s: a known kernel report, no frame of ours: %s'
                  % (self.name, log.splitlines()[a].strip()[:120]), flush=True)
        try:  # the guest's full dmesg (all log levels), saved at the end of the run
            dmesg = open(os.path.join(self.share, 'dmesg.txt'), errors='replace').read()
            bad += ['dmesg: ' + l for l in _bad_lines(dmesg)]
        except OSError:
            pass
        if timed_out:
            return Result(False, 'timeout after %ds' % self.timeout, dur)
        if err:
            return Result(False, err, dur)
        if bad:
            return Result(False, 'kernel problem in console log: %s' % bad[0][:200], dur)
        panic = self.daemon_panic() if self.daemon_panic_fails else None
        if panic:
            return Result(False, panic, dur)
        if verdict is None:
            return Result(False, 'no verdict line (qemu exit %s)' % self.proc.returncode, dur)
        if verdict[0] == 'SKIP':
            why = [l.strip() for l in log.splitlines() if '] SKIP: ' in l]
            return Result(True, why[-1].split('] SKIP: ', 1)[1][:200] if why else 'no reason given',
                          dur, skipped=True)
        if verdict[0] != 'PASS':
            fails = [l.strip() for l in log.splitlines() if 'FAIL' in l and 'VBTEST-VERDICT' not in l]
            return Result(False, (fails[-1][:200] if fails else 'guest script failed')
                          + ' (rc=%d)' % verdict[1], dur)
        return Result(True, '', dur)

    def daemon_panic(self):
        """libvhost-user's vu_panic in a daemon log: the backend hit something
        it treats as fatal and dropped the guest's connection (QEMU reconnects
        a second later, so I/O only crawls). Returns why, or None."""
        for d in self.disks:
            panics = self.vu_panics(d)
            if panics:
                return 'vhost-user daemon for %s: %d x %s' % (d.id, len(panics), panics[0][:160])
        return None

    def vu_panics(self, d):
        """The vu_panic lines in disk d's daemon log so far ([] if none)."""
        if d.side != 'vhost-user':
            return []
        try:
            with open(d.vu_paths(self.outdir)['log'], errors='replace') as f:
                return [l.strip() for l in f if 'vu_panic' in l]
        except OSError:
            return []

    def log_tail(self, n=40):
        try:
            lines = open(self.console, errors='replace').read().splitlines()
        except OSError:
            return '(no console log)'
        return '\n'.join(lines[-n:])


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()
