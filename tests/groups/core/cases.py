"""Group core: the disk as a user sees it: data integrity, identity, resize, discard, cache type, load/unload, suspend, partitions, CPU hotplug, removal, tracing, soak.

The host side of the tests whose guest scripts sit beside this file."""
import glob
import os
import shutil

import kver
from cases import test, ALL_PATHS, BOTH, SIDES3, random_fill
from vm import Disk, sha256_file


@test('integrity', timeout=480, modes=ALL_PATHS, sides=SIDES3, side_modes=BOTH)
def _integrity(side='main'):
    """fio crc32c verify (seq+rand, 512B-1MiB, qd 1/32, 2 jobs) on a disk with 1 queue
    (vhost-user: 2) and one with 4, paired (a direct and an indirect ring per CPU), then
    reload and re-verify; main loop, iothread and vhost-user (batch=0 on the main loop only)"""
    nq = (2, 4) if side == 'vhost-user' else (1, 4)
    return [Disk('integ1', '64M', serial='INTEG-1', props={'num-queues': nq[0]}),
            Disk('integ2', '64M', serial='INTEG-2', props={'num-queues': nq[1]})]


@test('ext4', timeout=300, modes=ALL_PATHS)
def _ext4():
    """ext4 file tree checksums survive umount + driver reload; fsck clean"""
    return [Disk('ext4d', '256M', serial='EXT4-1')]


@test('identity', timeout=180)
def _identity():
    """serial, geometry, block sizes, io_min/io_opt and capacity match QEMU"""
    return [Disk('id512e', '1G', backend='null-co', serial='ID-SER-512e',
                 props={'logical_block_size': 512, 'physical_block_size': 4096,
                        'min_io_size': 4096, 'opt_io_size': 65536,
                        'cyls': 2080, 'heads': 16, 'secs': 63}),
            Disk('id4kn', '512M', backend='null-co', serial='ID-SER-4kn',
                 props={'logical_block_size': 4096, 'physical_block_size': 4096,
                        'min_io_size': 8192, 'opt_io_size': 1048576,
                        'cyls': 1040, 'heads': 255, 'secs': 63})]


def _ro_setup(guest):
    d = guest.disk_by_id['rodisk']
    guest.ro_sum = sha256_file(d.path)


def _ro_check(guest):
    d = guest.disk_by_id['rodisk']
    after = sha256_file(d.path)
    if after != guest.ro_sum:
        return 'read-only backing file changed (sha256 %s -> %s)' % (guest.ro_sum, after)
    return None


@test('readonly', timeout=180, setup=_ro_setup, check=_ro_check)
def _readonly():
    """read-only drive: ro=1, dd/fio/mkfs writes fail, backing file unchanged"""
    return [Disk('rodisk', '32M', serial='RO-1', read_only=True, prefill=random_fill)]


@test('resize', timeout=240)
def _resize():
    """online block_resize while ext4 is mounted; guest sees new size; resize2fs online"""
    return [Disk('rsz', '128M', serial='RESIZE-1')]


@test('discard', timeout=240)
def _discard():
    """discard punches holes in the backing file, write-zeroes reads back zeroes"""
    return [Disk('dsc', '128M', serial='DISCARD-1', discard='unmap',
                 props={'discard': 'on', 'write-zeroes': 'on'})]


@test('cache_type', timeout=180)
def _cache_type():
    """cache_type write back <-> write through, confirmed by QMP query-block"""
    return [Disk('wce', '64M', serial='WCE-1', props={'config-wce': 'on'})]


@test('load_unload', leaks=True, timeout=480)
def _load_unload():
    """50 load/unload cycles with I/O; rmmod refused while ext4 is mounted"""
    return [Disk('lu', '64M', serial='LU-1')]


@test('bad_params', timeout=180, vbblk_only=True, modes=('',))
def _bad_params():
    """invalid module parameters fail the load cleanly with a vbblk: message"""
    return [Disk('bp', '64M', serial='BP-1')]


