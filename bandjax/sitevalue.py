"""What each site adds, and what each site waits for (docs/model.md section 16).

A site is one DC of the job: its name, its workers n_i and its compute per inner step c_i. A
scenario with sites that differ holds them (``scenario.sites``: names, workers, compute relative
to the scenario's c, K); a scenario without is K equal sites, each with the scenario's c and n,
named as its links table names them (``dc0``, ``dc1``, ... for equal links).

:func:`site_value` asks, for each site, what the job loses without it: throughput (tokens/s) and
compute utilisation with every site, without that one (K - 1 DCs), and the difference. A site that
is slow can hold every other site back: without it the job's throughput may fall by less than its
share of the workers, or its compute utilisation rise.

:func:`site_idle` splits each site's idle time, as a share of the step: waiting for the slowest
site (a faster DC idles c_max - c_i an inner step, section 16's "wait" rule) and waiting for the
slowest worker (the hot spot ``straggle``, c' - c_max: every site waits for the last worker).

Throughput is N T / step (N = sum n_i workers, T tokens a worker a step) where the sweep does not
give ``throughput_tokens_per_s`` itself (:func:`throughput_tokens_per_s`, one place to switch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from ._limits import MAX_SITES
from .grid import QUANTITIES, sweep
from .links import default_names
from .scenario import Scenario, reference
from .step import COMPONENTS

SITE_WAIT = "site_wait"  # the hot spot "waiting for the slowest site" (sites that differ)
STRAGGLE = "straggle"  # the hot spot "waiting for the slowest worker"
MIN_DCS = 2  # a cross-DC job needs this many DCs: a site can be left out from MIN_DCS + 1 on


@dataclass(frozen=True)
class SiteTable:
    """The sites of a scenario point: ``names``, ``workers`` (n_i), ``compute_rel`` (c_i / c),
    ``compute_s`` (c_i, s) and ``equal`` (no sites given: every DC the scenario's c and n)."""

    names: tuple[str, ...]
    workers: np.ndarray
    compute_rel: np.ndarray
    compute_s: np.ndarray
    equal: bool

    @property
    def K(self) -> int:
        return len(self.names)


def _scalar(sc: Scenario, name: str) -> float:
    value = np.asarray(getattr(sc, name), dtype=float)
    if value.ndim:
        raise ValueError(f"{name} = {value.tolist()!r}: the sites of a scenario are read at one "
                         "point; give one value, not an array")
    return float(value)


def sites_of(sc: Scenario) -> SiteTable:
    """The sites of ``sc`` (one point): its ``sites`` where it has them, else K equal DCs."""
    c = _scalar(sc, "gpu_compute_s")
    sites = getattr(sc, "sites", None)
    if sites is not None:
        workers = np.asarray(sites.workers, dtype=float)
        rel = np.asarray(sites.compute_rel, dtype=float)
        return SiteTable(tuple(sites.names), workers, rel, c * rel, False)
    K = int(_scalar(sc, "dcs"))
    if K > MAX_SITES:  # before K names and arrays are made
        raise ValueError(f"dcs = {K:,}: the sites of a job are taken one by one; at most "
                         f"{MAX_SITES:,} DCs (bandjax._limits.MAX_SITES)")
    names = sc.links.names if sc.links is not None else default_names(K)
    n = _scalar(sc, "workers_per_dc")
    return SiteTable(tuple(names), np.full(K, n), np.ones(K), np.full(K, c), True)


def sites_differ(sc: Scenario) -> bool:
    """Whether ``sc`` has sites that differ (in workers or in compute per inner step)."""
    sites = getattr(sc, "sites", None)
    if sites is None:
        return False
    w = np.asarray(sites.workers, dtype=float)
    rel = np.asarray(sites.compute_rel, dtype=float)
    return bool(np.ptp(w) > 0 or np.ptp(rel) > 0)


def without_site(sc: Scenario, name: str) -> Scenario:
    """``sc`` without the site ``name``: K - 1 DCs.

    ``sc.without_site`` where the scenario has it; else (equal sites) one DC fewer, the others as
    they are: the same n and c, equal links as they were, or the links table without that DC's
    row and column (the ring then joins its neighbours). Refused at K = 2: a cross-DC job needs
    2 DCs."""
    table = sites_of(sc)
    if name not in table.names:
        raise ValueError(f"site {name!r} is not a site of this scenario; sites: "
                         f"{', '.join(table.names)}")
    if table.K <= MIN_DCS:
        raise ValueError(f"site {name!r}: the scenario has {table.K} DCs, and a cross-DC job needs "
                         f"{MIN_DCS}; what a site adds needs {MIN_DCS + 1} DCs or more")
    if hasattr(sc, "without_site"):
        return sc.without_site(name)
    if sc.links is None:
        return sc.replace(dcs=float(table.K - 1))
    B, L, names = sc.link_values()
    keep = [i for i, n in enumerate(names) if n != name]
    sub = np.ix_(keep, keep)
    return sc.with_links(np.nan_to_num(B[sub], nan=1.0), np.nan_to_num(L[sub], nan=0.0),
                         [names[i] for i in keep])


def throughput_tokens_per_s(sc: Scenario, variant=None) -> xr.DataArray:
    """Each variant's throughput, tokens/s, over ``variant`` (ids; all by default): the sweep's
    ``throughput_tokens_per_s`` where it has one, else N T / step with N = K n (equal sites)."""
    ids = list(sc.ids) if variant is None else list(variant)
    if "throughput_tokens_per_s" in QUANTITIES:
        out = sweep(sc, variant=ids, quantities=("throughput_tokens_per_s",))["throughput_tokens_per_s"]
    else:
        step = sweep(sc, variant=ids, quantities=("step_s",))["step_s"]
        N = _scalar(sc, "dcs") * _scalar(sc, "workers_per_dc")
        out = N * _scalar(sc, "tokens_per_worker") / step
    return out.assign_attrs(units="tokens/s", long_name="throughput: tokens trained on a second")


def _at(sc: Scenario, ids) -> tuple[np.ndarray, np.ndarray]:
    """(throughput tokens/s, compute utilisation) of each of ``ids``."""
    cu = sweep(sc, variant=ids, quantities=("compute_utilisation",))["compute_utilisation"]
    return np.asarray(throughput_tokens_per_s(sc, ids)), np.asarray(cu)


def site_value(scenario: Scenario | None = None, variant=None) -> xr.Dataset:
    """What each site adds: each variant's throughput and compute utilisation with every site,
    without each one (``scenario.without_site``; K - 1 equal DCs for a scenario without sites),
    and the difference (docs/model.md section 16).

    Args:
      scenario: one point (no swept arrays); the reference scenario by default (which has 2 DCs,
        too few: see Raises).
      variant: a variant id or a list of them (all of the registry's by default).

    Returns:
      An ``xarray.Dataset`` over (site, variant): ``throughput_tokens_per_s`` and
      ``compute_utilisation`` (variant: with every site), ``throughput_without_tokens_per_s`` and
      ``compute_utilisation_without`` (site, variant: without that site), and
      ``throughput_added_tokens_per_s`` and ``compute_utilisation_added`` (with minus without: what
      the site adds; a site that holds the others back adds a negative utilisation). Coordinates
      ``workers`` (n_i) and ``compute_s`` (c_i, s) per site; ``attrs["equal_sites"]`` says whether
      every site is the same (a scenario without sites).

    Raises:
      ValueError: at K = 2 (without one of them there is no cross-DC job), for an unknown
        variant or a scenario with array fields.
    """
    sc = reference() if scenario is None else scenario
    table = sites_of(sc)
    if table.K <= MIN_DCS:
        raise ValueError(f"the scenario has {table.K} DCs and a cross-DC job needs {MIN_DCS}: "
                         f"what each site adds needs {MIN_DCS + 1} DCs or more")
    ids = list(sc.ids) if variant is None else ([variant] if isinstance(variant, str) else list(variant))
    unknown = [v for v in ids if v not in sc.ids]
    if unknown:
        raise ValueError(f"variant {unknown[0]!r} is not in the scenario's registry; allowed: "
                         f"{', '.join(sc.ids)}")
    tp, cu = _at(sc, ids)
    if table.equal and sc.links is None:  # without any one of K equal DCs: the same K - 1
        without = [_at(without_site(sc, table.names[0]), ids)] * table.K
    else:
        without = [_at(without_site(sc, name), ids) for name in table.names]
    tp_wo = np.stack([w[0] for w in without])
    cu_wo = np.stack([w[1] for w in without])
    tokens = {"units": "tokens/s"}
    one = {"units": "1"}
    ds = xr.Dataset({
        "throughput_tokens_per_s": ("variant", tp, {**tokens, "long_name": "throughput with every site"}),
        "throughput_without_tokens_per_s": (("site", "variant"), tp_wo, {
            **tokens, "long_name": "throughput without the site"}),
        "throughput_added_tokens_per_s": (("site", "variant"), tp - tp_wo, {
            **tokens, "long_name": "throughput the site adds (with every site minus without it)"}),
        "compute_utilisation": ("variant", cu, {**one, "long_name": "compute utilisation with every site"}),
        "compute_utilisation_without": (("site", "variant"), cu_wo, {
            **one, "long_name": "compute utilisation without the site"}),
        "compute_utilisation_added": (("site", "variant"), cu - cu_wo, {
            **one, "long_name": "compute utilisation the site adds (negative: it holds the others back)"}),
    }, coords={
        "site": ("site", list(table.names)),
        "variant": ("variant", ids),
        "label": ("variant", [sc.variant(v).short for v in ids]),
        "workers": ("site", table.workers, {"units": "1", "long_name": "workers at the site"}),
        "compute_s": ("site", table.compute_s, {"units": "s", "long_name": "compute per inner step at the site"}),
    })
    ds.attrs.update({
        "title": "bandjax: what each site adds",
        "equal_sites": int(table.equal),
        "note": ("every DC is the same site (the scenario has no sites that differ): each one "
                 "adds the same" if table.equal else "each site with its own workers and compute"),
        "assumptions": "without a site the others keep their workers, compute and links; steps "
                       "to target in global batches of N T tokens (docs/model.md section 16)",
    })
    return ds


def site_idle(scenario: Scenario | None = None, variant=None) -> xr.Dataset:
    """Each site's idle share of each variant's step, over (site, variant), unit 1:

        waiting_for_site    (c_max - c_i) / step    (a faster DC idles while the slowest computes)
        waiting_for_worker  the hot spot straggle   (c' - c_max: every site waits for the last worker)

    with the variant-level hot spots beside them (``hot_spot_site_wait``, 0 where the closed forms
    have no such component; ``hot_spot_straggle``), ``step_s`` and ``compute_utilisation``."""
    sc = reference() if scenario is None else scenario
    table = sites_of(sc)
    ids = list(sc.ids) if variant is None else ([variant] if isinstance(variant, str) else list(variant))
    ds = sweep(sc, variant=ids, quantities=("step_s", "hot_spot", "compute_utilisation"))
    step = np.asarray(ds["step_s"])
    hot = ds["hot_spot"]
    straggle = np.asarray(hot.sel(component=STRAGGLE))
    site_wait = (np.asarray(hot.sel(component=SITE_WAIT)) if SITE_WAIT in COMPONENTS
                 else np.zeros_like(straggle))
    wait = (np.max(table.compute_s) - table.compute_s)[:, None] / step[None, :]
    one = {"units": "1"}
    return xr.Dataset({
        "waiting_for_site": (("site", "variant"), wait, {
            **one, "long_name": "share of the step the site waits for the slowest site"}),
        "waiting_for_worker": (("site", "variant"), np.broadcast_to(straggle, wait.shape).copy(), {
            **one, "long_name": "share of the step the site waits for the slowest worker"}),
        "hot_spot_site_wait": ("variant", site_wait, {
            **one, "long_name": "hot spot: waiting for the slowest site"}),
        "hot_spot_straggle": ("variant", straggle, {
            **one, "long_name": "hot spot: waiting for the slowest worker"}),
        "step_s": ("variant", step, {"units": "s", "long_name": "step time"}),
        "compute_utilisation": ("variant", np.asarray(ds["compute_utilisation"]), {
            **one, "long_name": "compute utilisation"}),
    }, coords={"site": ("site", list(table.names)), "variant": ("variant", ids),
               "workers": ("site", table.workers, {"units": "1"}),
               "compute_s": ("site", table.compute_s, {"units": "s"})})
