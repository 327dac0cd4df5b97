"""What a report is about: its title and the one line that sets out its cluster.

Read from the scenario the core section records (``setup["scenario"]``, the scenario as its TOML),
so results.md, ``bandjax report`` and the page say the same from results.json alone. The study's
own framing (its question as the title, "the study's scenario") belongs to the study's reference
scenario (:func:`bandjax.reference`) alone; any other scenario is named by its own cluster: K data
centres (their names where the scenario names them), the GPU, the model and the workers per DC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...scenario import GPUS, PRESETS, STUDY_GPU_FLOPs, Scenario, from_toml_dict, reference, to_toml_dict
from .common import Results, count, g3, g4

STUDY_TITLE = "When does computing the band in transit pay?"


@dataclass(frozen=True)
class Frame:
    """A scenario's cluster in words. ``names``: the DCs' names where links or sites name them
    (else empty); ``workers``: n per DC (one value where all are equal); ``gpu``: the GPU's
    name (empty for the study's calibrated GPU); ``utilisation``: its model-FLOPs utilisation
    (unit 1); ``model``: the model in words; ``compute_ms``: GPU compute per step (per DC where
    sites differ)."""

    reference: bool
    dcs: int
    names: tuple[str, ...]
    workers: tuple[int, ...]
    gpu: str
    utilisation: float
    model: str
    compute_ms: tuple[float, ...]
    topology: str

    @property
    def cluster(self) -> str:
        """'2 DCs x 4 workers', '3 DCs (us-east, eu-west, ap-south) x 8 workers', or with sites
        that differ, each DC's own count."""
        named = f" ({', '.join(self.names)})" if self.names else ""
        if len(self.workers) == 1:
            n = self.workers[0]
            return f"{self.dcs} DCs{named} x {n} worker{'s' if n != 1 else ''}"
        each = ", ".join(f"{w} at {d}" for w, d in zip(self.workers, self.names))
        return f"{self.dcs} DCs{named}, workers {each}"

    @property
    def title(self) -> str:
        """The study's question for the reference scenario; else what the scenario trains where."""
        if self.reference:
            return STUDY_TITLE
        where = f" ({', '.join(self.names)})" if self.names else ""
        gpu = f" {self.gpu}" if self.gpu and len(self.compute_ms) == 1 else ""
        return (f"Syncing {self.model} across {self.dcs} data centres{where}: "
                f"{_workers_words(self.workers)}{gpu} workers per DC")

    @property
    def setup(self) -> str:
        """One sentence: cluster, GPU and its compute a step, model, WAN topology."""
        c = self.compute_ms
        compute = (f"{g4(c[0])} ms of compute a step" if len(c) == 1 else
                   f"{g4(min(c))} to {g4(max(c))} ms of compute a step by DC")
        N = sum(self.workers) if len(self.workers) > 1 else self.dcs * self.workers[0]
        gpu = ("GPUs that differ by DC" if len(c) > 1 else
               f"{self.gpu} GPUs at {g3(100 * self.utilisation)}% utilisation" if self.gpu
               else "the study's calibrated GPU")
        return (f"{self.cluster} (N = {N}), {gpu} ({compute}), "
                f"{self.model}, {self.topology} WAN")


def of_scenario(sc: Scenario) -> Frame:
    """The frame of a scenario (as :func:`of_toml` reads it back from results.json)."""
    return of_toml(to_toml_dict(sc))


def of_toml(table: dict) -> Frame:
    """The frame of a scenario given as its TOML mapping (``setup["scenario"]`` of the core
    section); the reference scenario is the one whose TOML is the reference's."""
    sc = from_toml_dict(table)
    names: tuple[str, ...] = ()
    if sc.sites is not None:
        names = tuple(sc.sites.names)
        workers = tuple(int(n) for n in sc.sites.workers)
        compute = tuple(float(x) * 1e3 for x in sc.sites.compute_s(float(sc.gpu_compute_s)))
    else:
        workers = (int(float(sc.workers_per_dc)),)
        compute = (float(sc.gpu_compute_s) * 1e3,)
    if sc.links is not None:
        names = tuple(sc.links.names)
    if len(set(workers)) == 1:
        workers = workers[:1]
    if len(set(compute)) == 1:
        compute = compute[:1]
    return Frame(reference=table == to_toml_dict(reference()), dcs=int(float(sc.dcs)),
                 names=names, workers=workers, gpu=gpu_name(sc),
                 utilisation=float(sc.utilisation), model=model_words(sc),
                 compute_ms=compute, topology=table["cluster"]["topology"])


def of_results(results) -> Frame | None:
    """The frame of a report's results (typed or JSON), or None where they hold no core section
    or its scenario cannot be read back."""
    core = Results.of(results).core
    if core is None:
        return None
    try:
        return of_toml(core.setup["scenario"])
    except Exception:  # noqa: BLE001 - a report that names no readable scenario has no frame
        return None


def gpu_name(sc: Scenario) -> str:
    """'H100' for a preset, '500 TFLOP/s-peak' for another peak, '' for the study's calibrated
    GPU (its effective rate at utilisation 1)."""
    peak = float(sc.gpu_peak_FLOPs)
    if math.isclose(peak, STUDY_GPU_FLOPs, rel_tol=1e-9) and float(sc.utilisation) == 1.0:
        return ""
    name = next((k.upper() for k, g in GPUS.items()
                 if math.isclose(peak, g.peak_FLOPs, rel_tol=1e-9)), None)
    return name if name is not None else f"{g4(peak / 1e12)} TFLOP/s-peak"


def model_words(sc: Scenario) -> str:
    """'llama3-8b (8.03 B parameters)' for a preset, else 'a 123 M-parameter model'."""
    P = float(sc.params)
    name = next((k for k, p in PRESETS.items() if math.isclose(P, p, rel_tol=1e-12)), None)
    if name == "study":
        return f"the study's {count(P)}-parameter model"
    return f"{name} ({count(P)} parameters)" if name else f"a {count(P)}-parameter model"


def _workers_words(workers: tuple[int, ...]) -> str:
    return str(workers[0]) if len(workers) == 1 else f"{min(workers)} to {max(workers)}"
