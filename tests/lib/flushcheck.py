"""Check flush ordering in a QEMU virtio-blk trace (see tests/groups/flush/flush.sh and,
for check_biotest(), tests/groups/bio/biotest.sh).

The trace has virtio_blk_handle_read/_write (a read or write arrives) and
virtio_blk_req_complete (any request completes). A completion for a request
that did not arrive as a read or write is a FLUSH here: the flush test sends
nothing else. Marker reads of one sector at 100000+N cut the trace in phases.
"""
import re

_EV = re.compile(r'virtio_blk_(handle_read|handle_write|req_complete) vdev (\S+) req (\S+)'
                 r'(?: sector (\d+) nsectors (\d+))?')
MARK_BASE = 100000


def events(path):
    """[(kind, vdev, sector)] with kind R, W (arrivals), CR, CW (their
    completions), F (flush completion), M (marker read arrival, sector=N)."""
    pending = {}
    out = []
    for line in open(path, errors='replace'):
        m = _EV.search(line)
        if not m:
            continue
        what, vdev, req = m.group(1), m.group(2), m.group(3)
        key = (vdev, req)
        if what == 'req_complete':
            kind = pending.pop(key, None)
            if kind == 'M':
                continue
            out.append(('C' + kind if kind else 'F', vdev, None))
            continue
        sector, n = int(m.group(4)), int(m.group(5))
        if what == 'handle_read' and n == 1 and sector > MARK_BASE:
            pending[key] = 'M'
            out.append(('M', vdev, sector - MARK_BASE))
        else:
            kind = 'R' if what == 'handle_read' else 'W'
            pending[key] = kind
            out.append((kind, vdev, sector))
    return out


_LU_SUB = re.compile(r'luring_co_submit .* luringcb (\S+) fd \d+ offset (\d+) nbytes (\d+) '
                     r'type (\d+)')
_LU_DONE = re.compile(r'luring_process_completion .* luringcb (\S+)')
_AIO = {1: 'R', 2: 'W', 8: 'F'}     # QEMU_AIO_READ, _WRITE, _FLUSH


