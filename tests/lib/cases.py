"""Host-side definitions of the vbblk guest tests.

Each test boots one guest that runs its group's guest script, NAME.sh (see
the groups at the end: tests/groups/GROUP/).  A test declares its
disks (vm.Disk), timeout, whether it is vbblk-specific, optional extra host
actions (callable from the guest with `hostcmd`) and optional host-side
setup/check hooks (run before boot / after a passing guest run)."""
import hashlib
import os

import flushcheck
from vm import Disk, sha256_file

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = []


# vbblk module parameters each test runs under (one guest boot each); the
# stock driver runs a test once. VBBLK_PARAMS in the environment overrides.
BOTH = ('mode=bio', 'mode=request')
ALL_PATHS = ('mode=bio', 'mode=bio batch=0', 'mode=request')


class Test:
    def __init__(self, name, disks, timeout=240, vbblk_only=False, mem=1024, setup=None,
                 check=None, actions=None, doc='', optional=False, extra_args=(), append='',
                 smp=2, modes=BOTH, host=None, sides=('main',), kmod=(), leaks=False,
                 hotplug=False, quiet=False, needs=(), side_modes=None, module=True):
        self.name = name
        # the test needs vbblk.ko and the initramfs; False: a host test that
        # boots nothing of ours, and tests/run builds neither when it runs
        # only such tests (they then take seconds, not a module build)
        self.module = module
        # the modes that also run on the device sides other than the main
        # loop (None: every mode); a side changes the device, not the path
        self.side_modes = side_modes
        self.group = None         # set by _load_groups()
        # host programs (or, as absolute paths, files) the test cannot run
        # without: missing, it is a SKIP with the reason (a vhost-user side
        # adds qemu-storage-daemon)
        self.needs = tuple(needs)
        # measures (bench_smoke): a full run's background kernel build is
        # paused meanwhile, since a busy host moves instruction counts too
        self.quiet = quiet
        # hot-unplugs (device_del): where a named kernel's `# machine:` says
        # q35, which cannot unplug from its root bus, each disk sits behind
        # a PCIe root port
        self.hotplug = hotplug
        # boot with kmemleak=on where a kernel has kmemleak off by default
        # (KERNEL=debug): the guest's init then fails the test on a leak
        # from vbblk (KMEMLEAK=all: every test)
        self.leaks = leaks
        # test-only modules of tests/kmod the guest loads (NAME.ko in
        # /lib/modules/<ver>/extra): tests/run builds them for the guest
        self.kmod = kmod
        # device sides (vm.SIDES) each variant runs on; disks(side) is
        # called with the side when there is more than the main loop
        self.sides = sides
        # host(outdir, ctx) -> failure reason or None: a test that runs on
        # the host (it may boot its own guests) instead of one guest script;
        # ctx: kernel, initrd, driver, params (this variant's), scale, imgdir,
        # kver (guest kernel release), ko (the vbblk.ko under test)
        self.host = host
        self.modes = modes
        self.disks = disks
        self.timeout = timeout
        self.vbblk_only = vbblk_only
        self.mem = mem
        self.setup = setup
        self.check = check
        self.actions = actions or {}
        self.doc = doc
        self.optional = optional  # only run when named explicitly
        # extra QEMU arguments: a list, or callable(outdir) -> list (e.g. for
        # '-trace', 'virtio_blk_*,file=<outdir>/trace.log')
        self.extra_args = extra_args
        self.append = append      # extra kernel command line
        self.smp = smp


class Skip(str):
    """What a host test (Test.host) returns when a prerequisite is missing:
    the reason, reported as SKIP rather than FAIL."""


# where a missing program comes from (scripts/install-deps.sh installs them)
PACKAGES = {'qemu-storage-daemon': 'qemu-system-common', 'nbdkit': 'nbdkit',
            'dkms': 'dkms', 'gcc': 'gcc', 'dh_dkms': 'dh-dkms', 'dpkg-buildpackage': 'dpkg-dev', '/usr/include/nbdkit-plugin.h': 'nbdkit-plugin-dev'}


def missing(t, side):
    """Why test t cannot run on this host on device side `side`, or None."""
    import shutil
    needs = list(t.needs) + (['qemu-storage-daemon'] if side == 'vhost-user' else [])
    gone = [n for n in needs
            if not (os.path.exists(n) if n.startswith('/') else shutil.which(n))]
    if not gone:
        return None
    return 'needs %s, not installed (apt-get install %s)' % (
        ', '.join(gone), ' '.join(sorted({PACKAGES.get(n, n) for n in gone})))


def make_disks(t, side):
    """The test's disks, on device side `side` (file-backed disks only)."""
    disks = t.disks(side) if t.sides != ('main',) else t.disks()
    for d in disks:
        if d.backend == 'raw':
            d.side = side
    return disks


def test(name, **kw):
    def make(disks_fn):
        TESTS.append(Test(name, disks_fn, doc=(disks_fn.__doc__ or '').strip(), **kw))
        return disks_fn
    return make


def random_fill(path, seed=b'vbblk'):
    """Deterministic non-zero content for a backing file."""
    size = os.path.getsize(path)
    block = b''
    h = seed
    while len(block) < (1 << 20):
        h = hashlib.sha256(h).digest()
        block += h * 64
    block = block[:1 << 20]
    with open(path, 'r+b') as f:
        for off in range(0, size, len(block)):
            f.write(block[:min(len(block), size - off)])


# --------------------------------------------------------------------------
# The device sides of issue 8: QEMU's main loop, an iothread, vhost-user-blk.
SIDES3 = ('main', 'iothread', 'vhost-user')


def trace_args(outdir):
    return ['-trace', 'enable=virtio_blk_handle_*', '-trace', 'enable=virtio_blk_req_complete',
            '-D', os.path.join(outdir, 'trace.log')]


def by_name():
    return {t.name: t for t in TESTS}


# ---- the groups ----------------------------------------------------------
# Each group is a directory of tests/groups/: its cases.py (the host side:
# disks, setup, checks) and a guest script NAME.sh per test, as blktests
# keeps tests/<group>/. The suite runs them in this order.
GROUPS = ('core', 'bio', 'flush', 'faults', 'scsi', 'uring', 'sides', 'install')
GROUPS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'groups')


def _load_groups():
    import importlib.util
    import sys
    for g in GROUPS:
        d = os.path.join(GROUPS_DIR, g)
        sys.path.insert(0, d)   # a group's own host modules (flush: powercut.py)
        n = len(TESTS)
        spec = importlib.util.spec_from_file_location('group_' + g, os.path.join(d, 'cases.py'))
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        for t in TESTS[n:]:
            t.group = g


_load_groups()
