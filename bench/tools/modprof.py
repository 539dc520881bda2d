#!/usr/bin/env python3
"""Per-symbol cost of one module's own code, per I/O, from a PROFILE=1 run.

  bench/tools/modprof.py RESULTS_DIR [WORKLOAD ...]

RESULTS_DIR is a bench/compare output (results/<timestamp>); each of its
backends is read. For every config and workload (all, or those named) it
prints the module's instructions per I/O (the report's *driver submit* row:
every [vbblk] or [virtio_blk] symbol), the median over rounds, and the
symbols that make it up, largest first. Reads what the report reads; it
measures nothing itself.
"""
import bisect
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import report  # noqa: E402

MODULES = ('[vbblk]', '[virtio_blk]')


def window_symbols(bdir, idx, base, ios):
    """Module symbols of the idx-th profile window: {name: instructions/IO}."""
    prof = os.path.join(bdir, 'kinsn.marks.prof%d' % idx)
    ksyms = os.path.join(bdir, 'raw', 'kallsyms')
    if not os.path.exists(prof) or not os.path.exists(ksyms):
        return None
    syms = report.kallsyms(open(ksyms))
    if os.path.exists(base + '.modsyms'):
        syms += report.kallsyms(open(base + '.modsyms'))
    syms.sort()
    addrs = [a for a, _ in syms]
    per = {}
    for line in open(prof):
        va, n, e = line.split()
        va = int(va, 16)
        i = bisect.bisect_right(addrs, va) - 1
        if i < 0 or not syms[i][1].endswith(MODULES):
            continue
        name = syms[i][1].split()[0]
        per[name] = per.get(name, 0) + int(n) * int(e) / ios
    return per


def backend(meta, bdir, wls):
    raw = os.path.join(bdir, 'raw')
    order = open(os.path.join(raw, 'marks.list')).read().split()
    for wl in wls:
        bs = report.job_bs_kib(wl)
        for cfg in meta['configs']:
            rounds = []
            for r in range(1, meta['rounds'] + 1):
                base = os.path.join(raw, 'r%d-%s-%s' % (r, cfg, wl))
                gbase = '/host/results/' + os.path.basename(base)
                if gbase not in order or not os.path.exists(base + '.window'):
                    continue
                ios = report.read_counts(base + '.window')['kib'] / bs
                p = window_symbols(bdir, order.index(gbase), base, ios) if ios else None
                if p is not None:
                    rounds.append(p)
            if not rounds:
                continue
            names = set().union(*rounds)
            med = {n: statistics.median(r.get(n, 0) for r in rounds) for n in names}
            total = statistics.median(sum(r.values()) for r in rounds)
            print('%s  %s: %.0f instructions/IO (%d rounds)' % (wl, cfg, total, len(rounds)))
            for n, v in sorted(med.items(), key=lambda kv: -kv[1]):
                if v >= 1:
                    print('    %6.0f  %s' % (v, n))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    meta = json.load(open(os.path.join(out, 'meta.json')))
    if not meta.get('profile'):
        sys.exit('modprof: %s was not run with PROFILE=1' % out)
    wls = sys.argv[2:] or meta['workloads']
    for unit in sorted(os.listdir(out)):
        bdir = os.path.join(out, unit)
        if os.path.exists(os.path.join(bdir, 'raw', 'marks.list')):
            print('== %s' % unit)
            backend(meta, bdir, wls)


if __name__ == '__main__':
    main()
