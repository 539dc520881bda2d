"""The project's targets, declared once: bench/report.py checks a run
against the ones that apply to its guest kernel.

Each target is one cell of a bench/compare run, a workload (bench/jobs)
under a config (`bio`: vbblk mode=bio; on the pt-* workloads, the
passthrough node in bio mode), and one metric of it compared with a
bound. `kernels` names the guest kernel series it applies to, the
major.minor of the release meta.json records as `kernel`; None: every
kernel. `text` says what is measured; the bound is added to it from the
data (describe()), so the two cannot disagree.

Metrics (bench/report.py evaluates them; a run without the data skips
the target):
  kinsn         kernel instructions per I/O, ratio to stock's in the same
                workload, or in workload `ref` when given
  iops          IOPS, ratio to stock's
  requests      device requests per I/O, ratio to stock's
  requests_abs  device requests per I/O
  stage         instructions per I/O in the `stages` rows of the config's
                round-1 profile (PROFILE=1; rows of bench/categories.py)
  above_floor   kinsn less the config's floor: the ratio to stock it would
                have with the `stages` rows at zero (round-1 profiles)

Issue 32 retired the 0.65x instructions target at QD1: sleep, wakeup,
system call and page pinning, the same under every driver, are most of
a QD1 I/O, and the target was below what any virtio block driver can
reach on 6.1. QD1 is now judged by how far the module's own code leaves
bio mode above the floor, and by the module's own instructions.
"""
import collections
import re

Target = collections.namedtuple(
    'Target', 'id workload metric op bound text kernels config ref stages',
    defaults=(None, 'bio', None, ()))

# bench/categories.py puts every symbol of the module, submit and
# completion code alike, in this row
MODULE = ('driver submit',)

TARGETS = [
    # issue 32: the module's own instructions per 4k I/O, bio mode and the
    # passthrough node
    Target('module-qd1', 'randread-qd1', 'stage', '<=', 500,
           "4k random read QD1 (libaio), the module's own code", stages=MODULE),
    Target('module-qd32', 'randread-qd32', 'stage', '<=', 500,
           "4k random read QD32 (libaio), the module's own code", stages=MODULE),
    Target('node-module-qd1', 'pt-randread-qd1', 'stage', '<=', 450,
           "passthrough node, 4k random read QD1, the module's own code", stages=MODULE),
    Target('node-module-qd32', 'pt-randread-qd32', 'stage', '<=', 450,
           "passthrough node, 4k random read QD32, the module's own code", stages=MODULE),
    # QD1 totals: within 0.03 of what bio mode would cost with the module's
    # code at zero (the floor of issue 32's figures: 0.87x stock on 7.2)
    Target('qd1-floor', 'randread-qd1', 'above_floor', '<=', 0.03,
           '4k random read QD1 (libaio)', stages=MODULE),
    Target('qd1-uring-floor', 'randread-qd1-uring', 'above_floor', '<=', 0.03,
           '4k random read QD1 (io_uring)', stages=MODULE),
    # QD32 totals: 7.2's stock driver is leaner than 6.1's
    Target('qd32-kinsn-6.1', 'randread-qd32', 'kinsn', '<=', 0.65,
           '4k random read QD32 (libaio)', kernels=('6.1',)),
    Target('qd32-uring-kinsn-6.1', 'randread-qd32-uring', 'kinsn', '<=', 0.65,
           '4k random read QD32 (io_uring)', kernels=('6.1',)),
    Target('qd32-kinsn-7.2', 'randread-qd32', 'kinsn', '<=', 0.80,
           '4k random read QD32 (libaio)', kernels=('7.2',)),
    Target('qd32-uring-kinsn-7.2', 'randread-qd32-uring', 'kinsn', '<=', 0.80,
           '4k random read QD32 (io_uring)', kernels=('7.2',)),
    # the io_uring passthrough node against stock's block device, the same
    # vbuio loop on both; at QD1 only its own code has a goal (above)
    Target('node-qd32-kinsn', 'pt-randread-qd32', 'kinsn', '<=', 0.40,
           'passthrough node, 4k random read QD32'),
    # the earlier targets, on every kernel
    Target('qd1-iops', 'randread-qd1', 'iops', '>=', 1.15, '4k random read QD1 (libaio)'),
    Target('qd32-iops', 'randread-qd32', 'iops', '>=', 1.25, '4k random read QD32 (libaio)'),
    Target('seqwrite-kinsn', 'seqwrite-qd32', 'kinsn', '<=', 0.70,
           '4k sequential write, one at a time'),
    Target('seqwrite-batch-iops', 'seqwrite-qd32-batch16', 'iops', '>=', 1.0,
           '4k sequential write, batched'),
    Target('seqread-batch-iops', 'seqread-qd32-batch16', 'iops', '>=', 1.0,
           '4k sequential read, batched'),
    Target('seqwrite-iops', 'seqwrite-qd32', 'iops', '>=', 1.0,
           '4k sequential write, one at a time'),
    # 1 % over stock's: the two counts are taken over slightly different spans
    Target('seqwrite-batch-requests', 'seqwrite-qd32-batch16', 'requests', '<=', 1.01,
           '4k sequential write, batched'),
    Target('seqread-batch-requests', 'seqread-qd32-batch16', 'requests', '<=', 1.01,
           '4k sequential read, batched'),
    Target('seqwrite-requests', 'seqwrite-qd32', 'requests_abs', '<=', 0.25,
           '4k sequential write, one at a time'),
    Target('seqread-128k-iops', 'seqread-128k-qd8', 'iops', '>=', 0.98,
           '128k sequential read QD8'),
    Target('seqwrite-128k-iops', 'seqwrite-128k-qd8', 'iops', '>=', 0.98,
           '128k sequential write QD8'),
    Target('polled-qd1-kinsn', 'randread-qd1-hipri', 'kinsn', '<=', 0.60,
           'polled 4k random read QD1 (io_uring hipri), against stock interrupt-driven',
           ref='randread-qd1'),
]

OPS = {'<=': '≤', '>=': '≥'}


def series(release):
    """'6.1' of '6.1.0-57-amd64', '7.2' of '7.2.13+deb14-amd64'; None
    when the release does not start with major.minor."""
    m = re.match(r'(\d+)\.(\d+)', release or '')
    return '%s.%s' % m.groups() if m else None


def applies(t, release):
    """Does target t apply to a run on guest kernel release?"""
    return t.kernels is None or series(release) in t.kernels


def for_kernel(release):
    return [t for t in TARGETS if applies(t, release)]


def bound_text(t):
    """The metric and its bound, in words: 'IOPS ≥ 1.15× stock'."""
    b = '%s %g' % (OPS[t.op], t.bound)
    if t.metric == 'kinsn':
        return 'kernel instructions/IO %s× stock%s' % (b, "'s %s" % t.ref if t.ref else '')
    if t.metric == 'iops':
        return 'IOPS %s× stock' % b
    if t.metric == 'requests':
        return 'device requests/bio %s× stock' % b
    if t.metric == 'requests_abs':
        return 'device requests/bio %s' % b
    if t.metric == 'stage':
        return '%s instructions/IO %s' % (' + '.join(t.stages), b)
    if t.metric == 'above_floor':
        return ('kernel instructions/IO %s× stock above its floor (%s at zero)'
                % (b, ' + '.join(t.stages)))
    raise ValueError('%s: unknown metric %s' % (t.id, t.metric))


def describe(t):
    return '%s: %s' % (t.text, bound_text(t))
