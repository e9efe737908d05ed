"""kiln bench M.so --roofline --roofline-svg F: the ceilings with their units (the FMA peak,
the bandwidth of L1, L2, L3 and DRAM), one table row per kernel with an intensity column and
shares in (0, MAX_SHARE], and an SVG (well-formed XML) with one circle per kernel with FLOPs.

usage: roofline_check.py KILN MODULE SVG
"""
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

# The ceilings and the kernels are timed at different moments on a shared machine (CI runs the
# suite two tests at a time on 2 cores), and the minimum traffic undercounts what caches give
# back: a share up to 2 is noise there, one far above it a wrong count.
MAX_SHARE = 2.0

kiln, module, svg = sys.argv[1:4]
out = subprocess.run([kiln, "bench", module, "--repeat", "2", "--roofline", "--roofline-svg", svg],
                     check=True, capture_output=True, text=True).stdout
nodes = int(re.search(r"sum of node medians .* over (\d+) nodes", out).group(1))
ceil = re.search(r"ceilings on (\d+) threads? \(measured\): FMA peak ([\d.]+) GFLOPS .*; "
                 r"bandwidth L1 ([\d.]+) GB/s L2 ([\d.]+) GB/s L3 ([\d.]+) GB/s DRAM ([\d.]+) GB/s", out)
assert ceil, out
assert all(float(v) > 0 for v in ceil.groups()[1:]), ceil.group(0)
lines = out.splitlines()
head = next(i for i, l in enumerate(lines) if re.match(r"\s*# +ms +MFLOP +MB +intensity +GFLOPS", l))
cols = lines[head].split()
rows = [l.split() for l in lines[head + 1:head + 1 + nodes]]
assert len(rows) == nodes and all(r[0] == str(i) for i, r in enumerate(rows)), lines[head:head + nodes + 1]
share = cols.index("share")
for r in rows:
    s = float(r[share])
    assert 0 < s <= MAX_SHARE, f"share {s} outside (0, {MAX_SHARE}]: {' '.join(r)}"
drawn = sum(1 for r in rows if not r[cols.index("bound")].startswith("data"))
root = ET.parse(svg).getroot()
assert root.tag.endswith("svg"), root.tag
circles = root.findall(".//{http://www.w3.org/2000/svg}circle")
assert len(circles) == drawn, f"{len(circles)} circles for {drawn} kernels with FLOPs"
print(f"roofline ok: {nodes} kernels, {len(circles)} drawn, threads {ceil.group(1)}")
