"""Group uring: the io_uring passthrough character device (/dev/vbblk/<disk>).

The host side of the tests whose guest scripts sit beside this file."""
import os

import flushcheck
from cases import test, random_fill, trace_args, SIDES3
from vm import Disk, sha256_file


def _ro_setup(guest):
    guest.ro_sum = sha256_file(guest.disk_by_id['uringro'].path)


def _ro_check(guest):
    if sha256_file(guest.disk_by_id['uringro'].path) != guest.ro_sum:
        return 'read-only backing file changed'
    return None


def _ro_setup_main(guest):
    if 'uringro' in guest.disk_by_id:
        _ro_setup(guest)


def _check_main(guest):
    """Main loop: the read-only backing file, and in QEMU's virtio-blk trace
    between marker reads 1 and 2 each passthrough write completes, then a
    FLUSH, before the next write arrives; between 2 and 3 a FLUSH completes
    after the last of 64 concurrent writes."""
    if 'uringro' not in guest.disk_by_id:
        return None
    err = _ro_check(guest)
    if err:
        return err
    ph = flushcheck.phases(flushcheck.events(os.path.join(guest.outdir, 'trace.log')))
    if (1, 2) not in ph or (2, 3) not in ph:
        return 'the trace lacks the passthrough FLUSH phases (markers 1-3)'
    return (flushcheck.check_fua(ph[(1, 2)], 'passthrough WRITE then FLUSH', 8) or
            flushcheck.check_sync(ph[(2, 3)], 'passthrough writes then one FLUSH'))


# the other device sides in bio mode only: the passthrough code is the same
# in both modes, a side changes the device
@test('uring', timeout=420, vbblk_only=True, leaks=True, hotplug=True, setup=_ro_setup_main,
      check=_check_main, extra_args=trace_args, sides=SIDES3, side_modes=('mode=bio',))
def _uring(side='main'):
    """passthrough: GET_ID; data written through /dev/vbblk/<disk> read back through the
    block device and the other way round (plain, registered, vectored, polled; 1 and 2
    queues); polled commands raise no interrupt; FLUSH, DISCARD, WRITE ZEROES reach the
    device, and each FLUSH follows the writes completed before it in the device's trace; a 16-entry ring under QD 128 beside block I/O waits, loses nothing; hostile commands get their errno (on a 4K-block disk too); read-only
    disk and descriptor; rmmod refused while open; unbind and device_del under load end
    every command; iothread and vhost-user (bio mode): data, polling, full ring, unbind"""
    if side != 'main':
        return [Disk('uring1', '64M', serial='URING-1', props={'num-queues': 1}),
                Disk('uring2', '64M', serial='URING-2', props={'num-queues': 2}),
                Disk('uring3', '32M', serial='URING-3', props={'queue-size': 16})]
    return [Disk('uring1', '64M', serial='URING-1', props={'num-queues': 1, 'discard': 'off'}),
            Disk('uring2', '64M', serial='URING-2',
                 props={'num-queues': 2, 'discard': 'on', 'write-zeroes': 'on'}),
            Disk('uringro', '8M', serial='URING-RO', read_only=True, prefill=random_fill),
            Disk('uring3', '32M', serial='URING-3', props={'queue-size': 16}),
            Disk('uring4', '32M', serial='URING-4'),
            Disk('uring4k', '16M', serial='URING-4K',
                 props={'logical_block_size': 4096, 'physical_block_size': 4096,
                        'discard': 'on'})]


# slub_debug: on a production kernel a corrupted allocation cache or a
# freed struct vbblk shows as an oops (Debian's 7.2 with the old code: a GPF
# in kfree from io_free_alloc_caches after the two polled rings)
@test('uring_life', timeout=600, vbblk_only=True, leaks=True, append='slub_debug=FZPU')
def _uring_life():
    """passthrough lifetime and memory safety: GET_ID after a DISCARD on the same CPU leaks
    no range bytes; two IOPOLL rings on one poll queue, and one beside fio hipri on the
    block device, each reaping the other's commands (KASAN-clean on the debug kernel); a
    read-write descriptor held across unbind gets ENODEV for every command; unbind under
    an IOPOLL load at QD 32 neither waits for remove_timeout nor fails completed I/O with
    EIO; rmmod right after polled reads"""
    return [Disk('life1', '64M', serial='LIFE-1',
                 props={'num-queues': 2, 'discard': 'on', 'write-zeroes': 'on'}),
            Disk('life2', '64M', serial='LIFE-2',
                 props={'num-queues': 2, 'discard': 'on', 'write-zeroes': 'on'})]


