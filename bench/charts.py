#!/usr/bin/python3
"""PNG bar charts of a bench/compare results directory (Debian's
python3-matplotlib; run with the system python3).

  bench/charts.py RESULTS_DIR

Per backend: <backend>-kinsn.png (guest kernel instructions per I/O),
<backend>-iops_ratio.png (IOPS relative to stock virtio_blk, min-max
whiskers over rounds) and <backend>-requests.png (device requests per I/O).
"""
import json
import os
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

LABEL = {'stock': 'stock virtio_blk', 'request': 'vbblk request', 'bio-nobatch':
         'vbblk bio batch=0', 'bio': 'vbblk bio', 'nullb-bio': 'null_blk bio',
         'nullb-mq': 'null_blk mq', 'bio-base': 'vbblk bio (BASE)',
         'request-base': 'vbblk request (BASE)', 'bio-direct': 'vbblk bio indirect=0',
         'bio-pairs': 'vbblk bio rings=pairs', 'bio-single': 'vbblk bio rings=single',
         'request-pairs': 'vbblk request rings=pairs',
         'request-single': 'vbblk request rings=single'}


def bars(path, title, ylabel, workloads, configs, value, err=None, hline=None):
    fig, ax = plt.subplots(figsize=(max(7, 1.4 * len(workloads) + 2), 4.2))
    width = 0.8 / len(configs)
    for i, cfg in enumerate(configs):
        xs, ys, lo, hi = [], [], [], []
        for j, wl in enumerate(workloads):
            v = value(wl, cfg)
            if v is None:
                continue
            e = err(wl, cfg) if err else None
            if err and None in e:
                e = (v, v)
            xs.append(j + (i - (len(configs) - 1) / 2) * width)
            ys.append(v)
            if err:
                a, b = e
                lo.append(max(0, v - a))
                hi.append(max(0, b - v))
        if xs:
            ax.bar(xs, ys, width, label=LABEL.get(cfg, cfg),
                   yerr=[lo, hi] if err else None, capsize=2)
    if hline is not None:
        ax.axhline(hline, color='black', linewidth=0.8)
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=20, ha='right', fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    out = sys.argv[1]
    data = json.load(open(os.path.join(out, 'summary.json')))
    meta = data['meta']
    sub = '%s, %s, guest %s' % (meta['date'].split()[0], meta['accel'].upper(), meta['kernel'])
    made = []
    for backend, summ in data['summary'].items():
        wls = list(summ)
        cfgs = meta['configs']
        virtio = [c for c in cfgs if not c.startswith('nullb')]

        def cell(w, c, k, summ=summ):
            x = summ[w].get(c)
            return x.get(k) if x else None
        p = os.path.join(out, '%s-kinsn.png' % backend)
        if meta['kinsn']:
            bars(p, 'Guest kernel instructions per I/O, %s (%s)' % (backend, sub),
                 'instructions / I/O', wls, cfgs, lambda w, c: cell(w, c, 'kinsn'),
                 err=lambda w, c: (cell(w, c, 'kinsn_min'), cell(w, c, 'kinsn_max')))
            made.append(p)
        if 'stock' in cfgs:
            p = os.path.join(out, '%s-iops_ratio.png' % backend)

            def ratio(w, c, k='iops'):
                st = cell(w, 'stock', 'iops')
                v = cell(w, c, k)
                return v / st if st and v is not None else None
            bars(p, 'IOPS relative to stock virtio_blk, %s (%s)' % (backend, sub),
                 'IOPS / stock IOPS', wls, virtio, ratio,
                 err=lambda w, c: (ratio(w, c, 'iops_min'), ratio(w, c, 'iops_max')), hline=1.0)
            made.append(p)
        p = os.path.join(out, '%s-requests.png' % backend)
        bars(p, 'Device requests per I/O, %s (%s)' % (backend, sub), 'requests / I/O', wls,
             virtio, lambda w, c: cell(w, c, 'requests_per_io'))
        made.append(p)
    for p in made:
        print('chart: %s' % p)
    return 0


if __name__ == '__main__':
    sys.exit(main())
