"""Break-evens at the edges (docs/model.md section 10): ties over an interval, and crossings closer
than one cell of the coarse grid, against an independent brentq reference
(tests/breakeven_reference.py) on random K-DC scenarios with overlap, rounds, fragments and delay."""

import dataclasses

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bandjax
from bandjax import breakeven as be
from bandjax import variants as V
from bandjax.cli import main
from bandjax.step import step_s
from bandjax.units import significant

import breakeven_reference as ref

LO, HI = (g * 1e9 for g in be.BANDWIDTH_RANGE_GBps)
COARSE = np.geomspace(LO, HI, be.GRID)  # the coarse grid alone, as the search had before


def _check_against_reference(sc, a, b, basis="hypothesis"):
    """The search's crossings and ties equal the reference's: the same number, crossings to 1e-9
    and tie ends to 1e-9 relative; returns the search's answer."""
    r = be.break_even(sc, a, b, basis=basis)
    at = r.at()
    na, nb = be.pair_steps(sc, r.a, r.b, basis)
    xs, ties = ref.crossings(sc, sc.ids.index(r.a), sc.ids.index(r.b), float(na), float(nb), LO, HI)
    assert len(at["x"]) == len(xs) and len(at["ties"]) == len(ties), (at, xs, ties)
    np.testing.assert_allclose(at["x"], xs, rtol=1e-9)
    np.testing.assert_allclose(np.reshape(at["ties"], (-1, 2)), np.reshape(ties, (-1, 2)), rtol=1e-9)
    return at


# --------------------------------------------------------------------------- named examples


def test_overlap_with_rounds_no_longer_ties_c_prime_and_e_prime():
    # Reported as a tie above 0.1005 GB/s (C' vs E', exact basis) when a sync could hide behind a
    # whole round. Under docs/model.md section 14 it hides only behind (f + tau) c, and E''s
    # communication never fits that window (its floor: ports, module and d), so C' is faster
    # throughout and there is no tie.
    sc = bandjax.reference().replace(dcs=6.0, topology="ring", overlap_fraction=0.87,
                                     sync_every_H=84.0, params=1.73e7)
    at = _check_against_reference(sc, "C'", "E'", "exact")
    assert at["status"] == "a_wins_throughout" and at["winners"] == ["band_gpu_allreduce"]
    e_prime = sc.ids.index("band_switch")
    assert float(step_s(sc.replace(wan_Bps=HI))[e_prime]) > float(sc.gpu_compute_s)


def test_mesh_example_no_longer_crosses_twice():
    # Reported as two crossings 6.3244-6.3614 GB/s (C vs E) under the earlier rule for H > 1; under
    # section 14 E is faster throughout, as the reference finds too.
    sc = bandjax.reference().replace(dcs=5.0, topology="mesh", overlap_fraction=0.4104853352495339,
                                     sync_every_H=20.0, budget_FLOPs=99e9,
                                     params=8657520772.32177, workers_per_dc=8.0)
    at = _check_against_reference(sc, "C", "E")
    assert at["status"] == "b_wins_throughout" and at["winners"] == ["band_pluggable"]


def test_tie_over_an_interval_starts_at_the_slower_to_hide_kink():
    # With the whole compute as window (f = 1), C' (all-reduce) and C (all-gather) both become
    # compute-bound at high bandwidth; with equal steps (2,667) they then tie. The tie starts at
    # C's kink (its communication first fits c), known in closed form; C' is faster below it.
    sc = bandjax.reference().replace(overlap_fraction=1.0, params=1e8)
    at = _check_against_reference(sc, "C'", "C")
    kinks = ref.kinks_Bps(sc)
    onset = kinks[sc.ids.index("band_gpu")]
    assert kinks[sc.ids.index("band_gpu_allreduce")] < onset < HI
    assert at["x"] == [] and at["status"] == "tie_over_interval"
    assert at["ties"][0][0] == pytest.approx(onset, rel=1e-9) and at["ties"][0][1] == HI
    assert at["winners"] == ["band_gpu_allreduce", be.TIED] and at["cuts"] == [at["ties"][0][0]]
    s_below = np.asarray(step_s(sc.replace(wan_Bps=onset * 0.999)))
    s_above = np.asarray(step_s(sc.replace(wan_Bps=onset * 1.5)))
    i, j = sc.ids.index("band_gpu_allreduce"), sc.ids.index("band_gpu")
    assert s_below[i] < s_below[j] and s_above[i] == s_above[j] == float(sc.gpu_compute_s)
    # the other order: the sides swap, the tie stays
    other = be.break_even(sc, "C", "C'").at()
    assert other["ties"] == at["ties"] and other["winners"] == ["band_gpu_allreduce", be.TIED]


