#!/usr/bin/env python3
"""Relative links in README.md and docs/*.md point at files that exist, and a #fragment at a
heading of the target (GitHub's anchor rule: lower case, punctuation dropped, spaces to '-').
Links inside fenced code blocks and absolute URLs are not checked. One TAP line per file.

Usage: python3 tests/layout/doc_links.py [TOP]
"""
import os
import re
import sys

TOP = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '../..'))
FENCE = re.compile(r'^```.*?^```', re.S | re.M)
LINK = re.compile(r'\]\(([^)\s]+)\)')


def anchors(path):
    out = set()
    with open(path, encoding='utf-8') as f:
        text = FENCE.sub('', f.read())
    for m in re.finditer(r'^#+\s+(.*)$', text, re.M):
        out.add(re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-'))
    return out


files = ['README.md'] + sorted(os.path.join('docs', f) for f in os.listdir(os.path.join(TOP, 'docs'))
                               if f.endswith('.md'))
failed = 0
for n, rel in enumerate(files, 1):
    path = os.path.join(TOP, rel)
    with open(path, encoding='utf-8') as f:
        text = FENCE.sub('', f.read())
    bad = []
    for m in LINK.finditer(text):
        url = m.group(1)
        if re.match(r'[a-z][a-z0-9+.-]*:', url):
            continue
        target, _, frag = url.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(target):
            bad.append('no such file: ' + url)
        elif frag and target.endswith('.md') and frag not in anchors(target):
            bad.append('no such heading: ' + url)
    failed += bool(bad)
    print(('not ok' if bad else 'ok') + ' %d - links of %s' % (n, rel))
    for b in bad:
        print('#   ' + b)
print('1..%d' % len(files))
sys.exit(1 if failed else 0)
