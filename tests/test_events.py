"""The shared-WAN event engine: load 0 equals the closed forms, runs are reproducible, bad input
is refused, a busy WAN hurts the variants that send most across it."""

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
import events
from bandjax import variants
from bandjax.step import step_s, traffic_B
from events.engine import Part, Plan, SimulationBoundError, simulate

EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"


def closed_form_s(sc, variant):
    return float(np.asarray(step_s(sc))[variants.IDS.index(variant)])


def test_events_source_never_imports_jax_or_the_closed_forms():
    forbidden = ("jax", "jaxlib", "bandjax.step", "bandjax.metrics", "bandjax.grid",
                 "bandjax.queueing", "bandjax.breakeven")
    # data and labels only: the scenario, the traffic description, the sweep arguments, the bounds
    allowed_bandjax = {"bandjax.scenario", "bandjax.variants", "bandjax.phases", "bandjax.labels",
                       "bandjax.links", "bandjax.sites", "bandjax._io", "bandjax._cache",
                       "bandjax._limits", "bandjax.sweepargs", "bandjax.units"}
    files = sorted(EVENTS_DIR.glob("*.py"))
    assert len(files) >= 4
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                assert not any(name == f or name.startswith(f + ".") for f in forbidden), \
                    f"{path.name} imports {name}"
                if name.startswith("bandjax") and name != "bandjax":
                    assert name in allowed_bandjax or name.rsplit(".", 1)[0] in allowed_bandjax \
                        or name in {"bandjax.variants", "bandjax.scenario"}, f"{path.name}: {name}"
                assert name != "bandjax" or isinstance(node, ast.ImportFrom), path.name


def test_reference_load0_every_variant_matches_closed_form():
    sc = bandjax.reference()
    for vid in variants.IDS:
        run = events.run(sc, vid, 0.0, steps=3)
        cf = closed_form_s(sc, vid)
        np.testing.assert_allclose(run.step_s, cf, rtol=1e-9, atol=0)
        assert run.utilisation[0] == pytest.approx(
            float(traffic_B(sc).wan_B[variants.IDS.index(vid)]) / sc.wan_Bps / cf, rel=1e-9)
    # docs/model.md section 12: AdamW step 4.075 ms, E' at [free] 3.726 ms (printed precision)
    assert events.run(sc, "adamw", 0.0, steps=1).mean_s == pytest.approx(4.075e-3, abs=0.5e-6)
    assert events.run(sc, "band_switch", 0.0, steps=1).mean_s == pytest.approx(3.726e-3, abs=0.5e-6)


@settings(max_examples=60, deadline=None)
@given(variant=st.sampled_from(variants.IDS),
       budget=st.one_of(st.sampled_from(["free", "low", "high"]), st.floats(1.0, 1000.0)),
       gbps=st.floats(0.5, 1000.0),
       params=st.floats(1e6, 3e7),
       H=st.sampled_from([1, 2, 4]),
       enob=st.sampled_from([6.0, 8.0]),
       dcs=st.sampled_from([2, 3, 4, 8]),
       topology=st.sampled_from(variants.TOPOLOGIES),
       latency_s=st.one_of(st.just(0.0), st.floats(1e-6, 50e-3)),
       overlap=st.one_of(st.just(0.0), st.floats(0.0, 1.0)))
def test_load0_equals_closed_form_property(variant, budget, gbps, params, H, enob, dcs, topology,
                                           latency_s, overlap):
    # docs/model.md section 13: at load 0 the engine gives the closed form's step exactly (to rounding)
    sc = bandjax.reference().at_model_size(params)
    flops = {"free": math.inf, "low": float(sc.budget_low_FLOPs),
             "high": float(sc.budget_high_FLOPs)}.get(budget, None)
    flops = flops if flops is not None else budget * 1e9
    sc = sc.replace(wan_Bps=gbps * 1e9, budget_FLOPs=flops, sync_every_H=float(H), enob=enob,
                    dcs=float(dcs), topology=float(variants.TOPOLOGIES.index(topology)),
                    wan_latency_s=latency_s, overlap_fraction=overlap)
    run = events.run(sc, variant, 0.0, steps=2 * H, trace_steps=0)
    assert run.mean_s == pytest.approx(closed_form_s(sc, variant), rel=1e-12, abs=0)
    links = dcs * (dcs - 1) if topology == "mesh" else dcs
    assert len(run.utilisation) == len(run.queue_mean) == len(run.queue_max) == links


