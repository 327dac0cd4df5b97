"""The dense sweep written again in vectorised numpy: the baseline bandjax's jit is measured against.

These are the closed forms of docs/model.md sections 4, 5, 6 and 8 written the way a numpy user would:
scenario numbers as floats, the variant axis last, broadcasting over a (bandwidth, budget) grid.
Writing them a second time is the point of a baseline; ``tests/test_benchmarks.py`` checks that
they agree with bandjax to 1e-12 relative, so the comparison is between equal work.
"""

from __future__ import annotations

import numpy as np

from bandjax import variants as _v

QUANTITIES = ("step_s", "time_to_target_s", "energy_to_target_J")


def scenario_numbers(sc) -> dict:
    """The scenario's numeric fields as Python floats (the fixed times as a per-variant list)."""
    from bandjax.scenario import FIELDS

    out = {k: float(getattr(sc, k)) for k in FIELDS}
    out["gpu_compute_s"] = float(sc.gpu_compute_s)  # c = 6 P T / R, derived (docs/model.md s13)
    out["fixed_s"] = [float(sc.fixed_s[v]) for v in _v.IDS]
    return out


def steps(sc, basis: str = "hypothesis") -> np.ndarray:
    """Steps to target per variant (a lookup in the measured table, not a formula)."""
    return np.array([sc.steps.lookup(v, float(sc.enob), basis) for v in _v.IDS])


def sweep(sc, bandwidth_GBps, budget_GFLOPs, basis: str = "hypothesis") -> dict:
    """Step time, time to target and energy to target on a (bandwidth, budget, variant) grid.

    Args:
      sc: a :class:`bandjax.Scenario` (scalar fields).
      bandwidth_GBps: WAN bandwidths, GB/s, shape (nb,).
      budget_GFLOPs: module compute budgets, GFLOP/s, shape (nf,) (inf = free).
      basis: steps basis of E'.

    Returns:
      dict of arrays of shape (nb, nf, 6) (variants in :data:`bandjax.variants.IDS` order): step_s
      (s), time_to_target_s (s) and energy_to_target_J (J), NaN where the steps are not finite.
    """
    f = scenario_numbers(sc)
    B = np.asarray(bandwidth_GBps, dtype=float)[:, None, None] * 1e9  # (nb, 1, 1) B/s
    F = np.asarray(budget_GFLOPs, dtype=float)[None, :, None] * 1e9  # (1, nf, 1) FLOP/s
    P, n = f["params"], f["workers_per_dc"]
    N = 2 * n
    G = f["dense_bytes_per_param"] * P
    K = f["topk_fraction"] * P * f["topk_bytes_per_value"]
    b_gpu = f["band_fraction"] * P * f["gpu_band_bits"] / 8
    b = f["band_fraction"] * P * f["enob"] / 8
    ring = 2 * (n - 1) / n
    # Bytes per worker on its port and module port, and on one direction of the WAN, by variant:
    # adamw, topk, band_gpu, band_gpu_allreduce, band_pluggable, band_switch.
    port_B = np.array([ring * G, (N - 1) * K, (N - 1) * b_gpu, ring * b_gpu, 0.0, G])
    qsfp_B = np.array([0.0, 0.0, 0.0, 0.0, (N - 1) * b, 2 * b])
    wan_B = np.array([G, N / 2 * K, N / 2 * b_gpu, b_gpu, N / 2 * b, b])
    has_module = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    module_s = np.maximum(np.maximum(G / f["qsfp_port_Bps"], P / f["optics_Sps"]),
                          np.maximum(f["transform_flops_per_param"] * P / F, G / f["fpga_Bps"]))
    H = f["sync_every_H"]
    comm_s = (has_module * module_s + qsfp_B / f["qsfp_port_Bps"] + port_B / f["worker_port_Bps"]
              + wan_B / B + np.array(f["fixed_s"]))
    step_s = f["gpu_compute_s"] + comm_s / H

    flops = f["flops_per_param_token"] * P * f["tokens_per_worker"]
    compute_J = N * (f["gpu_static_W"] * step_s + f["gpu_J_per_FLOP"] * flops)
    network_J = (8 * N * (port_B + qsfp_B) * f["link_J_per_bit"]
                 + 8 * 2 * wan_B * f["wan_J_per_bit"]) / H
    modules_J = has_module * N * f["module_W"] * step_s
    energy_J = compute_J + network_J + modules_J

    s = steps(sc, basis)
    ok = np.isfinite(s)
    return {
        "step_s": step_s,
        "time_to_target_s": np.where(ok, s * step_s, np.nan),
        "energy_to_target_J": np.where(ok, s * energy_J, np.nan),
    }
