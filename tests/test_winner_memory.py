"""The winner map's memory estimate against the memory it takes (a subprocess's peak resident set)."""

import json
import subprocess
import sys

import pytest

from bandjax.winmap import WINNER_BYTES_PER_POINT

# The peak is the kernel's high-water mark of the resident set, reset after the warm-up (writing 5
# to /proc/self/clear_refs): what the map itself adds over what the process held before it.
SCRIPT = """
import json
import numpy as np
import bandjax

def kB(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

sc = bandjax.reference()
bandjax.winner(sc, bandwidth=np.logspace(-1, 3, 200), budget=np.linspace(1, 200, 50))  # compiled
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = kB("VmRSS")
m = bandjax.winner(sc, bandwidth=np.logspace(-1, 3, 20_000), budget=np.linspace(1, 200, 500))
print(json.dumps({"points": int(m.winner.size), "grown_B": (kB("VmHWM") - base) * 1024}))
"""


@pytest.mark.slow
def test_estimate_is_within_a_quarter_of_the_measured_peak():
    """1e7 points (20,000 bandwidths x 500 budgets), compiled first at a small size so that only
    the map's own memory grows: the refusal's estimate is within 25% of the growth."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["points"] == 10_000_000
    estimate = got["points"] * WINNER_BYTES_PER_POINT
    assert abs(estimate - got["grown_B"]) <= 0.25 * got["grown_B"], (estimate, got)
