"""Sweep arguments -> a plain description of a grid (no jax).

One parser for every caller that takes sweep arguments (:func:`bandjax.sweep`, the event engine's
sweep, a winner map): :func:`parse` turns them into a :class:`Grid` of dimensions, coordinate
values with units, scenario leaf overrides, the steps to target at every grid point and the
variant selection. Evaluation and labelling are the caller's. Plain Python and NumPy only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from .labels import COORD_ATTRS, as_list, as_values, budgets_FLOPs, is_dimension, models, positive
from .scenario import (ACTIVE_PRESETS, BASES, CHOICES, DEFAULT_UTILISATION, FIELDS, GPUS,
                       STUDY_GPU_FLOPs, Scenario, check_field, check_methods, choice_index)
from .units import SI, ScenarioError, _digits, significant
from .variants import TOPOLOGIES

# Named arguments, in the order their dimensions appear; each sets these scenario fields.
NAMED = ("bandwidth", "enob", "budget", "model", "gpu", "dcs", "topology", "workers_per_dc", "H",
         "basis")
# A named argument and the field it sets: giving both is an error.
SAME_FIELD = {"bandwidth": "wan_Bps", "H": "sync_every_H", "budget": "budget_FLOPs",
              "model": "params", "gpu": "gpu_peak_FLOPs", "dcs": "dcs", "topology": "topology",
              "enob": "enob", "workers_per_dc": "workers_per_dc"}


@dataclass
class Axis:
    """One dimension: its name, coordinate values (with ``attrs['units']``), and per value the
    scenario fields it sets (field -> SI values, one per coordinate). Values are a list, or a
    float array where the argument was one (:func:`bandjax.labels.as_values`)."""

    name: str
    coords: list | np.ndarray
    attrs: dict
    fields: dict = field(default_factory=dict)


@dataclass
class Grid:
    """A parsed sweep.

    Attributes:
      axes: the dimensions in order (variant not included).
      scalars: name -> coordinate value, for arguments given as one value (no dimension).
      scalar_attrs: their attrs.
      leaves: scenario field -> NumPy array, each swept field 1-D on its own axis (shape 1 on the
        others, so the fields broadcast to the grid), a scalar override 0-d.
      steps: steps to target, shape broadcastable to (*grid, variant) over the scenario's whole
        registry (inf = never, NaN = not measured).
      variants: the selected variant ids; variant_is_dim: whether variant is a dimension;
        index: their positions in the scenario's registry.
      extra_coords: name -> (dims, values, attrs) for derived coordinates (``params`` of a model).

    A grid is not changed once parsed (a scenario may keep it for its sweeps): its ``shape`` is
    found once.
    """

    axes: list[Axis]
    scalars: dict
    scalar_attrs: dict
    leaves: dict
    steps: np.ndarray
    variants: list
    variant_is_dim: bool
    index: list
    extra_coords: dict

    @property
    def dims(self) -> list[str]:
        return [a.name for a in self.axes]

    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.coords) for a in self.axes)


def _whole(name, values, lowest):
    for n in values:
        try:
            good = (not isinstance(n, (bool, np.bool_)) and isinstance(n, (int, float, np.number))
                    and math.isfinite(n) and n >= lowest and float(n) == int(n))
        except OverflowError:  # an integer past the largest float: no count of DCs or steps
            good = False
        if not good:
            shown = _digits(n) if isinstance(n, int) and not isinstance(n, bool) else repr(n)
            raise ScenarioError(f"{name} = {shown}: must be a whole number >= {lowest}")
    return [int(n) for n in values]


def _gpu_fields(sc: Scenario, names, utilisation_given: bool) -> tuple[list, dict]:
    rows = []
    for g in names:
        if g == "study":
            rows.append((STUDY_GPU_FLOPs, float(Scenario.gpu_static_W), float(Scenario.gpu_J_per_FLOP), 1.0))
        elif g in GPUS:
            rows.append((GPUS[g].peak_FLOPs, GPUS[g].board_W, 0.0, DEFAULT_UTILISATION))
        else:
            raise ScenarioError(f"gpu = {g!r} is not a preset; allowed: study, {', '.join(GPUS)}")
    cols = list(zip(*rows))
    out = {"gpu_peak_FLOPs": list(cols[0]), "gpu_static_W": list(cols[1]),
           "gpu_J_per_FLOP": list(cols[2])}
    if not utilisation_given:
        out["utilisation"] = list(cols[3])
    return list(names), out


def parse(sc: Scenario, *, bandwidth=None, enob=None, budget=None, variant=None, model=None,
          gpu=None, dcs=None, topology=None, workers_per_dc=None, H=None, basis=None,
          **fields) -> Grid:
    """The grid that the sweep arguments describe (see :func:`bandjax.sweep` for each argument).

    Every value is checked here, with the same error as :meth:`Scenario.replace` for a field given
    by name (:func:`bandjax.scenario.check_field`). Naming one field twice (``bandwidth`` and
    ``wan_Bps``, ``H`` and ``sync_every_H``, ``budget`` and ``budget_FLOPs``, ``model`` and
    ``params``, ``gpu`` and ``gpu_peak_FLOPs``) is an error.
    """
    given = dict(bandwidth=bandwidth, enob=enob, budget=budget, model=model, gpu=gpu, dcs=dcs,
                 topology=topology, workers_per_dc=workers_per_dc, H=H, basis=basis)
    for name in fields:
        if name not in FIELDS:
            raise ValueError(f"{name} is not a sweep argument or scenario field; allowed: "
                             f"{', '.join(NAMED)}, variant, {', '.join(FIELDS)}")
    for arg, fld in SAME_FIELD.items():
        if given.get(arg) is not None and fld in fields and arg != fld:
            raise ValueError(f"{arg} and {fld} both set {fld}; give one")
    if sc.links is not None and (dcs is not None or "dcs" in fields):
        raise ScenarioError(f"dcs = {dcs if dcs is not None else fields['dcs']!r}: this scenario "
                            f"has per-link values for {sc.links.K} DCs ({', '.join(sc.links.names)}), "
                            "so K comes from its links table and cannot be swept; sweep scenarios "
                            "with different tables (Scenario.with_links) instead")
    sites = getattr(sc, "sites", None)
    for arg in ("dcs", "workers_per_dc"):
        value = given.get(arg) if given.get(arg) is not None else fields.get(arg)
        if sites is not None and value is not None:
            raise ScenarioError(f"{arg} = {value!r}: this scenario has per-site values for "
                                f"{sites.K} DCs ({', '.join(sites.names)}), so "
                                f"{'K' if arg == 'dcs' else 'each DC its workers'} comes from its "
                                "sites table and cannot be swept; sweep scenarios with different "
                                "sites (Scenario.with_sites) instead")
    axes: list[Axis] = []
    scalars: dict = {}
    scalar_attrs: dict = {}
    overrides: dict = {}
    extra: dict = {}

    def add(name, raw, coords, field_values, attrs=None):
        attrs = COORD_ATTRS.get(name, {}) if attrs is None else attrs
        if is_dimension(raw):
            axes.append(Axis(name, coords if isinstance(coords, np.ndarray) else list(coords),
                             attrs, field_values))
        else:
            scalars[name] = coords[0]
            scalar_attrs[name] = attrs
            overrides.update({k: v[0] for k, v in field_values.items()})

    if bandwidth is not None:
        vals, _ = as_values("bandwidth", bandwidth)
        gbps = positive("bandwidth", vals, "GB/s")
        with np.errstate(over="ignore"):
            bps = np.asarray(gbps) * 1e9
        if not np.all(np.isfinite(bps)):
            typed = vals.tolist() if isinstance(vals, np.ndarray) else vals  # as Python writes it
            bad = typed[int(np.argmin(np.isfinite(bps)))]
            raise ValueError(f"bandwidth = {bad!r}: must be a finite number > 0 GB/s whose B/s is "
                             f"finite (at most {significant(np.finfo(float).max / 1e9, 3)} GB/s)")
        add("bandwidth", bandwidth, gbps, {"wan_Bps": bps})
    enobs = [float(sc.enob)]
    if enob is not None:
        vals, _ = as_list("enob", enob)
        for e in vals:
            if isinstance(e, bool) or not isinstance(e, (int, float, np.number)) or not 1 <= e <= 32:
                raise ValueError(f"enob = {e!r}: must be a number of bits in [1, 32]")
        enobs = [float(e) for e in vals]
        add("enob", enob, enobs, {"enob": enobs})
    if budget is not None:
        vals, _ = as_values("budget", budget)
        flops = budgets_FLOPs(sc, vals)
        gflops = np.asarray(flops) / 1e9
        add("budget", budget, gflops if isinstance(vals, np.ndarray) else gflops.tolist(),
            {"budget_FLOPs": flops})
    if model is not None:
        vals, is_dim = as_list("model", model)
        labels, params = models(vals)
        sets = {"params": params}
        if any(isinstance(m, str) and m in ACTIVE_PRESETS for m in vals):
            # a mixture-of-experts preset computes with its active parameters (the others: dense)
            sets["active_params"] = [ACTIVE_PRESETS.get(m, p) if isinstance(m, str) else p
                                     for m, p in zip(vals, params)]
        add("model", model, labels, sets)
        extra["params"] = (("model",) if is_dim else (), np.asarray(params if is_dim else params[0]),
                           COORD_ATTRS["params"])
    if gpu is not None:
        vals, _ = as_list("gpu", gpu)
        labels, gfields = _gpu_fields(sc, vals, "utilisation" in fields)
        add("gpu", gpu, labels, gfields, {"long_name": "GPU preset (dense BF16 peak, board power)"})
    if dcs is not None:
        vals, _ = as_list("dcs", dcs)
        ks = _whole("dcs", vals, 2)
        add("dcs", dcs, ks, {"dcs": [float(k) for k in ks]},
            {"units": "1", "long_name": "data centres K (N = K n workers)"})
    if topology is not None:
        vals, _ = as_list("topology", topology)
        for t in vals:
            if t not in TOPOLOGIES:
                raise ScenarioError(f"topology = {t!r}: must be one of {', '.join(map(repr, TOPOLOGIES))}")
        add("topology", topology, list(vals), {"topology": [float(TOPOLOGIES.index(t)) for t in vals]},
            {"long_name": "WAN topology between DCs (ring: K links; mesh: K(K-1))"})
    if workers_per_dc is not None:
        vals, _ = as_list("workers_per_dc", workers_per_dc)
        ns = _whole("workers_per_dc", vals, 1)
        add("workers_per_dc", workers_per_dc, ns, {"workers_per_dc": [float(n) for n in ns]})
    if H is not None:
        vals, _ = as_list("H", H)
        _whole("H", vals, 1)  # inner steps a round: before a variant's delay is read against it
        hs = positive("H", vals, "steps")
        # each variant's delay and fragments must fit every H it takes
        check_methods(tuple(v for v in sc.variants if not v.own_method), hs)
        add("H", H, hs, {"sync_every_H": hs},
            {**COORD_ATTRS.get("H", {}), "note": "variants that set their own H keep it"})
    bases = ["hypothesis"]
    if basis is not None:
        vals, _ = as_list("basis", basis)
        for b in vals:
            if b not in BASES:
                raise ValueError(f"basis = {b!r} is not known; allowed: {', '.join(BASES)}")
        bases = list(vals)
        add("basis", basis, bases, {})
    for name, values in fields.items():
        vals, _ = as_values(name, values)
        if name == "topology":
            raise ValueError("topology: give it as topology='ring' or 'mesh', not by number")
        if FIELDS[name][2] in CHOICES:  # words ("lognormal"): the coordinates are the words
            floats = [choice_index(name, x) for x in vals]
            check_field(name, floats)
            add(name, values, [CHOICES[FIELDS[name][2]][int(x)] for x in floats], {name: floats},
                {"long_name": FIELDS[name][3].split(":")[0]})
            continue
        if isinstance(vals, np.ndarray):  # a float array: as it is
            floats = vals
        elif set(map(type, vals)) <= {float, int} and all(abs(x) < 2**1023 for x in vals):
            floats = np.asarray(vals, dtype=float).tolist()  # plain numbers: at once
        else:
            check_field(name, vals)  # text, None, complex: named before any conversion
            floats = [float(x) if not isinstance(x, bool) else x for x in vals]
        check_field(name, floats)
        add(name, values, floats, {name: floats}, {"units": SI[FIELDS[name][2]]}
            if FIELDS[name][2] in SI else {})
    for a in axes:
        for k, v in a.fields.items():
            if k in FIELDS:  # (active_params comes from a preset: already valid)
                check_field(k, v)
    for k, v in overrides.items():
        if k in FIELDS:
            check_field(k, v)

    registry = sc.ids
    vids, variant_is_dim = as_list("variant", list(registry) if variant is None else variant)
    for vid in vids:
        sc.variant(vid)
    index = [registry.index(vid) for vid in vids]

    ndim = len(axes)
    leaves = {k: np.asarray(v, dtype=float) for k, v in overrides.items()}
    for i, a in enumerate(axes):
        shape = [1] * ndim
        shape[i] = -1
        for k, v in a.fields.items():
            leaves[k] = np.reshape(np.asarray(v, dtype=float), shape)

    # Steps to target, resolved here: a table (enob, basis, variant) indexed onto the grid.
    table = np.array([[[sc.steps_of(vid, e, b) for vid in registry] for b in bases] for e in enobs])
    dims = [a.name for a in axes]

    def axis_index(dim, size):
        shape = [1] * (ndim + 1)
        if dim in dims:
            shape[dims.index(dim)] = size
            return np.arange(size).reshape(shape)
        return np.zeros(shape, dtype=int)

    steps = table[axis_index("enob", len(enobs)), axis_index("basis", len(bases)),
                  np.arange(len(registry))]
    return Grid(axes=axes, scalars=scalars, scalar_attrs=scalar_attrs, leaves=leaves, steps=steps,
                variants=list(vids), variant_is_dim=variant_is_dim, index=index, extra_coords=extra)
