# One-off: extracts the deterministic parts of valkey-bloom-vectors/*.txt into
# the compact line format read by core/src/valkey_bloom/vectors.rs.
# Usage: python3 extract.py <valkey-bloom-vectors dir> <this dir>
import re, sys, os, glob
src, dst = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(src, '*.txt'))):
    name = os.path.basename(path)
    text = open(path).read()
    lines = text.split('\n')
    out = [f'# Extracted from valkey-bloom 1.0.1 test vector {name} (COMPAT-VALKEY-BLOOM.md §6).']
    sec = lambda title: text.split('## ' + title, 1)[1].split('\n## ', 1)[0]
    # Creation parameters: the propagated BF.INSERT form (§2.8).
    prop = sec('Propagated').split('\n')[1].strip()
    m = re.match(r'BF\.INSERT \S+ CAPACITY (\d+) ERROR (\S+) TIGHTENING (\S+) SEED (<32 raw bytes, hex ([0-9a-f]{64})>|(\S{32})) (EXPANSION (\d+)|NONSCALING)', prop)
    seed = m.group(5) or m.group(6).encode().hex()
    expansion = m.group(8) or '0'
    rdb = [l.split() for l in sec('The RDB value').split('\n')[1:] if re.match(r'\s+[uds]\s', l)]
    seed_random = rdb[4][1]
    out.append(f'create {m.group(1)} {m.group(2)} {m.group(3)} {expansion} {seed} {seed_random}')
    # Client commands and replies.
    cmds = sec('Commands and their replies').split('\n')
    for i, l in enumerate(cmds):
        if not l.startswith('> BF.'):
            continue
        words = l[2:].split()
        reply = cmds[i + 1].strip()
        if words[0] in ('BF.ADD', 'BF.MADD'):
            items = words[2:]
        elif words[0] == 'BF.INSERT':
            items = words[words.index('ITEMS') + 1:]
        else:
            continue
        elems = re.findall(r'(:[01]|-[^\\]*)\\r\\n', reply)
        out.append('add ' + ' '.join(items))
        answers = [e[1] for e in elems if e.startswith(':')]
        out.append('answers ' + ' '.join(answers))
        errs = [e[1:] for e in elems if e.startswith('-')]
        if errs:
            out.append('error ' + errs[0])
    # RDB fields; blobs in full, or their sha256, length and first bytes.
    body = sec('The RDB value').split('\n')[1:]
    j = 0
    while j < len(body):
        l = body[j]
        f = l.split()
        j += 1
        if not re.match(r'\s+[uds]\s', l):
            continue
        if f[0] != 's':
            out.append(f'rdb {f[0]} {f[1]}')
            continue
        n, sha = f[1], f[4].rstrip(';')
        hexs = []
        while j < len(body) and re.match(r'\s+(first \d+ bytes: )?[0-9a-f]+(\.\.\.)?$', body[j]):
            hexs.append(body[j].split()[-1].rstrip('.'))
            j += 1
        blob = ''.join(hexs)
        if len(blob) == 2 * int(n):
            out.append(f'rdb s {blob}')
        else:
            out.append(f'rdb s-sha256 {n} {sha} {blob}')
    load = sec('AOF rewrite')
    lm = re.search(r'blob length (\d+) bytes, sha256 ([0-9a-f]+)', load)
    hexs = ''.join(l.strip() for l in load.split('\n') if re.fullmatch(r'\s+[0-9a-f]+', l))
    if len(hexs) == 2 * int(lm.group(1)):
        out.append(f'load {hexs}')
    else:
        out.append(f'load-sha256 {lm.group(1)} {lm.group(2)} {hexs}')
    info = sec('BF.INFO')
    for field in ['CAPACITY', 'SIZE', 'FILTERS', 'ITEMS', 'EXPANSION', 'ERROR', 'TIGHTENING', 'MAXSCALEDCAPACITY']:
        r = re.search(r'BF\.INFO \S+ ' + field + r' -> (.*)', info).group(1)
        v = re.sub(r'\\r\\n', ' ', r).split()
        if v[0].startswith(':'):
            val = v[0][1:]
        elif v[0] == '$-1':
            val = 'null'
        elif v[0].startswith('$'):
            val = v[1]
        else:
            val = 'invalid'
        out.append(f'info {field.lower()} {val}')
    out.append('card ' + re.search(r'## BF.CARD \S+ -> (\d+)', text).group(1))
    for l in sec('BF.EXISTS').split('\n'):
        mm = re.fullmatch(r'  (\S+)\s+([01])', l)
        if mm:
            out.append(f'exists {mm.group(1)} {mm.group(2)}')
    open(os.path.join(dst, name), 'w').write('\n'.join(out) + '\n')