def test_tie_in_the_cli(capsys):
    sc = bandjax.reference().replace(overlap_fraction=1.0, params=1e8)
    onset = ref.kinks_Bps(sc)[sc.ids.index("band_gpu")]
    from bandjax.cli import _breakeven_out as out

    out.print_bandwidth(sc, "C'", "C", "hypothesis", None, None)
    text = capsys.readouterr().out
    assert f"tie from {onset / 1e9:.6g} GB/s" in text and "to 1000 GB/s" in text
    assert "below: C' faster; above: none (range end)" in text


def _method_scenario():
    """The study's six and one DiLoCo-like method with fragments and a delay (H = 10, F = 5,
    tau = 1, 1 B a parameter, d = 0), given C's steps."""
    m = dataclasses.replace(V.get("diloco", V.METHODS), id="m_a", short="m_a", label="m_a",
                            sync_every=10, fragments=5, delay=1, bytes_per_param=1.0, d_s=0.0)
    return bandjax.reference().with_variants([m], steps={"m_a": 2667})


def test_two_crossings_inside_one_coarse_cell_are_both_found():
    # Found by the random comparison below: the method's time falls steeply to its kink and is
    # flat above it, E's keeps falling, so the method is faster only on a narrow interval around
    # its kink, inside one cell of the coarse grid (which alone saw no sign change there).
    sc = _method_scenario().replace(
        dcs=4.0, topology="ring", workers_per_dc=8.0, params=76272979726.66168,
        overlap_fraction=0.6611914610149492, sync_every_H=84.0, budget_FLOPs=99e9)
    sc = sc.replace(fixed_s={**sc.fixed_s, "band_pluggable": 7.562561846021977e-07})
    at = _check_against_reference(sc, "m_a", "E")
    assert len(at["x"]) == 2 and at["winners"] == ["band_pluggable", "m_a", "band_pluggable"]
    x0, x1 = at["x"]
    assert not np.any((COARSE > x0) & (COARSE < x1))  # one coarse cell holds both
    kink = ref.kinks_Bps(sc)[sc.ids.index("m_a")]
    assert x0 < kink < x1


# --------------------------------------------------------------------------- random scenarios


def _registry():
    base = V.get("diloco", V.METHODS)
    extra = [dataclasses.replace(base, id="m_a", short="m_a", label="m_a", sync_every=10,
                                 fragments=5, delay=1, bytes_per_param=1.0),
             dataclasses.replace(base, id="m_b", short="m_b", label="m_b", sync_every=4,
                                 fragments=1, delay=3, bytes_per_param=2.0),
             dataclasses.replace(base, id="m_c", short="m_c", label="m_c", sync_every=100,
                                 fragments=16, delay=0, bytes_per_param=0.5)]
    # equal steps to the study's C, C' and E' (exact) and to AdamW and top-k: ties are common
    return bandjax.reference().with_variants(extra, steps={"m_a": 2667, "m_b": 2667, "m_c": 400})


REGISTRY = _registry()
PAIRS = [(a, b, basis) for i, b in enumerate(REGISTRY.ids) for a in REGISTRY.ids[i + 1:]
         for basis in (bandjax.BASES if {a, b} & set(V.basis_dependent(REGISTRY.variants))
                       else ("hypothesis",))]
