"""A report is framed by its own scenario: title, setup line, headline and page header name the
scenario's cluster; the study's question frames the study's reference scenario alone.

The headline's numbers are checked against the model's own entry points (bandjax.sweep,
bandjax.required_bandwidth), not against the report's sections."""

import html

import numpy as np
import pytest

import bandjax
from bandjax import report
from bandjax.report import explorer
from bandjax.report.sections import frame, headline
from bandjax.report.sections.common import Results
from bandjax.need import STATUS_MEANINGS
from bandjax.report.sections.need import Gbps_text, pct

# what the headline reads; the rest of a report is not needed to frame it
SECTIONS = ["core", "cluster", "need", "headline"]
NAMES = ["us-east", "eu-west", "ap-south", "sa-east"]


def four_dcs() -> bandjax.Scenario:
    """Four named DCs whose ring links differ (GB/s, from row to column): the ring is us-east ->
    eu-west -> ap-south -> sa-east -> us-east at 20, 10, 4 and 6 GB/s, so ap-south to sa-east
    paces it and sa-east to us-east paces once that one passes 6 GB/s; H100s, Llama 3 8B."""
    G = 1e9
    B = [[1, 20 * G, 20 * G, 20 * G], [20 * G, 1, 10 * G, 20 * G],
         [20 * G, 20 * G, 1, 4 * G], [6 * G, 20 * G, 20 * G, 1]]
    return (bandjax.reference().with_links(B, names=NAMES).with_gpu("h100")
            .at_preset("llama3-8b").replace(workers_per_dc=8))


def _built(sc):
    results = report.build(sc, {"only": SECTIONS})
    return results, report.markdown(results)


def test_the_reference_alone_is_the_study():
    ref = frame.of_scenario(bandjax.reference())
    assert ref.reference and ref.title == frame.STUDY_TITLE
    # the study's cluster, as docs/model.md section 2 gives it
    assert ref.setup.startswith("2 DCs x 4 workers (N = 8), the study's calibrated GPU")
    for other in (bandjax.reference().with_variants(bandjax.METHODS),
                  bandjax.reference().replace(workers_per_dc=8), four_dcs()):
        f = frame.of_scenario(other)
        assert not f.reference and f.title != frame.STUDY_TITLE


def test_a_scenario_names_its_own_cluster():
    f = frame.of_scenario(four_dcs())
    assert f.title == ("Syncing llama3-8b (8.03 B parameters) across 4 data centres (us-east, "
                       "eu-west, ap-south, sa-east): 8 H100 workers per DC")
    assert f.setup.startswith("4 DCs (us-east, eu-west, ap-south, sa-east) x 8 workers (N = 32), "
                              "H100 GPUs at 40% utilisation")
    # c = 6 x P x T / (peak x utilisation) = 6 x 8.03e9 x 512 / (989e12 x 0.4) = 62.36 ms
    assert "(62.36 ms of compute a step)" in f.setup


@pytest.mark.slow
def test_the_reference_report_keeps_the_study_framing():
    """The partial report of the reference: the study's question and scenario, and a headline
    that answers the planner's questions before the study's."""
    results, md = _built(bandjax.reference())
    assert md.startswith(f"# {frame.STUDY_TITLE}\n")
    assert "Closed-form results of the reference model for the study's scenario" in md
    lines = headline.lines(results)
    assert lines and all(f"- {s}" in md for s in lines)
    assert md.index("**Headline.**") < md.index("## Setup")
    assert any(s.startswith("Compute utilisation at 12.5 GB/s") for s in lines)


