"""Two doors the other hostile-value tests leave shut by other routes: a variant repeated in the
need question's ``variant``, and a delayed variant added to a scenario that syncs every step."""

from __future__ import annotations

import pytest

import bandjax as bj

SC = bj.reference()


def test_required_bandwidth_refuses_a_variant_twice():
    with pytest.raises(ValueError) as e:
        bj.required_bandwidth(SC, 0.9, variant=["adamw", "adamw"])
    assert "variant = ['adamw', 'adamw']" in str(e.value)
    assert "'adamw' given more than once" in str(e.value)


def test_delayed_variant_needs_room_in_H():
    """delay = 5 at the scenario's H = 1 (no H set): refused when added, naming delay and H."""
    delayed = bj.Variant("late", "late", "late", payload="dense", collective="ring_allreduce",
                         delay=5)
    assert float(SC.sync_every_H) == 1.0
    with pytest.raises(ValueError) as e:
        SC.with_variant(delayed)
    for n in ("[variants.late]", "delay = 5 with H = 1", "at most H - 1"):
        assert n in str(e.value), (n, str(e.value))
    at = SC.replace(sync_every_H=6.0).with_variant(delayed)  # room for 5 steps of delay
    assert float(at.sync_every_H) == 6.0
