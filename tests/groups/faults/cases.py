"""Group faults: failures: device errors, allocation failures, fragmentation, hostile input.

The host side of the tests whose guest scripts sit beside this file."""

from cases import test, ALL_PATHS
from vm import Disk


@test('ioerror', timeout=180)
def _ioerror():
    """a host read error (blkdebug) fails only the affected I/O with EIO; the driver survives"""
    cfg = ('[inject-error]\nevent = "read_aio"\nerrno = "5"\niotype = "read"\nsector = "%d"\n' % (4 << 11))
    return [Disk('ioe', '16M', backend='blkdebug', serial='IOERR-1', blkdebug_config=cfg)]


@test('errinject', leaks=True, timeout=300, modes=ALL_PATHS, vbblk_only=True)
def _errinject():
    """blkdebug read/write errors on one sector each: a batched or merged command over it
    fails only the bio on the bad sector (retried bio by bio), the rest land; a failing
    flush fails fsync, fdatasync and O_DSYNC writes; no I/O left in flight; clean unload"""
    rules = ''.join('[inject-error]\nevent = "%s_aio"\nerrno = "5"\niotype = "%s"\nsector = "%d"\n\n'
                    % (op, op, sec) for op, sec in (('read', 8200), ('write', 16392)))
    flush = '[inject-error]\nevent = "flush_to_disk"\nerrno = "5"\niotype = "flush"\n'
    # request-merging=off: QEMU would otherwise merge neighbouring requests
    # itself and fail them together, whatever the driver sent
    return [Disk('einj', '16M', backend='blkdebug', serial='EINJ-1', blkdebug_config=rules,
                 props={'request-merging': 'off'}),
            Disk('eflush', '16M', backend='blkdebug', serial='EFLUSH-1', blkdebug_config=flush)]


@test('faultinject', leaks=True, timeout=600, vbblk_only=True, kmod=('vbfault',))
def _faultinject():
    """allocation failures aimed at the driver's own allocations (tests/kmod/vbfault.ko
    drv_fail: the N-th kmalloc/kvmalloc/alloc_percpu called from vbblk's code, for every N)
    during probe, GET_ID, SG_IO (INQUIRY, READ, WRITE, UNMAP) and suspend/resume, and
    20 % of them (plus, on a failslab kernel, of every slab allocation the writer makes)
    during plugged O_DIRECT writes while the disk grows (twice): each ends in a clean error
    or a retry, and the data verifies. SKIP from 6.10, where the allocators are not probed"""
    return [Disk('fi', '64M', serial='FI-1', props={'num-queues': 2, 'discard': 'on'})]


@test('restore_fail', leaks=True, timeout=420, vbblk_only=True, kmod=('vbfault',))
def _restore_fail():
    """a resume whose restore cannot make the virtqueues (fail_function on vbblk_init_vqs,
    or tests/kmod/vbfault.ko drv_fail failing every allocation of vbblk's for the suspend)
    ends, with ext4 mounted on one disk: cache_type write back -> write through, O_DIRECT
    and fsync'ed I/O, GET_ID, SG_IO, a passthrough command and an ext4 fsync each fail
    within 60 s, the ext4 unmounts; a second suspend is harmless; unbind (with dirty pages)
    and rmmod complete; reloaded, the driver binds the devices again, the data reads back
    and the ext4 files synced before are intact after fsck. SKIP from 6.10 without
    fail_function"""
    return [Disk('rf', '64M', serial='RF-1', props={'num-queues': 2, 'config-wce': 'on'}),
            Disk('rf2', '64M', serial='RF-2', props={'config-wce': 'on'})]


@test('frag_probe', timeout=240, kmod=('vbfault',))
def _frag_probe():
    """probe with queue_depth=1024 on 1024-entry virtqueues while tests/kmod/vbfault.ko
    makes every kvmalloc() above a page fall back to vmalloc: the driver's arrays are
    vmalloc'ed (bio mode), verified I/O on every queue succeeds; nothing the device
    reads or writes was vmalloc'ed"""
    return [Disk('frag', '128M', serial='FRAG-1', props={'num-queues': 2, 'queue-size': 1024})]


@test('indirect_fail', timeout=240, kmod=('vbfault',))
def _indirect_fail():
    """256 KiB O_DIRECT writes of 64 separate pages on a 16-entry ring (seg_max 126) while
    tests/kmod/vbfault.ko fails the next 3 indirect descriptor tables (GFP_ATOMIC) of more
    than 16 descriptors: one write on an idle ring three times, then four at once twice;
    each succeeds within 30 s and reads back, exactly 3 failures injected each time (stock
    virtio_blk strands the write: SKIP)"""
    return [Disk('indir', '64M', serial='INDIR-1',
                 props={'queue-size': 16, 'seg-max-adjust': 'off', 'num-queues': 1})]


@test('hostile', leaks=True, timeout=420)
def _hostile():
    """bad block ioctls get their errno; garbage in our sysfs files and parameters is refused
    and changes nothing; disks at QEMU's extremes (queue-size 4 and 1024, seg-max-adjust off,
    8 queues on 2 CPUs, 4K/32K blocks, discard granularity 12288) probe and pass verified I/O"""
    return [Disk('hd', '64M', serial='HOST-1', props={'discard': 'on', 'write-zeroes': 'on',
                                                       'config-wce': 'on'}),
            Disk('xq4', '16M', serial='EXT-Q4', props={'queue-size': 4}),
            Disk('xq1024', '16M', serial='EXT-Q1024', props={'queue-size': 1024}),
            Disk('xsegoff', '16M', serial='EXT-SEGOFF', props={'seg-max-adjust': 'off',
                                                                'queue-size': 64}),
            Disk('xnq8', '16M', serial='EXT-NQ8', props={'num-queues': 8}),
            Disk('x4k', '16M', serial='EXT-4K32K', props={'logical_block_size': 4096,
                                                           'physical_block_size': 32768}),
            Disk('xdg', '16M', serial='EXT-DG', props={'discard': 'on',
                                                        'discard_granularity': 12288})]
