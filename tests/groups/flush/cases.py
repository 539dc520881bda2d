"""Group flush: FLUSH/FUA: ordering in the device trace, shared FLUSHes, power cuts.

The host side of the tests whose guest scripts sit beside this file."""
import flushcheck
import os

from cases import Test, TESTS, test, BOTH, SIDES3, trace_args
from vm import Disk


def _flush_check(guest):
    vu = [d for d in guest.disks if d.side == 'vhost-user']
    if vu:
        # the device is the daemon: its io_uring trace, one file per disk
        evs = []
        for d in vu:
            evs += flushcheck.luring_events(d.vu_paths(guest.outdir)['trace'], d.id)
        return flushcheck.check_events(evs)
    return flushcheck.check(os.path.join(guest.outdir, 'trace.log'))


@test('flush', timeout=300, extra_args=trace_args, check=_flush_check, sides=SIDES3)
def _flush(side='main'):
    """FUA writes are followed by a flush, fsync/fdatasync end with one, write-through
    sends none (order checked in the device's trace, counts against its statistics);
    main loop, iothread, vhost-user"""
    return [Disk('flwb', '64M', serial='FLUSH-WB', cache='writeback'),
            Disk('flwt', '64M', serial='FLUSH-WT', cache='writethrough')]


@test('flush_share', timeout=420, vbblk_only=True, modes=('',))
def _flush_share():
    """64 jobs of 4 KiB O_DIRECT writes with an fsync after each, on a device where a write
    or a flush takes 1 ms (null-co): bio mode sends no more device FLUSHes (QMP
    flush_operations) than request mode, +10 % +32, same boot; the disk's stat counts each
    device FLUSH once in both modes"""
    return [Disk('fs', '96M', backend='null-co', serial='FS-1', latency_ns=1000000)]


def _powercut(outdir, ctx):
    import powercut
    return powercut.run(outdir, ctx)


# the volatile-cache plugin is built on the host, and served by nbdkit
NBDKIT = ('nbdkit', 'gcc', '/usr/include/nbdkit-plugin.h')


TESTS.append(Test('powercut', lambda: [], modes=BOTH, host=_powercut, needs=NBDKIT,
                  doc='POWERCUTS (6) power cuts on a volatile-cache NBD disk (nbdkit volcache) '
                      'during O_DSYNC, fdatasync and ext4 fsync record writers: after each, fsck -n '
                      'is clean after journal replay and every acknowledged record is intact'))


def _cache_cut(outdir, ctx):
    import powercut
    return powercut.run_cache_switch(outdir, ctx)


TESTS.append(Test('cache_cut', lambda: [], vbblk_only=True, host=_cache_cut, needs=NBDKIT,
                  doc='writes completed in write-back mode and never flushed survive a power '
                      'cut (nbdkit volcache keeping nothing unflushed) taken right after '
                      'cache_type is set to write through: the switch flushes first (stock '
                      'virtio_blk does not)'))
