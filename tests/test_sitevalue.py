"""What each site adds (bandjax.site_value) and what each site waits for (site_idle), docs/model.md
section 16, on scenarios without sites: K equal DCs, each with the scenario's c and n."""

from __future__ import annotations

import numpy as np
import pytest

import bandjax as bj
from bandjax.sitevalue import site_idle, sites_of, without_site
from bandjax.step import inner_compute_s, step_s


@pytest.fixture(scope="module")
def three():
    sc = bj.reference().replace(dcs=3.0, workers_per_dc=8.0, straggler="lognormal", straggler_s=0.1)
    return sc, bj.site_value(sc)


def _by_hand(sc):
    """Throughput N T / step and CU c / step of every variant, from the closed forms."""
    step = np.asarray(step_s(sc))
    N = float(sc.dcs) * float(sc.workers_per_dc)
    return N * float(sc.tokens_per_worker) / step, float(sc.gpu_compute_s) / step


def test_equal_sites_by_hand(three):
    sc, ds = three
    assert list(ds.site.values) == ["dc0", "dc1", "dc2"]
    tp, cu = _by_hand(sc)
    tp2, cu2 = _by_hand(sc.replace(dcs=2.0))
    np.testing.assert_allclose(ds.throughput_tokens_per_s.values, tp, rtol=1e-12)
    np.testing.assert_allclose(ds.compute_utilisation.values, cu, rtol=1e-12)
    for site in ds.site.values:  # every site is the same site: each adds the same
        np.testing.assert_allclose(ds.throughput_without_tokens_per_s.sel(site=site).values, tp2, rtol=1e-12)
        np.testing.assert_allclose(ds.throughput_added_tokens_per_s.sel(site=site).values, tp - tp2,
                                   rtol=1e-9)
        np.testing.assert_allclose(ds.compute_utilisation_added.sel(site=site).values, cu - cu2,
                                   rtol=1e-9, atol=1e-15)
    assert ds.throughput_tokens_per_s.attrs["units"] == "tokens/s"
    assert ds.attrs["equal_sites"] == 1
    np.testing.assert_array_equal(ds.workers.values, [8.0, 8.0, 8.0])
    np.testing.assert_allclose(ds.compute_s.values, float(sc.gpu_compute_s), rtol=0)


def test_a_site_of_a_links_table_leaves_its_row_and_column():
    B = np.array([[0.0, 10.0, 20.0], [10.0, 0.0, 30.0], [20.0, 30.0, 0.0]]) * 1e9
    sc = bj.reference().with_links(B, names=["eu", "us", "asia"])
    assert sites_of(sc).names == ("eu", "us", "asia")
    rest = without_site(sc, "eu")
    assert rest.links.names == ("us", "asia") and float(rest.wan_Bps) == 30e9
    ds = bj.site_value(sc, variant="adamw")
    # AdamW's ring is paced by its slowest link: leaving out eu (its 10 GB/s links) speeds it up
    assert float(ds.throughput_added_tokens_per_s.sel(site="eu", variant="adamw")) < 0
    tp, _ = _by_hand(rest)
    assert float(ds.throughput_without_tokens_per_s.sel(site="eu", variant="adamw")) == pytest.approx(
        tp[list(rest.ids).index("adamw")], rel=1e-12)


def test_two_dcs_have_no_site_to_spare():
    with pytest.raises(ValueError, match="cross-DC job needs 2"):
        bj.site_value(bj.reference())
    with pytest.raises(ValueError, match="not a site"):
        without_site(bj.reference().replace(dcs=3.0), "paris")
    with pytest.raises(ValueError, match="not in the scenario's registry"):
        bj.site_value(bj.reference().replace(dcs=3.0), variant="nope")


def test_idle_shares_of_equal_sites(three):
    sc, _ = three
    idle = site_idle(sc)
    step = np.asarray(step_s(sc))
    c = float(sc.gpu_compute_s)
    wait = (np.asarray(inner_compute_s(sc)).reshape(-1) - c) / step  # c' - c: the slowest worker
    for site in idle.site.values:
        np.testing.assert_allclose(idle.waiting_for_worker.sel(site=site).values, wait, rtol=1e-9)
        np.testing.assert_array_equal(idle.waiting_for_site.sel(site=site).values, 0.0)
    assert np.all(wait > 0)