def luring_events(path, vdev):
    """events() for a vhost-user disk: its qemu-storage-daemon's io_uring
    trace (the file is the device's medium). A flush appears at its
    completion, as in the virtio-blk trace."""
    pending = {}
    out = []
    for line in open(path, errors='replace'):
        m = _LU_SUB.search(line)
        if m:
            cb, off, n, typ = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            kind = _AIO.get(typ)
            if kind == 'R' and n == 512 and off // 512 > MARK_BASE:
                pending[cb] = 'M'
                out.append(('M', vdev, off // 512 - MARK_BASE))
            elif kind in ('R', 'W'):
                pending[cb] = kind
                out.append((kind, vdev, off // 512))
            elif kind == 'F':
                pending[cb] = 'F'
            continue
        m = _LU_DONE.search(line)
        if m and m.group(1) in pending:
            kind = pending.pop(m.group(1))
            if kind == 'F':
                out.append(('F', vdev, None))
            elif kind != 'M':
                out.append(('C' + kind, vdev, None))
    return out


def phases(evs):
    """{(start_mark, end_mark): events between them, same vdev as the marks}"""
    marks = [(i, e) for i, e in enumerate(evs) if e[0] == 'M']
    res = {}
    for (i, a), (j, b) in zip(marks, marks[1:]):
        if a[1] == b[1]:
            res[(a[2], b[2])] = [e for e in evs[i + 1:j] if e[1] == a[1]]
    return res


def check_fua(seg, name, n):
    """The first n writes (the job's, issued one at a time): each completes,
    then a flush completes, before the next write arrives. What follows
    them (filesystem metadata) is not FUA and is not checked."""
    writes = [i for i, e in enumerate(seg) if e[0] == 'W']
    if len(writes) < n:
        return '%s: %d writes in the trace, expected %d' % (name, len(writes), n)
    end = writes[n] if len(writes) > n else len(seg)
    state = 'idle'
    for e in seg[:end]:
        if e[0] == 'W':
            if state not in ('idle', 'flushed'):
                return '%s: a write arrived before the previous FUA write was flushed' % name
            state = 'writing'
        elif e[0] == 'CW':
            state = 'written'
        elif e[0] == 'F' and state == 'written':
            state = 'flushed'
    if state != 'flushed':
        return '%s: the last write was not followed by a flush' % name
    return None


def check_sync(seg, name):
    """A flush completes after the last write completion (fsync/fdatasync)."""
    last_cw = max((i for i, e in enumerate(seg) if e[0] == 'CW'), default=None)
    if last_cw is None:
        return '%s: no write completed in the trace' % name
    if not any(e[0] == 'F' for e in seg[last_cw + 1:]):
        return '%s: no flush completed after the last write' % name
    return None


def check_none(seg, name):
    n = sum(1 for e in seg if e[0] == 'F')
    if not any(e[0] == 'W' for e in seg):
        return '%s: no writes in the trace' % name
    return '%s: %d flushes sent to a write-through disk' % (name, n) if n else None


def check(path):
    return check_events(events(path))


def check_events(evs):
    ph = phases(evs)
    plan = [((1, 2), lambda s, n: check_fua(s, n, 8), 'O_DSYNC writes'),
            ((2, 3), check_sync, 'fdatasync on the raw device'),
            ((4, 5), check_sync, 'fsync on ext4'),
            ((6, 7), lambda s, n: check_fua(s, n, 16), 'O_DIRECT|O_DSYNC overwrites on ext4'),
            ((11, 12), check_none, 'write-through disk')]
    for key, fn, name in plan:
        if key not in ph:
            return 'trace has no phase %s..%s (%s)' % (key[0], key[1], name)
        err = fn(ph[key], name)
        if err:
            return err
    return None


def _around(seq, data, pre, post):
    """seq: one case's device events. The case's `data` (R or W) reached
    the device; a flush completed before its first arrival iff pre, and
    one after its last completion iff post."""
    what = 'read' if data == 'R' else 'write'
    if data not in seq:
        return 'no %s reached the device' % what
    first = seq.index(data)
    last = len(seq) - 1 - seq[::-1].index('C' + data)
    if pre != ('F' in seq[:first]):
        return '%s flush before the %s' % ('no' if pre else 'a', what)
    if post != ('F' in seq[last + 1:]):
        return '%s flush after the %s' % ('no' if post else 'a', what)
    return None


def _read_flush(bio, blkmq):
    """A READ with PREFLUSH and/or FUA: never a write; (flush before, flush
    after) the read as given for vbblk's bio mode and for blk-mq."""
    def check(seq, is_blkmq):
        if 'W' in seq:
            return 'a write reached the device'
        return _around(seq, 'R', *(blkmq if is_blkmq else bio))
    return check


def _empty_flush(seq, is_blkmq):
    if 'R' in seq or 'W' in seq:
        return 'data reached the device'
    return None if 'F' in seq else 'no flush reached the device'


# case -> check(device events, blk-mq disk?). vbblk's bio mode sends a read
# with PREFLUSH and/or FUA as FLUSH, then READ, nothing after. blk-mq (request
# mode, stock virtio_blk) flushes before the read for PREFLUSH and after it
# for FUA: its flush machinery's postflush, as the queue has no FUA.
BIOTEST_CASES = {
    'read_preflush': _read_flush(bio=(True, False), blkmq=(True, False)),
    'read_fua': _read_flush(bio=(True, False), blkmq=(False, True)),
    'read_preflush_fua': _read_flush(bio=(True, False), blkmq=(True, True)),
    'empty_preflush': _empty_flush,
    'write_preflush_fua': lambda seq, is_blkmq: _around(seq, 'W', True, True),
}


def check_biotest(trace, cases_file, blkmq):
    """tests/groups/bio/biotest.sh lists each case it ran in cases_file as
    "NAME VERDICT MARK": the case's bios reached the device between marker
    reads MARK and MARK+1. Check the order of flushes, reads and writes for
    the cases in BIOTEST_CASES that ran (a SKIP sent nothing)."""
    ph = phases(events(trace))
    try:
        lines = open(cases_file).read().splitlines()
    except OSError:
        return 'no %s from the guest' % cases_file
    checked = 0
    for line in lines:
        name, verdict, mark = line.split()
        if verdict == 'SKIP' or name not in BIOTEST_CASES:
            continue
        key = (int(mark), int(mark) + 1)
        if key not in ph:
            return 'trace has no phase %s..%s (%s)' % (key[0], key[1], name)
        seq = [e[0] for e in ph[key]]
        err = BIOTEST_CASES[name](seq, blkmq)
        if err:
            return '%s: %s (device trace: %s)' % (name, err, ' '.join(seq) or 'nothing')
        checked += 1
    return None if checked else 'no case to check in %s' % cases_file