def test_overlap_hides_communication_up_to_f_c():
    # f = 1 and a sync shorter than c: every step is c (docs/model.md section 13, overlap)
    plan = Plan("x", compute_s=4e-3, sync_phases=((Part("d", 1e-3),),), wan_B=2e6, wan_Bps=1e9,
                message_B=1e6, background_B=1e6, overlap=1.0, links=6, latency_s=0.5e-3)
    run = simulate(plan, 0.0, steps=3, trace_steps=0)
    np.testing.assert_allclose(run.step_s, 4e-3, rtol=1e-12)
    # f = 0.25: the sync (1 + 2 + 0.5 ms) starts 3 ms into the step and ends at 6.5 ms
    plan = Plan("x", compute_s=4e-3, sync_phases=((Part("d", 1e-3),),), wan_B=2e6, wan_Bps=1e9,
                message_B=1e6, background_B=1e6, overlap=0.25, links=6, latency_s=0.5e-3)
    run = simulate(plan, 0.0, steps=3, trace_steps=0)
    np.testing.assert_allclose(run.step_s, 6.5e-3, rtol=1e-12)
    assert run.messages == 3 * 2 * 6


K2_MAIN = Path(__file__).with_name("test_events_k2_main.json")


def test_two_dcs_reproduce_the_engine_before_k_dcs():
    # runs recorded with the two-direction engine (commit in the file) at the reference scenario
    ref = json.loads(K2_MAIN.read_text())
    sc = bandjax.reference()
    for r in ref["runs"]:
        run = events.run(sc, r["variant"], r["load"], seed=r["seed"], steps=r["steps"])
        s = run.summary()
        for key in ("mean_s", "p50_s", "p95_s", "p99_s", "sim_s"):
            assert s[key] == pytest.approx(r[key], rel=1e-12, abs=0), (r["variant"], key)
        np.testing.assert_allclose(run.step_s[:len(r["step_s"])], r["step_s"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(s["utilisation"], r["utilisation"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(s["queue_mean"], r["queue_mean"], rtol=1e-12, atol=0)
        assert s["queue_max"] == r["queue_max"] and s["messages"] == r["messages"]
    t, tr = events.run(sc, "adamw", 0.9, seed=0, steps=5).trace, ref["trace"]
    for key in ("t_ms", "sync_bytes_left", "step_end_ms"):
        np.testing.assert_allclose(t[key], tr[key], rtol=1e-12, atol=0)
    assert t["queue_out"] == tr["queue_out"] and t["queue_in"] == tr["queue_in"]


def test_import_events_leaves_no_jax():
    code = ("import sys, events, events.engine, events.plan, events.runner; "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'jaxlib'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(EVENTS_DIR.parent)})
    assert out.stdout.strip() == "[]", out.stdout


def test_engine_runs_with_jax_blocked():
    # a meta-path finder refuses jax: building, running and sweeping must not need it
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith(("jax.", "jaxlib")):
            raise ImportError(f"{name} is blocked")
sys.meta_path.insert(0, Block())
import bandjax.scenario, events
sc = bandjax.scenario.reference().replace(dcs=4.0, topology=1.0, wan_latency_s=1e-3)
run = events.run(sc, "topk", 0.5, seed=1, steps=4)
ds = events.sweep(sc, variant="adamw", dcs=[2, 3], load=0.0, steps=2, scheduler="inline",
                  progress=False)
print(len(run.utilisation), run.mean_s > 0, ds.step_s.shape)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(EVENTS_DIR.parent)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["12", "True", "(2,)"]


def test_load0_llama3_8b_matches_closed_form():
    sc = bandjax.reference().at_model_size(bandjax.PRESETS["llama3-8b"])
    run = events.run(sc, "adamw", 0.0, steps=1, trace_steps=0)  # 32,120 WAN messages a direction
    assert run.mean_s == pytest.approx(closed_form_s(sc, "adamw"), rel=1e-9, abs=0)


def test_wan_bytes_go_as_messages_last_one_partial():
    plan = Plan("x", compute_s=1e-3, sync_phases=((Part("d", 2e-4),),), wan_B=2.5e6,
                wan_Bps=1e9, message_B=1e6, background_B=1e6)
    run = simulate(plan, 0.0, steps=2, trace_steps=1, trace_points=1001)
    np.testing.assert_allclose(run.step_s, 1e-3 + 2e-4 + 2.5e-3, rtol=1e-12)
    left = np.array(run.trace["sync_bytes_left"])
    t = np.array(run.trace["t_ms"])
    # 5 MB in flight once the sync starts (both directions), 3 MB after the first message (1 ms)
    # and 1 MB after the second (2 ms); none when the step ends (2.5 ms)
    assert left[0] == 0 and left.max() == 5e6
    assert left[np.searchsorted(t, 1.2 + 1.5)] == 3e6
    assert left[np.searchsorted(t, 1.2 + 2.25)] == 1e6
    assert left[-1] == 0
    assert max(run.trace["queue_out"]) == 1 and max(run.trace["queue_in"]) == 1
    assert run.messages == 12 and run.queue_max == (1, 1)  # 2 steps x 3 messages x 2 directions


def test_same_seed_same_run_other_seed_other_run():
    sc = bandjax.reference()
    a = events.run(sc, "topk", 0.5, seed=3, steps=40)
    b = events.run(sc, "topk", 0.5, seed=3, steps=40)
    c = events.run(sc, "topk", 0.5, seed=4, steps=40)
    np.testing.assert_array_equal(a.step_s, b.step_s)
    assert a.trace == b.trace
    assert not np.array_equal(a.step_s, c.step_s)


def test_utilisation_is_background_plus_own_share():
    sc = bandjax.reference()
    run = events.run(sc, "adamw", 0.5, seed=0, steps=300, trace_steps=0)
    own = float(traffic_B(sc).wan_B[0]) / float(sc.wan_Bps) / run.mean_s
    # Poisson background over ~2 s of simulated time: its share is 0.5 within a few percent
    for u in run.utilisation:
        assert u == pytest.approx(0.5 + own, abs=0.03)
    assert all(q > 0.5 for q in run.queue_mean)
    assert run.percentile_s(99) >= run.percentile_s(95) >= run.percentile_s(50) > 0


def test_busy_wan_hurts_most_the_variants_that_send_most():
    sc = bandjax.reference()
    wan_B = dict(zip(variants.IDS, np.asarray(traffic_B(sc).wan_B).tolist()))
    base = {v: closed_form_s(sc, v) for v in variants.IDS}
    added = {v: np.mean([events.run(sc, v, 0.9, seed=s, steps=200, trace_steps=0).mean_s
                         for s in (0, 1)]) - base[v] for v in variants.IDS}
    for a in variants.IDS:
        for b in variants.IDS:
            if wan_B[a] > 1.5 * wan_B[b]:
                assert added[a] > added[b], (a, b, added)
    growth = {v: (added[v] + base[v]) / base[v] for v in variants.IDS}
    assert max(growth, key=growth.get) == "adamw"
    assert min(growth.values()) > 1.2


@pytest.mark.parametrize("load", [-0.1, 1.0, 1.5, float("nan"), "0.5", True])
def test_bad_load(load):
    with pytest.raises(ValueError, match=r"load = .*\[0, 1\)"):
        events.run(bandjax.reference(), "adamw", load, steps=1)


@pytest.mark.parametrize("steps", [0, -3, 2.5])
def test_bad_steps(steps):
    with pytest.raises(ValueError, match=r"steps = .*whole number >= 1"):
        events.run(bandjax.reference(), "adamw", 0.0, steps=steps)


@pytest.mark.parametrize("bad", [0.0, -12.5, math.inf])
def test_bad_bandwidth(bad):
    # the scenario refuses the value where it is set (one check for a file, replace and a sweep)
    with pytest.raises(ValueError, match=r"\[links\] wan = .*must be > 0 GB/s"):
        events.build(bandjax.reference().replace(wan_Bps=bad * 1e9), "adamw")
    with pytest.raises(ValueError, match=r"bandwidth = .*> 0 GB/s"):
        events.sweep(bandwidth=[12.5, bad], scheduler="inline", progress=False)


def test_bad_variant_H_seed_and_scheduler():
    with pytest.raises(ValueError, match="variant = 'sgd' is not known; allowed: adamw"):
        events.build(bandjax.reference(), "sgd")
    with pytest.raises(ValueError, match=r"sync_every_H = 1.5.*whole number"):
        events.build(bandjax.reference().replace(sync_every_H=1.5), "adamw")
    with pytest.raises(ValueError, match=r"seed = -1"):
        events.run(bandjax.reference(), "adamw", 0.0, seed=-1, steps=1)
    with pytest.raises(ValueError, match=r"scheduler = 42"):
        events.sweep(load=0.0, steps=1, scheduler=42, progress=False)


def test_run_past_its_bound_stops_and_says_so():
    # AdamW's step is 4.07 ms (docs/model.md section 12): the third step ends after 10 ms
    with pytest.raises(SimulationBoundError, match=r"max_sim_s = 0.01 s .* after 2 of 10 steps"):
        events.run(bandjax.reference(), "adamw", 0.0, steps=10, max_sim_s=0.01)


def test_a_run_whose_compute_alone_exceeds_the_bound_is_refused_before_it_starts():
    # 100 steps compute for 100 x 0.4918 ms = 49 ms at least, over a bound of 10 ms
    with pytest.raises(ValueError, match=r"max_sim_s = 0.01 s: a run of 100 steps needs at least "
                                         r"0.0492 s"):
        events.run(bandjax.reference(), "adamw", 0.0, steps=100, max_sim_s=0.01)


def test_sweep_labels_align_with_bandjax_sweep_inline():
    import xarray as xr

    ds = events.sweep(bandwidth=[2.0, 100.0], budget=["free", "low"], load=0.0, seed=0, steps=2,
                      scheduler="inline", progress=False)
    cf = bandjax.sweep(bandwidth=[2.0, 100.0], budget=["free", "low"], quantities=["step_s"])
    assert ds.step_s.dims == ("bandwidth", "budget", "variant")
    a, b = xr.align(ds.step_s, cf.step_s, join="exact")
    np.testing.assert_allclose(a.values, b.values, rtol=1e-9)
    assert ds.step_s.attrs["units"] == "s" and ds.bandwidth.attrs["units"] == "GB/s"
    assert list(ds.label.values) == list(cf.label.values)


def test_sweep_takes_bandjax_sweep_arguments_and_aligns():
    import xarray as xr

    grid = dict(dcs=[2, 3, 8], topology=["ring", "mesh"], H=[1, 2], wan_latency_s=2e-3,
                overlap_fraction=0.5, model=["study", 2e7])
    ds = events.sweep(load=0.0, seed=0, steps=4, scheduler="inline", progress=False, **grid)
    cf = bandjax.sweep(quantities=["step_s"], **grid)
    assert ds.step_s.dims == cf.step_s.dims == ("model", "dcs", "topology", "H", "variant")
    a, b = xr.align(ds, cf, join="exact")
    # docs/model.md section 13: load 0 is the closed form, here with latency and overlap on
    np.testing.assert_allclose(a.step_s.values, b.step_s.values, rtol=1e-12, atol=0)
    assert float(ds.wan_latency_s) == 2e-3 and list(ds.params.values) == list(cf.params.values)
    assert ds.dcs.attrs == cf.dcs.attrs and ds.topology.attrs == cf.topology.attrs


def test_sweep_over_one_link_is_the_closed_forms_at_load_0():
    """A sweep over one link's bandwidth and latency runs each point on that point's table:
    at load 0 the closed form's step (docs/model.md section 15), which bandjax.sweep gives."""
    import xarray as xr

    B = np.array([[0, 100, 10], [100, 0, 5], [10, 5, 0]]) * 1e9 / 8
    L = np.array([[0, 10, 40], [10, 0, 50], [40, 50, 0]]) * 1e-3
    sc = bandjax.reference().replace(topology="mesh").with_links(B, L, ["us", "mid", "eu"])
    grid = dict(link="us <-> eu", link_bandwidth=[0.5, 20.0], link_latency_s=[0.0, 0.08],
                variant=["adamw", "band_gpu"])
    ds = events.sweep(sc, load=0.0, seed=0, steps=3, scheduler="inline", progress=False, **grid)
    cf = bandjax.sweep(sc, quantities=["step_s"], **grid)
    a, b = xr.align(ds.step_s, cf.step_s, join="exact")
    np.testing.assert_allclose(a.values, b.values, rtol=1e-9)
    # the link moves the step along both axes (at 80 ms it paces on every table)
    assert np.all(np.diff(a.values[:, 1], axis=0) < 0) and np.all(np.diff(a.values, axis=1) > 0)


def test_sweep_on_a_process_pool_gives_the_inline_runs_bit_for_bit():
    import xarray as xr

    from events.runner import client, submit

    # seeded runs: where they run (a pool of spawned processes, or this one) changes nothing
    grid = dict(load=[0.0, 0.5], seed=[0, 1], steps=6, bandwidth=[2.0, 12.5])
    inline = events.sweep(scheduler="inline", progress=False, **grid)
    pooled = events.sweep(scheduler="processes", n_workers=2, progress=False, **grid)
    xr.testing.assert_identical(pooled, inline)
    assert float(inline.wan_utilisation.sel(load=0.5).min()) > 0  # the background did run
    with client("processes", 1, nice=10) as where:  # as the report runs them: the same runs
        pending = submit(where, **grid)  # started; collected later
        xr.testing.assert_identical(pending.result(progress=False), inline)
    with pytest.raises(ValueError, match=r"n_workers = 0: must be a whole number >= 1"):
        events.sweep(load=0.0, steps=1, scheduler="processes", n_workers=0, progress=False)


def test_a_pools_workers_run_below_the_callers_priority():
    import os

    from events.runner import pool

    own = os.nice(0)
    with pool(1, nice=5) as p:
        assert p.submit(os.nice, 0).result() == min(own + 5, 19)
    with pool(1) as p:
        assert p.submit(os.nice, 0).result() == own
    for bad in (-1, 20, 2.5, True):
        with pytest.raises(ValueError, match=r"nice = .*: must be a whole number in 0 \.\. 19"):
            with pool(1, nice=bad):
                pass


def test_submit_reads_runs_done_before_from_its_cache(tmp_path, monkeypatch):
    import xarray as xr

    from events import engine
    from events.runner import run_cache_dir, submit

    grid = dict(load=[0.0, 0.5], seed=[0, 1], steps=6, bandwidth=[2.0, 12.5])
    inline = events.sweep(scheduler="inline", progress=False, **grid)
    folder = tmp_path / "engine"
    first = submit("inline", cache_dir=folder, **grid).result(progress=False)
    xr.testing.assert_identical(first, inline)
    files = sorted(folder.glob("*.json"))
    assert len(files) == 2 * 2 * 2 * len(variants.IDS)  # one summary a run

    ran = []
    real = engine.run_summary
    monkeypatch.setattr(engine, "run_summary", lambda *a: ran.append(a) or real(*a))
    again = submit("inline", cache_dir=folder, **grid).result(progress=False)
    xr.testing.assert_identical(again, inline)  # the same dataset, bit for bit
    assert ran == []  # every run read back, none run
    # a run not done before is run (and kept); one whose file is unreadable is run again
    files[0].write_text("{not json")
    more = submit("inline", cache_dir=folder, **{**grid, "seed": [0, 1, 2]}).result(progress=False)
    xr.testing.assert_identical(more.sel(seed=[0, 1]), inline)
    per_seed = 2 * 2 * len(variants.IDS)
    # the unreadable run is run again, unless it is a load-0 run (the same at every seed), which
    # then shares seed 2's run of its plan
    assert len(ran) - per_seed in (0, 1) and len(list(folder.glob("*.json"))) == 3 * per_seed
    assert sum(1 for a in ran if a[1] > 0) >= per_seed // 2  # every loaded run of seed 2
    # the cache is bandjax's cache folder's, and none where the caches are off
    assert run_cache_dir({"BANDJAX_CACHE_DIR": str(tmp_path / "c")}) == tmp_path / "c" / "engine"
    assert run_cache_dir({"BANDJAX_NO_CACHE": "1", "BANDJAX_CACHE_DIR": str(tmp_path)}) is None


@pytest.mark.parametrize("H,shown", [(1.5, "1.5"), ([1, 2.5], "2.5")])
def test_sweep_H_must_be_whole(H, shown):
    # a swept H is checked as every sweep checks it (a whole number of steps, as in a file)
    with pytest.raises(ValueError, match=rf"H = {shown}: must be a whole number >= 1"):
        events.sweep(H=H, load=0.0, steps=1, scheduler="inline", progress=False)


def test_scenario_H_must_be_whole_for_the_engine():
    # Scenario.replace takes any H >= 1 (derivatives in H); the engine syncs on whole steps only
    sc = bandjax.reference().replace(sync_every_H=1.5)
    with pytest.raises(ValueError, match=r"sync_every_H = 1.5: the event engine syncs every H steps, "
                                         r"so H must be a whole number >= 1"):
        events.sweep(sc, load=0.0, steps=1, scheduler="inline", progress=False)


def test_sweep_refuses_what_bandjax_sweep_refuses():
    for kwargs, match in [({"dcs": 1}, r"dcs = 1: must be a whole number >= 2"),
                          ({"topology": "star"}, r"topology = 'star': must be one of 'ring', 'mesh'"),
                          ({"bogus_s": 1.0}, r"bogus_s is not a sweep argument or scenario field")]:
        with pytest.raises(ValueError, match=match):
            bandjax.sweep(**kwargs)
        with pytest.raises(ValueError, match=match):
            events.sweep(load=0.0, steps=1, scheduler="inline", progress=False, **kwargs)


def test_the_progress_bar_counts_runs_done_before_it_as_its_start(capsys):
    """Runs that finished while other work went on (started ahead) are the bar's starting count:
    its rate is of the runs it watched, not the thousands a second of reading finished ones."""
    import concurrent.futures

    from events import runner

    finished = []
    for i in range(30):
        f = concurrent.futures.Future()
        f.set_result({"i": i})
        finished.append(f)
    assert runner._gather(finished, len(finished), True) == [{"i": i} for i in range(30)]
    bar = capsys.readouterr().err.split("\r")[-1]
    assert "30/30" in bar and "?run/s" in bar, bar


def test_seeds_that_change_nothing_share_one_run_with_the_same_summaries():
    """At load 0 with nothing drawn per DC a run is the same at every seed
    (events.engine.seed_free), so a sweep over seeds runs it once and gives each seed that
    summary under its own seed: bit for bit each seed's own run. A loaded or straggling run
    is run at each seed."""
    import xarray.testing as xr_testing

    from events import engine, runner
    from events.plan import build

    sc = bandjax.reference()
    seeds = [0, 3, 7]
    ran = []
    real = engine.run_summary

    def counted(*task):
        ran.append(task[1:3])
        return real(*task)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "run_summary", counted)
        ds = runner.sweep(sc, load=[0.0, 0.5], seed=seeds, steps=20, variant=["adamw", "topk"],
                          scheduler="inline", progress=False)
    assert sorted(ran) == sorted([(0.0, 0)] * 2 + [(0.5, s) for s in seeds] * 2)
    ran.clear()
    with pytest.MonkeyPatch.context() as mp:  # started ahead (runner.submit), the same
        mp.setattr(engine, "run_summary", counted)
        later = runner.submit("inline", sc, load=[0.0, 0.5], seed=seeds, steps=20,
                              variant=["adamw", "topk"]).result(progress=False)
    assert len(ran) == 8
    xr_testing.assert_identical(later, ds)
    for v in ("adamw", "topk"):
        plan = build(sc, v)
        assert engine.seed_free(plan, 0.0) and not engine.seed_free(plan, 0.5)
        for s in seeds:
            own = engine.run_summary(plan, 0.0, s, 20, engine.MAX_SIM_S)
            got = ds.sel(variant=v, load=0.0, seed=s)
            for q in runner.QUANTITIES:
                assert float(got[q]) == own[runner._SUMMARY[q]], (v, s, q)
    # a step factor drawn per DC (stragglers on per-DC rounds) depends on the seed
    straggling = build(sc.with_sites(gpu_compute_s=[0.05, 0.08]).replace(straggler=2.0,
                                                                          straggler_s=0.5), "adamw")
    assert straggling.per_dc and not engine.seed_free(straggling, 0.0)