@pytest.mark.slow
def test_four_named_dcs_frame_their_report_and_page():
    sc = four_dcs()
    results, md = _built(sc)
    f = frame.of_scenario(sc)
    assert md.startswith(f"# {f.title}\n") and f"for this scenario: {f.setup}" in md
    assert frame.STUDY_TITLE not in md and "the study's scenario" not in md
    lines = headline.lines(results)
    h = Results.of(results).headline
    # the pacing link and how far its upgrade goes (the ring's links above)
    assert h.pacing["link"] == ["ap-south", "sa-east"]
    assert h.pacing["bandwidth_GBps"] == pytest.approx(4.0, rel=1e-12)
    assert h.pacing["next"] == {"link": ["sa-east", "us-east"], "bandwidth_GBps": pytest.approx(6.0, rel=1e-12)}
    assert any("the ap-south to sa-east link (4 GB/s, 32 Gbit/s; 0 ms)" in s
               and "up to 6 GB/s (48 Gbit/s), where the sa-east to us-east link paces" in s
               for s in lines)
    _check_utilisation_and_need(sc, h, lines)
    page = explorer.page(sc, results)
    header = page[page.index("<header>"):page.index("</header>")]
    assert f"<h1>{html.escape(f.title)}. An explorer of the closed forms</h1>" in header
    assert "4 DCs (us-east, eu-west, ap-south, sa-east) x 8 workers" in header
    assert "H100" in header and "2 DCs" not in header


@pytest.mark.slow
def test_a_scenario_with_methods_ranks_and_needs_them():
    sc = bandjax.reference().with_variants(bandjax.METHODS)
    results, md = _built(sc)
    f = frame.of_scenario(sc)
    assert md.startswith("# Syncing the study's 7.92 M-parameter model across 2 data centres: "
                         "4 workers per DC\n")
    assert "the study's scenario" not in md
    h = Results.of(results).headline
    methods = [m.id for m in bandjax.METHODS]
    # the methods are the scenario's own now: none is added, and none has steps measured
    assert set(h.unranked) == set(methods)
    assert not any(x["pack"] for x in h.utilisation.values())
    lines = headline.lines(results)
    _check_utilisation_and_need(sc, h, lines)
    page = explorer.page(sc, results)
    assert f"<h1>{html.escape(f.title)}. An explorer of the closed forms</h1>" in page


def _check_utilisation_and_need(sc, h, lines):
    """Each variant's compute utilisation at the scenario's bandwidth (bandjax.sweep) and the
    bandwidth it needs for 90% and 95% (bandjax.required_bandwidth), in the typed headline (rel
    1e-6: need's JSON keeps 10 significant digits) and in its sentences (3 digits)."""
    full = sc.with_variants([m for m in bandjax.METHODS if m.id not in sc.ids])
    wan = float(sc.wan_Bps) / 1e9
    cu = bandjax.sweep(full, bandwidth=[wan], quantities=["compute_utilisation"])
    cu = cu.compute_utilisation.squeeze("bandwidth")
    need = bandjax.required_bandwidth(full, [0.9, 0.95], range_GBps=(0.1, 1000.0))
    assert h.need_targets == [0.9, 0.95]
    cu_line = next(s for s in lines if s.startswith("Compute utilisation at"))
    for vid in full.ids:
        short = full.variant(vid).short
        u = float(cu.sel(variant=vid))
        assert h.utilisation[vid]["at_wan"] == pytest.approx(u, rel=1e-6, abs=1e-12)
        assert f"{short} {pct(u)}" in cu_line
        for i, target in enumerate((0.9, 0.95)):
            x = need.sel(variant=vid, utilisation=target)
            got = h.utilisation[vid]["required_GBps"][i]
            status = str(h.utilisation[vid]["status"][i])
            if status == "reached":
                want = float(x.required_bandwidth_GBps)
                assert got == pytest.approx(want, rel=1e-6)
                line = next(s for s in lines if s.startswith("WAN bandwidth") and pct(target) in s)
                assert f"{short} {Gbps_text(want)}" in line
            else:  # the same status, in words (bandjax.need.STATUS_MEANINGS)
                assert status == STATUS_MEANINGS.split()[int(x.status)], (vid, target)
    # at least one method reaches 90% in the range, so the check above saw a number
    assert any(np.isfinite(float(need.sel(variant=m.id, utilisation=0.9).required_bandwidth_GBps))
               for m in bandjax.METHODS)
