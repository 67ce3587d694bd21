#!/usr/bin/env python3
"""Decode a PNG (8-bit RGB or RGBA, no interlace) with the standard library only and print
JSON: its width and height, how many distinct colours it has, and how many pixels have each
colour asked for on the command line (hex, e.g. f4b4b4), exactly or within a tolerance
(`f4b4b4~40`: every channel within 40)."""
import json, struct, sys, zlib

def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR": header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT": idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unsupported PNG %r" % (header,)
    channels = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1: line[i] = (line[i] + a) & 255
            elif kind == 2: line[i] = (line[i] + b) & 255
            elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    return width, height, channels, rows

width, height, channels, rows = decode(sys.argv[1])
counts = {}
for line in rows:
    for x in range(width):
        pixel = tuple(line[x * channels:x * channels + 3])
        counts[pixel] = counts.get(pixel, 0) + 1
wanted = {}
for spec in sys.argv[2:]:
    colour, _, tolerance = spec.partition("~")
    target = tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4))
    limit = int(tolerance or 0)
    wanted[spec] = sum(n for p, n in counts.items() if all(abs(p[i] - target[i]) <= limit for i in range(3)))
print(json.dumps({"width": width, "height": height, "colours": len(counts), "matches": wanted}))
