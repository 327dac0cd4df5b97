"""Named parameters of a scenario, set and read by name: a numeric field (``wan_Bps``) or a
variant's fixed time (``fixed_s.<variant id>``).

The break-evens, the calibration and the uncertain inputs all substitute parameters this way; it
sits below all of them and imports nothing of bandjax (a scenario is any object with ``replace``
and ``fixed_s``, as :class:`bandjax.scenario.Scenario` is).
"""

from __future__ import annotations

FIXED_PREFIX = "fixed_s."  # fixed_s.<variant id>: that variant's fixed time a step (s)


def with_parameters(sc, values: dict):
    """``sc`` with each named field or ``fixed_s.<variant id>`` set, in one substitution
    (traceable; values may be arrays)."""
    fixed = {k[len(FIXED_PREFIX):]: v for k, v in values.items() if k.startswith(FIXED_PREFIX)}
    fields = {k: v for k, v in values.items() if not k.startswith(FIXED_PREFIX)}
    if fixed:
        fields["fixed_s"] = {**sc.fixed_s, **fixed}
    return sc.replace(**fields)


def scenario_parameter(sc, name: str):
    """The value of a field or ``fixed_s.<variant id>`` of ``sc``."""
    if name.startswith(FIXED_PREFIX):
        return sc.fixed_s[name[len(FIXED_PREFIX):]]
    return getattr(sc, name)
