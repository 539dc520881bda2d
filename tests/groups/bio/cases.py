"""Group bio: the bio path: batching and its hold policy, full rings, shared queues, polling, crafted bios.

The host side of the tests whose guest scripts sit beside this file."""
import flushcheck
import os

from cases import test, trace_args
from vm import Disk


@test('batching', timeout=420, vbblk_only=True, modes=('mode=bio',))
def _batching():
    """bio mode: batches of 16 reach the device as <= 1 request per 16 bios; random I/O
    is not merged; a lone QD1 bio is never held; QD32 streams merge; batch=0 still
    saves notifies under a plug"""
    return [Disk('batch', '64M', serial='BATCH-1')]


@test('ringfull', timeout=420,
      modes=('mode=bio', 'mode=bio indirect=0', 'mode=request indirect=0'))
def _ringfull():
    """queue-size=16 under iodepth 256, random and sequential, libaio and io_uring, 40 s,
    verified: no error, no hang; paired queues (4 on 2 CPUs) spill small commands from the
    full direct ring to the indirect one; with indirect=0 the ring's descriptors run out"""
    return [Disk('ring', '64M', serial='RING-1', props={'queue-size': 16})]


@test('shared_queue', timeout=300)
def _shared_queue():
    """a QD1 sequential writer on CPU 0 shares the only virtqueue with 32 random reads
    from CPU 1 on a 1000-IOPS device: its worst latency stays within 10x the stock
    driver's in the same boot (a held stream batch is bounded by the I/O in flight
    when it was held, not by the other CPU's later load)"""
    return [Disk('sq', '64M', serial='SQ-1', props={'num-queues': 1})]


@test('poll', timeout=300, sides=('main', 'vhost-user'), side_modes=('mode=bio',))
def _poll(side='main'):
    """poll_queues=1: io_poll on, io_uring hipri verified with (almost) no interrupts,
    interrupt-driven I/O beside it, clean unload; main loop and (bio mode) vhost-user"""
    return [Disk('polld', '64M', serial='POLL-1', props={'num-queues': 3})]


def _biotest_check(guest):
    # blk-mq disks (request mode, stock virtio_blk) send a READ with FUA as
    # the read and then a flush: blk-mq's flush machinery, no FUA on the queue
    blkmq = guest.driver != 'vbblk' or 'mode=request' in (guest.vbblk_params or '').split()
    return flushcheck.check_biotest(os.path.join(guest.outdir, 'trace.log'),
                                    os.path.join(guest.share, 'biotest.cases'), blkmq)


@test('biotest', timeout=300, extra_args=trace_args, check=_biotest_check,
      kmod=('vbbiotest',))
def _biotest():
    """crafted bios from tests/kmod/vbbiotest.ko: READ with PREFLUSH and/or FUA is a flush
    then a read, never a write (device trace and counters); empty PREFLUSH; WRITE with
    PREFLUSH|FUA; a max_sectors bio; a zero-length write; REQ_NOWAIT on a full ring gets
    EAGAIN and loses nothing; reads submitted from softirq, one and 16 onto a full ring;
    16 polled reads under one plug on a 4-deep poll queue"""
    return [Disk('bt', '64M', serial='BIOTEST-1', props={'num-queues': 2})]