@test('coexist', timeout=300, vbblk_only=True, modes=('',))
def _coexist():
    """virtio_blk and vbblk each drive one disk at once; move a disk with vbblk-bind.sh"""
    return [Disk('co1', '64M', serial='CO-1'), Disk('co2', '64M', serial='CO-2')]


@test('pm_freeze', timeout=300)
def _pm_freeze():
    """suspend with pm_test=devices (driver freeze/restore) during verified writes, block
    and (vbblk) passthrough, interrupt-driven and IOPOLL"""
    # six queues on two CPUs, poll_queues=1: two interrupt-driven and one
    # polled, each paired with an indirect ring, all remade by restore
    return [Disk('pm', '64M', serial='PM-1', props={'num-queues': 6})]


@test('partstat', timeout=180, modes=ALL_PATHS)
def _partstat():
    """I/O on a partition moves that partition's /sys/block/vdX/vdXN/stat (requests and
    sectors, exactly) and the whole disk's, and no other partition's; fsyncs and O_DSYNC
    writes move the flush fields by exactly the device's FLUSHes (bio mode: the partition's too)"""
    return [Disk('part', '96M', serial='PART-1')]


@test('cpu_offline', timeout=300)
def _cpu_offline():
    """CPU 1 offline/online in a loop during verified sequential writes"""
    return [Disk('cpuoff', '64M', serial='CPU-1')]


@test('unplug', hotplug=True, leaks=True, timeout=360)
def _unplug():
    """unbind and QMP device_del during streaming writes: no hang, no oops; unload after"""
    return [Disk('unplug1', '64M', serial='UNPLUG-1'), Disk('unplug2', '64M', serial='UNPLUG-2')]


@test('trace', timeout=240, vbblk_only=True)
def _trace():
    """each of vbblk's tracepoints fires where its step runs: bio_queue, batch_hold,
    batch_release (reason plug, several bios), flush_stage (leads a FLUSH; one per PREFLUSH
    bio and FUA write, with its fields, under 8 concurrent flush loops), cmd_queue,
    notify, cmd_complete (a failed read, status 1) and retry (a batch over a blkdebug bad
    sector); request mode fires no bio-path event; queued = completed = driver requests"""
    rules = '[inject-error]\nevent = "read_aio"\nerrno = "5"\niotype = "read"\nsector = "8200"\n'
    return [Disk('tr1', '16M', serial='TRACE-1'),
            Disk('treinj', '16M', backend='blkdebug', serial='TRACE-EINJ', blkdebug_config=rules,
                 props={'request-merging': 'off'})]


SOAK_SECONDS = int(float(os.environ.get('SOAK_MINUTES', '1')) * 60)


@test('soak', leaks=True, timeout=SOAK_SECONDS + 300, append='vbsoak=%d' % SOAK_SECONDS)
def _soak():
    """SOAK_MINUTES (1) of mixed verified fio on 2 disks with 2 queues each, while cache_type
    flips, one disk grows and CPU 1 goes offline and back: no error, no hang, slab stable"""
    return [Disk('soak1', '64M', serial='SOAK-1', props={'num-queues': 2, 'config-wce': 'on'}),
            Disk('soak2', '64M', serial='SOAK-2', props={'num-queues': 2})]


def _bfq_module(guest, ver):
    """Host action: the guest kernel's bfq module into the share (the initramfs
    carries no I/O scheduler module); answers its file name under /host."""
    found = glob.glob(os.path.join(kver.modroot(ver), 'lib/modules', ver, 'kernel/block/bfq.ko*'))
    if not found:
        raise ValueError('no bfq module for %s' % ver)
    shutil.copy(found[0], guest.share)
    return os.path.basename(found[0]) + '\n'


@test('modes_qos', timeout=240, actions={'bfq_module': _bfq_module})
def _modes_qos():
    """what each mode gives up (README, docs/parameters.md): io.max riops=200 holds in both
    modes; an iocost 200-IOPS model holds request mode (and stock) but not bio mode; bio
    mode's scheduler stays none after echo bfq, request mode takes mq-deadline; request
    trace events only in request mode; polling in both; io.latency where built"""
    return [Disk('qos', '1G', backend='null-co', serial='QOS-1', props={'num-queues': 2})]
