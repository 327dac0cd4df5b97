"""results.json read strictly: a field of the wrong type, a number that is not finite, a list of
another length, an unknown key, a number where text belongs or text that is not a known status is
refused by every reader (the typed section, ``Results.of``, the page, ``bandjax explore
--results``) with an error naming the field's path, its value and what is allowed there, before
anything is drawn from it. Each case corrupts one field of the reference report."""

from __future__ import annotations

import copy
import json
import math

import pytest

import bandjax as bj
from bandjax import cli
from bandjax.report import explorer
from bandjax.report.sections.common import Results, ResultsFieldError, section_types

DROP_LAST = object()  # the list at the path, its last item left out


def corrupt(results: dict, path: str, value) -> dict:
    """A deep copy of ``results`` with the field at dotted ``path`` set to ``value``."""
    doc = copy.deepcopy(results)
    *parents, last = path.split(".")
    node = doc
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node[k]
    key = int(last) if isinstance(node, list) else last
    node[key] = node[key][:-1] if value is DROP_LAST else value
    return doc


CASES = [  # (field, corrupt value, what the message must hold besides the path)
    ("target_loss", "3.158", ['target_loss = "3.158"', "must be a number"]),
    ("target_loss", math.nan, ["target_loss = nan", "finite number"]),
    ("setup.variants.adamw.label", 5, ["setup.variants.adamw.label = 5", "must be text"]),
    ("setup.variants.adamw.in_transit", "no", ["in_transit", "must be true or false"]),
    ("setup.variants.adamw.speedup", 2.0, ["setup.variants.adamw.speedup", "not a known key",
                                           "basis_dependent"]),
    ("step_ms.adamw.free", math.inf, ["step_ms.adamw.free = inf", "finite number"]),
    ("step_ms.adamw.free", "4.07 ms", ['step_ms.adamw.free = "4.07 ms"', "must be a number"]),
    ("time_to_target_s.exact.topk", True, ["time_to_target_s.exact.topk = true",
                                           "a number or null"]),
    ("bytes_per_worker.adamw", "55 MB", ["bytes_per_worker.adamw", "a number or null"]),
    ("stages_ms.binding.free", "wan", ['stages_ms.binding.free = "wan"', '"optics"']),
    ("sync_every_H.step_ms.adamw", DROP_LAST, ["sync_every_H.step_ms.adamw",
                                               "must hold 17 items", "sync_every_H.H"]),
    ("sync_every_H.H.0", 0, ["sync_every_H.H.0 = 0", ">= 1"]),
    ("by_enob.status.hypothesis.band_switch.0", "maybe",
     ['by_enob.status.hypothesis.band_switch.0 = "maybe"', '"never"', '"not measured"']),
    ("by_enob.step_ms.band_switch", DROP_LAST, ["by_enob.step_ms.band_switch",
                                                "must hold 2 items", "by_enob.enob"]),
    ("break_even_range_GBps", [0.1, 1000.0, 5.0], ["break_even_range_GBps", "at most 2 items"]),
    ("break_even_GBps.0.status", "wins", ['break_even_GBps.0.status = "wins"', '"crosses"']),
    ("break_even_GBps.0.a", 3, ["break_even_GBps.0.a = 3", "must be text"]),
    ("break_even_GBps.0.GBps", [1.0, None], ["break_even_GBps.0.GBps.1 = null", "must be a number"]),
    ("inverse.0.status", "close", ['inverse.0.status = "close"', '"none_in_range"']),
    ("enob_break_even.0.enob.0", "8 bits", ['enob_break_even.0.enob.0 = "8 bits"', "a number or null"]),
    ("cluster.dcs.1", "3", ['cluster.dcs.1 = "3"', "a whole number"]),
    ("cluster.topologies.0", "star", ['cluster.topologies.0 = "star"', '"ring", "mesh"']),
    ("shared_wan.loads.1", "0.5", ['shared_wan.loads.1 = "0.5"', "must be a number"]),
    ("need.required_GBps.adamw", DROP_LAST, ["need.required_GBps.adamw", "must hold 5 items",
                                             "need.utilisation"]),
    ("need.status.adamw.0", "fine", ['need.status.adamw.0 = "fine"', '"not_reachable"']),
    ("need.wan_GBps", -12.5, ["need.wan_GBps = -12.5", "must be > 0"]),
    ("need.colour", "red", ["need", "colour", "not known"]),
    ("headline.winner.exact.variant", 7, ["headline.winner.exact.variant = 7", "text or null"]),
    ("headline.wan_GBps", math.nan, ["headline.wan_GBps = nan", "finite number"]),
    ("headline.utilisation.adamw", 3, ["headline.utilisation.adamw = 3", "must be an object"]),
    ("headline.utilisation.topk.cap.0", "luck", ['headline.utilisation.topk.cap.0 = "luck"', '"sites"']),
    ("headline.need_targets.0", 1.5, ["headline.need_targets.0 = 1.5", "must be <= 1"]),
    ("figures.0.svg", 1, ["figures.0.svg = 1", "must be text"]),
    ("explained", {"cluster": {"status": "lost", "why": "x"}},
     ['explained.cluster.status = "lost"', '"skipped", "failed"']),
]
IDS = [f"{path}={'drop last' if v is DROP_LAST else v!r}"[:60] for path, v, _ in CASES]


def owner(key: str):
    """The typed section that reads results.json key ``key`` (None for explained)."""
    for t in section_types():
        if (t.FLAT and key in t.keys()) or t.KEY == key:
            return t
    return None


@pytest.fixture(scope="module")
def reference_results(reference_report):
    return reference_report[1]


def test_reference_is_read_whole(reference_results):
    """The reference report itself is read, and its sections written back are its JSON."""
    assert Results.of(reference_results).to_json() == reference_results
    assert len(CASES) >= 13 and len({path.split(".")[0] for path, _, _ in CASES}) >= 13


@pytest.mark.parametrize("path,value,names", CASES, ids=IDS)
def test_corrupt_field_is_refused(reference_results, path, value, names):
    bad = corrupt(reference_results, path, value)
    readers = {"Results.of": lambda: Results.of(bad),
               "page": lambda: explorer.page(bj.reference(), bad)}
    section = owner(path.split(".")[0])
    if section is not None:
        readers[section.__name__ + ".read"] = lambda: section.read(bad)
    for reader, read in readers.items():
        with pytest.raises(ValueError) as e:
            read()
        for n in names:
            assert n in str(e.value), (reader, n, str(e.value))
    if section is not None:  # the section's own error is the field's
        with pytest.raises(ResultsFieldError):
            section.read(bad)


@pytest.mark.parametrize("path,value,names", [CASES[2], CASES[10], CASES[24]],
                         ids=[IDS[2], IDS[10], IDS[24]])
def test_explore_refuses_a_corrupt_field(reference_results, tmp_path, capsys, path, value, names):
    """From the command line: exit status 2, one line naming --results, the file and the field;
    no page is written."""
    src = tmp_path / "results.json"
    src.write_text(json.dumps(corrupt(reference_results, path, value), allow_nan=False))
    out = tmp_path / "page"
    rc = cli.main(["explore", "--results", str(src), "--out", str(out)])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    for n in ["--results", str(src), *names]:
        assert n in lines[0], (n, lines[0])
    assert not out.exists()