def _write_trace(outdir):
    return ['-trace', 'enable=virtio_blk_handle_write', '-D', os.path.join(outdir, 'trace.log')]


def _fifo_check(guest):
    """The FIFO step's writes (sectors 16384-32767, 8 each, issued in
    order) reach the device in order: none overtook one the driver's
    worker held (issue 48, L1)."""
    import re
    got = []
    with open(os.path.join(guest.outdir, 'trace.log')) as f:
        for line in f:
            m = re.search(r'virtio_blk_handle_write .* sector (\d+) nsectors (\d+)', line)
            if m and 16384 <= int(m.group(1)) < 32768:
                got.append(int(m.group(1)))
    if len(got) != 2048:
        return 'FIFO step: the device got %d writes in sectors 16384-32767, not 2048' % len(got)
    for i in range(1, len(got)):
        if got[i] < got[i - 1]:
            return ('FIFO step: write %d (sector %d) reached the device after write %d '
                    '(sector %d): %d of 2048 out of order'
                    % ((got[i] - 16384) // 8, got[i], (got[i - 1] - 16384) // 8, got[i - 1],
                       sum(1 for j in range(1, len(got)) if got[j] < got[j - 1])))
    return None


@test('uring_fullring', timeout=420, vbblk_only=True, extra_args=_write_trace,
      check=_fifo_check)
def _uring_fullring():
    """passthrough writes on a full ring: 12 rounds of QD 128 writes on a 16-entry ring beside
    QD 64 of block reads, every byte checked through the block device (Debian's 6.12 lost
    writes when the driver returned EAGAIN to io_uring's non-blocking issue); 2048 sequential
    writes from one CPU reach the device in order although some wait in the driver's worker
    (FIFO)"""
    return [Disk('full1', '32M', serial='FULL-1', props={'queue-size': 16})]


@test('uring_nocache', timeout=240, vbblk_only=True)
def _uring_nocache():
    """passthrough FLUSH on a device without a volatile cache: 0 at once on a plain ring and
    on an IOPOLL ring, with poll_queues 0 and 1, 64 in a row and between polled reads (6.1
    spun for ever in io_do_iopoll: the FLUSH answered inline was both posted and polled)"""
    return [Disk('nc1', '16M', serial='NC-1',
                 props={'num-queues': 2, 'write-cache': 'off', 'config-wce': 'off'})]


def _example_pattern(sector, kib):
    """What examples/vbblk-uring.c writes at sector: 64-byte text lines."""
    out = []
    for s in range(sector, sector + kib * 2):
        for line in range(8):
            out.append(('%-63s\n' % ('vbblk-uring sector %-10d line %d' % (s, line))).encode())
    return b''.join(out)


def _example_check(guest):
    """The backing file holds what the example wrote (device side, not cache)."""
    with open(guest.disk_by_id['uex1'].path, 'rb') as f:
        for sector, kib in ((2048, 64), (40000, 128)):
            f.seek(sector * 512)
            if f.read(kib * 1024) != _example_pattern(sector, kib):
                return 'backing file: no example pattern at sector %d' % sector
    return None


@test('uring_example', timeout=180, vbblk_only=True, check=_example_check)
def _uring_example():
    """the passthrough example (examples/vbblk-uring.c, poll_queues=1): its steps' output,
    GET_ID, WRITE from a registered buffer, FLUSH counted by the driver and the device,
    polled READ; the pattern read back through the block device and in the backing file; on a
    read-only disk it stops at the WRITE with EROFS"""
    return [Disk('uex1', '64M', serial='UEX-1', props={'num-queues': 2}),
            Disk('uexro', '8M', serial='UEX-RO', read_only=True)]


# ---- the exerciser (issue 48): a device shape and parameters per seed ----

