"""The dense sweep written again as a pure-Python scalar loop: one point at a time, as a page does.

Each cell (one variant at one grid point) is computed from the scenario's numbers with Python
floats and no arrays, the way a web page or a spreadsheet macro evaluates the model one point at a
time. The benchmark times a sample of cells, since a full grid would take hours.
``tests/test_benchmarks.py`` checks it against bandjax to 1e-12 relative.
"""

from __future__ import annotations

import math

from .numpy_baseline import scenario_numbers, steps


def cell(f: dict, steps_to_target: float, bandwidth_GBps: float, budget_GFLOPs: float,
         variant: int) -> tuple[float, float, float]:
    """(step_s, time_to_target_s, energy_to_target_J) of one variant at one grid point.

    ``f`` is :func:`benchmarks.numpy_baseline.scenario_numbers`; ``variant`` indexes
    :data:`bandjax.variants.IDS`. Times and energies to target are NaN where the steps are not finite.
    """
    P, n = f["params"], f["workers_per_dc"]
    N = 2 * n
    G = f["dense_bytes_per_param"] * P
    B = bandwidth_GBps * 1e9
    ring = 2 * (n - 1) / n
    port = qsfp = 0.0
    module = False
    if variant == 0:  # adamw: dense delta, ring all-reduce
        port, wan = ring * G, G
    elif variant == 1:  # topk: all-gather of values + indices
        K = f["topk_fraction"] * P * f["topk_bytes_per_value"]
        port, wan = (N - 1) * K, N / 2 * K
    else:
        bits = f["gpu_band_bits"] if variant in (2, 3) else f["enob"]
        b = f["band_fraction"] * P * bits / 8
        if variant == 2:  # band_gpu: all-gather
            port, wan = (N - 1) * b, N / 2 * b
        elif variant == 3:  # band_gpu_allreduce
            port, wan = ring * b, b
        elif variant == 4:  # band_pluggable: all-gather through the module port
            qsfp, wan, module = (N - 1) * b, N / 2 * b, True
        else:  # band_switch: dense delta to the switch, summed band back
            port, qsfp, wan, module = G, 2 * b, b, True
    comm = qsfp / f["qsfp_port_Bps"] + port / f["worker_port_Bps"] + wan / B + f["fixed_s"][variant]
    if module:
        comm += max(G / f["qsfp_port_Bps"], P / f["optics_Sps"],
                    f["transform_flops_per_param"] * P / (budget_GFLOPs * 1e9), G / f["fpga_Bps"])
    H = f["sync_every_H"]
    step = f["gpu_compute_s"] + comm / H
    flops = f["flops_per_param_token"] * P * f["tokens_per_worker"]
    energy = (N * (f["gpu_static_W"] * step + f["gpu_J_per_FLOP"] * flops)
              + (8 * N * (port + qsfp) * f["link_J_per_bit"] + 8 * 2 * wan * f["wan_J_per_bit"]) / H
              + (N * f["module_W"] * step if module else 0.0))
    if not math.isfinite(steps_to_target):
        return step, math.nan, math.nan
    return step, steps_to_target * step, steps_to_target * energy


def sweep_cells(sc, bandwidth_GBps, budget_GFLOPs, cells, basis: str = "hypothesis") -> list:
    """Evaluate the cells ``[(i_bandwidth, i_budget, i_variant), ...]`` one at a time.

    Returns a list of (step_s, time_to_target_s, energy_to_target_J) tuples, in order.
    """
    f = scenario_numbers(sc)
    s = [float(x) for x in steps(sc, basis)]
    bw = [float(x) for x in bandwidth_GBps]
    bud = [float(x) for x in budget_GFLOPs]
    return [cell(f, s[v], bw[i], bud[j], v) for i, j, v in cells]
