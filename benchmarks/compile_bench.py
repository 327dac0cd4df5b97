"""First-call (compile) time of a break-even over the budget and of its elasticities.

Each figure is the wall time of the first call in a fresh Python process, the median of several
processes: nothing is cached between them. Importing bandjax's modules and JAX and starting JAX's
CPU backend come before the clock starts (``import_s``, reported beside: a cost of the process, not
of the call), so the figure is the call's tracing, compiling and running. The second call's time is
reported beside it, to show the first is almost all tracing and compiling.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALLS = {
    "break_even_budget_s": 'bandjax.break_even(sc, "E\'", "adamw", over="budget")',
    "elasticities_s": 'bandjax.elasticities(sc, "E\'", "adamw", over="budget")',
}
CHILD = """
import json, time
t0 = time.perf_counter()
import bandjax, bandjax.breakeven, bandjax.sensitivity, jax.numpy
jax.numpy.zeros(1).block_until_ready()
import_s = time.perf_counter() - t0
sc = bandjax.reference()
t0 = time.perf_counter(); c0 = time.process_time()
{call}
first_s, first_cpu_s = time.perf_counter() - t0, time.process_time() - c0
t0 = time.perf_counter()
{call}
print(json.dumps({{"first_s": first_s, "first_cpu_s": first_cpu_s,
                  "second_s": time.perf_counter() - t0, "import_s": import_s}}))
"""


def first_call(call: str) -> dict:
    """Times of ``call`` (a statement using ``bandjax`` and ``sc``) in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # a first call compiles: no cache from disk,
    env["BANDJAX_NO_CACHE"] = "1"  # neither JAX's nor bandjax's own (bandjax._jax)
    proc = subprocess.run([sys.executable, "-c", CHILD.format(call=call)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict:
    """Median of 3 fresh processes per figure (1 with ``quick``), s."""
    repeats = 1 if quick else 3
    out = {}
    for key, call in CALLS.items():
        runs = [first_call(call) for _ in range(repeats)]
        out[key] = {"median": statistics.median(r["first_s"] for r in runs),
                    "min": min(r["first_s"] for r in runs), "max": max(r["first_s"] for r in runs),
                    "runs": repeats}
        out[key.replace("_s", "_cpu_s")] = statistics.median(r["first_cpu_s"] for r in runs)
        out[key.replace("_s", "_second_call_s")] = statistics.median(r["second_s"] for r in runs)
        out[key.replace("_s", "_import_s")] = statistics.median(r["import_s"] for r in runs)
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
