"""Sweeps on a real dask LocalCluster give the same numbers as in one process."""

import numpy as np
import pytest

import bandjax
import events

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as c:
        yield c


def test_sweep_on_local_cluster_by_address_equals_inline(cluster):
    grid = dict(variant=["adamw", "band_switch"], load=[0.0, 0.5], seed=[0, 1], steps=30,
                progress=False)
    on_cluster = events.sweep(scheduler=cluster.scheduler_address, **grid)
    inline = events.sweep(scheduler="inline", **grid)
    assert on_cluster.step_s.dims == ("load", "seed", "variant")
    for name in events.QUANTITIES:
        np.testing.assert_array_equal(on_cluster[name].values, inline[name].values)
    closed = np.asarray(bandjax.step_s(bandjax.reference()))[[0, 5]]
    np.testing.assert_allclose(on_cluster.step_s.sel(load=0.0).values,
                               np.broadcast_to(closed, (2, 2)), rtol=1e-9)
    assert (on_cluster.step_s.sel(load=0.5) > on_cluster.step_s.sel(load=0.0)).all()


def test_sweep_with_client(cluster):
    with distributed.Client(cluster) as client:
        ds = events.sweep(variant="topk", load=0.5, seed=[0, 1, 2], steps=20, scheduler=client,
                          progress=False)
    assert ds.step_s.dims == ("seed",)
    assert len(set(ds.step_s.values.tolist())) == 3  # seeds differ