IA = np.array([REGISTRY.ids.index(a) for a, _, _ in PAIRS])
IB = np.array([REGISTRY.ids.index(b) for _, b, _ in PAIRS])
NA = np.array([REGISTRY.steps_of(a, float(REGISTRY.enob), basis) for a, _, basis in PAIRS])
NB = np.array([REGISTRY.steps_of(b, float(REGISTRY.enob), basis) for _, b, basis in PAIRS])


@st.composite
def k_dc_scenarios(draw):
    """K DCs on a ring or a mesh, overlap (with 0 and 1 likely), rounds, latency, budget, d."""
    d = {v: draw(st.sampled_from([0.0, t * draw(st.floats(0.1, 10.0))]))
         for v, t in REGISTRY.fixed_s.items() for t in [t or 1e-4]}
    return REGISTRY.replace(
        dcs=float(draw(st.integers(2, 8))), topology=draw(st.sampled_from(["ring", "mesh"])),
        workers_per_dc=float(draw(st.sampled_from([1, 2, 4, 8, 16]))),
        params=10 ** draw(st.floats(6.0, 11.0)),
        overlap_fraction=draw(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))),
        sync_every_H=float(draw(st.sampled_from([1, 2, 3, 10, 20, 84, 100]))),
        wan_latency_s=draw(st.one_of(st.just(0.0), st.floats(1e-5, 0.05))),
        budget_FLOPs=draw(st.sampled_from([np.inf, 10e9, 99e9, 1e12])), fixed_s=d)


@settings(max_examples=12, deadline=None)
@given(k_dc_scenarios())
def test_every_crossing_and_tie_against_a_fine_grid_brentq_reference(sc):
    # Every pair of nine variants (three methods with fragments and delay) in one search: zero
    # missed and zero extra crossings, each to 1e-9, and every tie as an interval with both ends
    # to 1e-9 relative (docs/model.md section 10).
    c = jax.tree.map(np.asarray, be.all_bandwidth_crossings(sc, IA, IB, NA, NB, LO, HI))
    for p in range(len(PAIRS)):
        xs, ties = ref.crossings(sc, IA[p], IB[p], NA[p], NB[p], LO, HI)
        n, nt = int(c.count[p]), int(c.tie_count[p])
        assert (n, nt) == (len(xs), len(ties)), (PAIRS[p], c.x[p], xs, ties)
        np.testing.assert_allclose(c.x[p, :n], xs, rtol=1e-9)
        got = np.stack([c.tie_lo[p, :nt], c.tie_hi[p, :nt]], axis=-1)
        np.testing.assert_allclose(got, np.reshape(ties, (-1, 2)), rtol=1e-9)


# --------------------------------------------------------------------------- kinks


def test_the_kinks_are_the_closed_forms():
    # B* = S / ((f + tau) c - A) for every variant, against the reference's secant of one
    # fragment's communication, over a grid of scenarios
    sc = REGISTRY.replace(overlap_fraction=0.9, params=1e8, wan_latency_s=1e-4)
    (k,) = be.bandwidth_kinks_Bps(sc)
    np.testing.assert_allclose(np.asarray(k), ref.kinks_Bps(sc), rtol=1e-9)


def test_envelope_breaks_of_lines():
    # lines t + 0, t / 2 + 1, t / 4 + 1.5 (slopes 1 / relative bandwidth, intercepts relative
    # latency): on top 1.5 + t/4 until t = 2 (meets t/2 + 1), then t/2 + 1 until t = 2 (meets t),
    # i.e. one break at t = 2 where all three meet; 0.2 t + 1.4 never tops.
    breaks, on_top = be.envelope_breaks([1.0, 0.5, 0.25, 0.2], [0.0, 1.0, 1.5, 1.4])
    np.testing.assert_allclose(breaks, [2.0])
    assert list(on_top) == [0, 2]
    breaks, on_top = be.envelope_breaks([1.0, 0.5], [0.0, 1.0])
    np.testing.assert_allclose(breaks, [2.0])
    assert list(on_top) == [0, 1]


