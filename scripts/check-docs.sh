#!/bin/bash
# Docs gate: README.md stays a front door (at most README_MAX lines, 250),
# and every relative link in README.md, docs/*.md and examples/*.md, [text](path) or
# [text](path#anchor) or [text](#anchor), names a file that exists and an
# anchor that one of the target's headings makes (GitHub's slugs). Links in
# code are not links. The targets table of docs/bench.md is what
# bench/targets.py prints from its declaration (`make targets-docs`
# rewrites it); README.md's results come from bench/readme.py. Run by scripts/check-style.sh; runs alone too.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

fail=0
README_MAX=${README_MAX:-250} python3 - README.md docs/*.md examples/*.md <<'EOF' || fail=1
import os
import re
import sys
import unicodedata

def strip_code(text):
    """The text with fenced blocks and inline code spans blanked out."""
    out, fence = [], None
    for line in text.split('\n'):
        m = re.match(r'^ {0,3}(`{3,}|~{3,})', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append('')
            continue
        if m:
            fence = m.group(1)
            out.append('')
            continue
        out.append(re.sub(r'(`+)(?:(?!\1).)+?\1', '', line))
    return out

def slug(heading):
    """GitHub's anchor for a heading's text."""
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading).strip().lower()  # a link: its text
    t = ''.join(c for c in t if c in ' -_' or unicodedata.category(c)[0] in 'LNM')
    return t.replace(' ', '-')

anchors_cache = {}

def anchors(path):
    if path not in anchors_cache:
        text = open(path, encoding='utf-8').read()
        seen, names = {}, set()
        fence = None
        for line in text.split('\n'):
            m = re.match(r'^ {0,3}(`{3,}|~{3,})', line)
            if fence:
                if m and m.group(1)[0] == fence[0]:
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            h = re.match(r'^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$', line)
            if h:
                s = slug(h.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                names.add(s if n == 0 else '%s-%d' % (s, n))
        names.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', text))
        anchors_cache[path] = names
    return anchors_cache[path]

bad = 0
readme_max = int(os.environ['README_MAX'])
with open('README.md', encoding='utf-8') as f:
    n = sum(1 for _ in f)
if n > readme_max:
    print('check-docs: README.md has %d lines, more than %d: move detail to docs/'
          % (n, readme_max))
    bad += 1

link = re.compile(r'\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
refdef = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)')
for src in sys.argv[1:]:
    lines = strip_code(open(src, encoding='utf-8').read())
    for lineno, line in enumerate(lines, 1):
        targets = link.findall(line)
        m = refdef.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I) or target.startswith('//'):
                continue        # a URL, mailto:, ...: not ours to check
            path, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(src), path)) if path else src
            where = '%s:%d: (%s)' % (src, lineno, target)
            if not os.path.exists(dest):
                print('check-docs: %s: no file %s' % (where, dest))
                bad += 1
            elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                print('check-docs: %s: no heading #%s in %s' % (where, anchor, dest))
                bad += 1
if bad:
    sys.exit(1)
print('check-docs: README.md %d lines (at most %d), links in %d files resolve'
      % (n, readme_max, len(sys.argv) - 1))
EOF
if python3 bench/targets.py --check docs/bench.md | sed 's/^targets:/check-docs:/'; then
	echo 'check-docs: the targets table in docs/bench.md matches bench/targets.py'
else
	fail=1
fi
exit "$fail"