# one process, so unbinds; bad sectors; suspends; a poll queue on a device
# without a cache (on cbb659c's module it finds H1 within seconds). Seeds
# before it (0x48e1) replay with EXER_UNBIND=0 EXER_ERRORS=0 as they ran.
EXER_FIXED_SEED = 0x4801
_exer = {}


def exer_shape(seed):
    """The device and the module parameters seed draws (one boot's worth):
    the combinations a user makes, not the ones a test lists."""
    import random
    r = random.Random(seed)
    nq = r.randint(1, 4)
    props = {'num-queues': nq,
             'queue-size': r.choice((16, 64, 128, 256, 256, 256)),
             'write-cache': r.choice(('on', 'off')),
             'config-wce': r.choice(('on', 'off')),
             'discard': r.choice(('on', 'off')),
             'write-zeroes': r.choice(('on', 'off'))}
    if r.random() < 0.3:
        props.update({'logical_block_size': 4096, 'physical_block_size': 4096})
    if r.random() < 0.2:
        props['packed'] = 'on'
    ro = r.random() < 0.08
    params = ['poll_queues=%d' % r.randint(0, min(2, nq - 1))]
    if r.random() < 0.2:
        params.append('indirect=0')
    if r.random() < 0.2:
        params.append('queue_depth=%d' % r.choice((2, 16, 64)))
    if r.random() < 0.2:
        params.append('batch=0')
    # the ring policy: its own draw, so the draws above stay as they were
    rings = random.Random('rings-%d' % seed).choice(('auto', 'auto', 'pairs', 'single',
                                                     'direct'))
    if rings != 'auto':
        params.append('rings=' + rings)
    events = ['cache', 'fork', 'close']
    # a boot has suspends or host resizes, not both: 9p (the host's
    # requests) cannot be frozen. Its own draw, so the others stay put.
    resize = random.Random('resize-%d' % seed).random() < 0.4
    if os.environ.get('EXER_RESIZE') in ('0', '1'):
        resize = os.environ['EXER_RESIZE'] == '1'
    resize = resize and not ro  # QEMU grows no read-only node
    if os.environ.get('EXER_SUSPEND') != '0' and not resize:
        events.append('suspend')
    flags = '-P' if r.random() < 0.5 else ''
    if os.environ.get('EXER_PARTNER') in ('0', '1'):
        flags = '-P' if os.environ['EXER_PARTNER'] == '1' else ''
    # unbind and bind: with one process (the partner's descriptors would die)
    if not flags and os.environ.get('EXER_UNBIND') != '0':
        events.append('unbind')
    if os.environ.get('EXER_EVENTS') is not None:
        events = os.environ['EXER_EVENTS'].split(',')
    if os.environ.get('EXER_VERBOSE') == '1':
        flags += ' -v'
    if os.environ.get('EXER_HELD') == '1':
        flags += ' -H'
    x = [w for w, e in (('drain', 'EXER_NODRAIN'), ('late', 'EXER_NOLATE'))
         if os.environ.get(e) == '1']
    if x:
        flags += ' -x ' + ','.join(x)
    if os.environ.get('EXER_KEEP'):
        flags += ' -k ' + os.environ['EXER_KEEP']
    if resize:
        flags += ' -R exer1'
    # device errors: bad sectors (blkdebug), reads or writes or both, in a
    # third of the boots; their own draw, so the others stay put
    bad = exer_bad_sectors(seed, props)
    if bad:
        flags += ' -B ' + ','.join('%d:%s' % b for b in bad)
        # QEMU would merge neighbouring requests itself and fail them together
        props['request-merging'] = 'off'
    return dict(props=props, ro=ro, params=' '.join(params), events=','.join(events),
                flags=(flags + ' -S').strip(), bad=bad)


EXER_DISK_MB = 32


def exer_bad_sectors(seed, props):
    """[(512-byte sector, 'r'|'w'|'rw')]: where the device fails this boot's
    I/O (EXER_ERRORS=0|1 says whether there are any). Past the first and
    before the last MiB, where the partition scan reads."""
    import random
    r = random.Random('errors-%d' % seed)
    on = r.random() < 0.33
    if os.environ.get('EXER_ERRORS') in ('0', '1', 'model'):
        on = os.environ['EXER_ERRORS'] != '0'
    if not on:
        return []
    unit = 8 if props.get('logical_block_size') == 4096 else 1
    bad = {}
    for _ in range(r.randint(1, 3)):
        sec = r.randrange(2048, (EXER_DISK_MB - 1) * 2048) // unit * unit
        bad[sec] = r.choice(('r', 'w', 'rw'))
    return sorted(bad.items())


