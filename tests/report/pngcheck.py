#!/usr/bin/env python3
"""tests/report/pngcheck.py: is a screenshot a real picture holding given colours? Decodes the PNG
(8-bit RGB or RGBA, not interlaced: what Chromium writes) with zlib alone and checks its size,
that it is not one flat colour, and that each RRGGBB colour given covers at least 20 pixels.
Usage: pngcheck.py FILE.png RRGGBB... ; prints "WxH, N colours, COLOUR:PIXELS..." ; exit 0 or 1."""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    path, want = sys.argv[1], [c.lower() for c in sys.argv[2:]]
    w, h, bpp, rows = decode(path)
    counts = {}
    for r in rows:
        for x in range(0, len(r), bpp):
            k = r[x:x + 3]
            counts[k] = counts.get(k, 0) + 1
    found = {c: counts.get(bytes.fromhex(c), 0) for c in want}
    print("%dx%d, %d colours, %s" % (w, h, len(counts), " ".join("#%s:%d" % kv for kv in found.items())))
    ok = w >= 800 and h >= 600 and len(counts) > 50 and all(n >= 20 for n in found.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
