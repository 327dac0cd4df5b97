"""The bandwidth a target needs is the closed form's exact value wherever some bandwidth reaches
the target, inside the range asked or not, with a status saying where it lies (docs/model.md
section 14); with workers that straggle (section 16) it counts the wait, and several targets with
swept axes are each the one-target answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
from bandjax.need import ABOVE_RANGE, BELOW_RANGE, CAPS, NOT_REACHABLE, REACHED, cap_names


@pytest.fixture(scope="module")
def methods():
    return bandjax.reference().with_variants(bandjax.METHODS)


def test_below_the_range_is_the_exact_value(methods):
    # Streaming DiLoCo FP4 at 50% on the reference: W / R below the range's bottom (0.1 GB/s);
    # the closed form by hand from the sweep's own terms: CU(B*) = 0.5 exactly
    ds = bandjax.required_bandwidth(methods, 0.5, variant="streaming_diloco_fp4")
    B = ds.required_bandwidth_GBps.item()
    assert int(ds.status.item()) == BELOW_RANGE and 0 < B < 0.1
    assert B == pytest.approx(0.06953, abs=5e-6)  # the value `bandjax need --methods` prints
    cu = float(bandjax.sweep(methods, bandwidth=B, variant="streaming_diloco_fp4")["compute_utilisation"])
    assert cu == pytest.approx(0.5, rel=1e-12)


def test_above_the_range_is_the_exact_value(methods):
    ds = bandjax.required_bandwidth(methods, 0.5, variant="dp_bf16", range_GBps=(0.1, 100.0))
    B = ds.required_bandwidth_GBps.item()
    assert int(ds.status.item()) == ABOVE_RANGE and B > 100.0 and CAPS[int(ds.cap.item())] == "range"
    cu = float(bandjax.sweep(methods, bandwidth=B, variant="dp_bf16")["compute_utilisation"])
    assert cu == pytest.approx(0.5, rel=1e-12)
    # the same target in a range that holds it: the same value, reached
    wide = bandjax.required_bandwidth(methods, 0.5, variant="dp_bf16", range_GBps=(0.1, 1e4))
    assert int(wide.status.item()) == REACHED and wide.required_bandwidth_GBps.item() == B


def test_not_reachable_has_no_value(methods):
    ds = bandjax.required_bandwidth(methods, 0.9, variant="adamw")
    assert int(ds.status.item()) == NOT_REACHABLE and math.isnan(ds.required_bandwidth_GBps.item())


def test_stragglers_count_in_the_needed_bandwidth(methods):
    # 2 DCs of 64 workers, lognormal tail 0.2: at each answer the sweep's CU is the target, and
    # 90% is capped by the wait for the slowest worker itself (c' > c / 0.9)
    sc = methods.replace(workers_per_dc=64.0, straggler="lognormal")
    ds = bandjax.required_bandwidth(sc, [0.5, 0.9], straggler_s=[0.0, 0.2], variant="diloco")
    for s in (0.0, 0.2):
        for u in (0.5, 0.9):
            at = ds.sel(utilisation=u, straggler_s=s).squeeze()
            if int(at.status) == NOT_REACHABLE:
                assert (s, u) == (0.2, 0.9) and cap_names(at.cap).item() == "stragglers"
                continue
            B = float(at.required_bandwidth_GBps)
            cu = float(bandjax.sweep(sc, bandwidth=B, straggler_s=s, variant="diloco")["compute_utilisation"])
            assert cu == pytest.approx(u, rel=1e-9)


def test_winner_counts_stragglers(methods):
    sc = methods.with_variants(bandjax.METHODS, steps={v.id: 400 for v in bandjax.METHODS}).replace(
        workers_per_dc=64.0, straggler="lognormal")
    grid = dict(bandwidth=[0.5, 5, 50], straggler_s=[0, 0.1, 0.3], H=[1, 10])
    w = bandjax.winner(sc, **grid)
    ds = bandjax.sweep(sc, **grid, quantities=("time_to_target_s",))
    np.testing.assert_array_equal(w["winner"].values,
                                  ds["time_to_target_s"].fillna(np.inf).argmin("variant").values)
    np.testing.assert_allclose(w["time_to_target_s"].values,
                               ds["time_to_target_s"].min("variant").values, rtol=1e-12)


@settings(max_examples=12, deadline=None)
@given(targets=st.lists(st.sampled_from([0.3, 0.5, 0.8, 0.9, 0.95]), min_size=1, max_size=4, unique=True),
       swept=st.sampled_from(["H", "wan_latency_s", "straggler_s", "workers_per_dc"]),
       points=st.integers(1, 3))
def test_several_targets_are_each_the_one_target_answer(targets, swept, points):
    sc = bandjax.reference().with_variants(bandjax.METHODS).replace(straggler="exponential")
    values = {"H": [1.0, 10.0, 100.0], "wan_latency_s": [0.0, 1e-3, 5e-3],
              "straggler_s": [0.0, 0.05, 0.2], "workers_per_dc": [1.0, 4.0, 16.0]}[swept][:points]
    many = bandjax.required_bandwidth(sc, targets, **{swept: values})
    for u in targets:
        one = bandjax.required_bandwidth(sc, u, **{swept: values}).isel(utilisation=0)
        np.testing.assert_array_equal(many.required_bandwidth_GBps.sel(utilisation=u).values,
                                      one.required_bandwidth_GBps.values)
        np.testing.assert_array_equal(many.status.sel(utilisation=u).values, one.status.values)