def test_the_report_entry_and_its_cell_state_the_tie():
    from bandjax.report.sections import breakeven as section

    sc = bandjax.reference().replace(overlap_fraction=1.0, params=1e8)
    ps, c, _ = section._all_pairs(sc, [])  # at the scenario's budget alone
    p = ps.index(("band_gpu_allreduce", "band_gpu", None))
    e = section._entry(*ps[p], c, (0, p))
    onset = ref.kinks_Bps(sc)[sc.ids.index("band_gpu")] / 1e9
    assert e["GBps"] == [] and e["status"] == "tie_over_interval"
    assert e["ties_GBps"][0][0] == pytest.approx(onset, rel=1e-9) and e["ties_GBps"][0][1] == 1000.0
    assert e["winner_below"] == "band_gpu_allreduce" and e["winner_above"] == be.TIED
    assert section._crossing_cell(e) == f"tie from {significant(onset, 4)} to 1,000 GB/s"


def test_mesh_links_that_differ_add_the_pacing_links_switches_and_zeros():
    # Per-link values: on a mesh the WAN term is the largest over links of bytes / B_ij +
    # hops l_ij. Written here from that page for the study's six (one fragment each), the step's
    # slope in 1/B changes only at points the kinks hold (within one cell of a fine grid).
    from types import SimpleNamespace

    from bandjax.step import COMPONENTS, fragment_parts_s, traffic_B

    rb = np.array([[1, 1.0, 3.0], [2.0, 1, 1.5], [1.2, 4.0, 1]])
    rl = np.array([[1, 0.1, 1.0], [0.3, 1, 0.05], [0.6, 0.2, 1]])
    sc = bandjax.reference().replace(dcs=3.0, topology="mesh", wan_latency_s=2e-4,
                                     overlap_fraction=0.7, params=3e7)
    object.__setattr__(sc, "links", SimpleNamespace(K=3, bandwidth_rel=rb, latency_rel=rl,
                                                    equal=False))
    kinks = np.stack([np.broadcast_to(np.asarray(k), (6,)) for k in be.bandwidth_kinks_Bps(sc)])
    parts = [np.asarray(p) for p in fragment_parts_s(sc)]
    names = COMPONENTS[1:]
    rest = sum(np.broadcast_to(p, (6,)) for n, p in zip(names, parts) if n not in ("wan", "wan_latency"))
    t = traffic_B(sc)
    wan_B, hops = np.broadcast_to(np.asarray(t.wan_B), (6,)), np.broadcast_to(np.asarray(t.hops), (6,))
    links = [(i, j) for i in range(3) for j in range(3) if i != j]
    c, w = float(sc.gpu_compute_s), 0.7 * float(sc.gpu_compute_s)
    B = np.geomspace(LO, HI, 200_001)
    seen = 0
    for v in range(6):
        wan = np.max([wan_B[v] / (B * rb[i, j]) + hops[v] * 2e-4 * rl[i, j] for i, j in links], axis=0)
        step = c + np.maximum(0.0, rest[v] + wan - w)
        slope = np.diff(step) / np.diff(1 / B)
        turns = np.nonzero(np.abs(np.diff(slope)) > 1e-6 * np.max(np.abs(slope)))[0]
        for k in turns:
            near = np.abs(np.log(kinks[:, v] / B[k + 1]))
            assert np.nanmin(near) < 3 * np.log(B[1] / B[0]), (v, B[k + 1], kinks[:, v])
            # more than the equal-links kink alone would give
            seen += bool(np.abs(np.log(kinks[0, v] / B[k + 1])) > 3 * np.log(B[1] / B[0]))
    assert seen >= 2  # switches of the pacing link in range, held by the mesh's own points