def exer_blkdebug(bad):
    """blkdebug's rules for those sectors: EIO on every read or write
    that covers one, for the whole boot."""
    rules = ''
    for sec, how in bad:
        for op in (('read', 'write') if how == 'rw' else
                   ('read',) if how == 'r' else ('write',)):
            rules += ('[inject-error]\nevent = "%s_aio"\nerrno = "5"\niotype = "%s"\n'
                      'sector = "%d"\nonce = "off"\n\n' % (op, op, sec))
    return rules


def _exer_disks(seed, ops):
    sh = exer_shape(seed)
    _exer.clear()
    _exer.update(sh, seed=seed, ops=int(os.environ.get('EXER_OPS', str(ops))))
    kw = dict(backend='blkdebug', blkdebug_config=exer_blkdebug(sh['bad'])) if sh['bad'] else {}
    if os.environ.get('EXER_ERRORS') == 'model':
        # the model's own check: told of bad sectors the device does not
        # have, the exerciser must fail (docs/testing.md)
        kw = {}
    return [Disk('exer1', '%dM' % EXER_DISK_MB, serial='EXER-1', read_only=sh['ro'],
                 props=sh['props'], prefill=random_fill, **kw)]


def _exer_setup(guest):
    sh = _exer
    shape = ' '.join('%s=%s' % kv for kv in sorted(sh['props'].items())) + \
        (' read-only' if sh['ro'] else '') + \
        (' bad sectors %s' % ','.join('%d:%s' % b for b in sh['bad']) if sh['bad'] else '')
    with open(os.path.join(guest.share, 'exer.env'), 'w') as f:
        f.write('EXER_SEED=0x%x\nEXER_SHAPE="%s"\nEXER_PARAMS="%s"\nEXER_EVENTS=%s\n'
                'EXER_FLAGS="%s"\nEXER_OPS=%d\nEXER_SECS=%d\nEXER_TRACE=%s\n'
                % (sh['seed'], shape, sh['params'], sh['events'], sh['flags'], sh['ops'],
                   int(os.environ.get('EXER_SECS', '150')),
                   '1' if os.environ.get('EXER_TRACE') == '1' else ''))


# CI's pass: the fixed seed and a drawn one, in both modes (the debug pass
# runs one of each, at 1200 operations). EXER_OPS sets both.
@test('exercise', timeout=420, vbblk_only=True, setup=_exer_setup, leaks=True)
def _exercise():
    """the exerciser with a fixed seed (EXER_SEED=... picks another): operations drawn over
    the node (every opcode, one fault each, plain/registered/vectored/file-backed buffers,
    IOPOLL/SQPOLL/SINGLE_ISSUER/DEFER_TASKRUN/COOP_TASKRUN rings, links, cancels, timeouts,
    two rings), the block device (O_DIRECT, buffered, ioctls, SG_IO as root and not) and
    events (cache_type flips, stores to the disk's other knobs and vbblk's parameters, a
    fork, a ring closed mid-flight, suspends or host resizes, unbind and bind with every
    ring in flight) and bad sectors on the device, every result checked against a model
    of the disk; the device shape and module parameters drawn from the same seed"""
    return _exer_disks(int(os.environ.get('EXER_SEED', str(EXER_FIXED_SEED)), 0), 4000)


@test('exercise_random', timeout=420, vbblk_only=True, setup=_exer_setup, leaks=True)
def _exercise_random():
    """the exerciser as above with a seed drawn at each run (printed, with the command
    that replays it; EXER_SEED=... replays it): a new device shape, parameters and
    operations each time"""
    seed = os.environ.get('EXER_SEED')
    return _exer_disks(int(seed, 0) if seed else random_seed(), 2500)


def random_seed():
    import random
    return random.SystemRandom().getrandbits(48)
