"""The Python half of `benches/sdk.rs`: times `Locara.run` of text.chunk from Python.

Usage: bench.py HOME WARMUP SAMPLES TEXT MAX_CHARS; prints the per-call times in nanoseconds as
a JSON list. It imports whichever `locara` is installed (`cargo xtask sdk bench` installs the
release wheel first).
"""

import json
import sys
import time

from locara import Locara

home, warmup, samples, text, max_chars = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
loc = Locara(home)
arguments = {"text": text, "max_chars": max_chars}
for _ in range(warmup):
    assert loc.run("text.chunk", arguments)["count"] > 1
times = []
for _ in range(samples):
    started = time.perf_counter_ns()
    loc.run("text.chunk", arguments)
    times.append(time.perf_counter_ns() - started)
print(json.dumps(times))
