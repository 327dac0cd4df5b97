"""Where bandjax first needs jax: 64-bit floats on, and the scenario registered as a PyTree.

Every module that uses jax imports this one first; the data modules (:mod:`bandjax.scenario`,
:mod:`bandjax.variants`, :mod:`bandjax.units`, :mod:`bandjax.sweepargs`) never do, so reading a
scenario (the event engine, the CLI's ``--help``) does not load jax.
"""

import functools

import jax

from .scenario import LEAVES, Scenario

# Byte counts of billion-parameter models and sub-microsecond terms need 64-bit floats.
jax.config.update("jax_enable_x64", True)

jax.tree_util.register_dataclass(Scenario, data_fields=list(LEAVES), meta_fields=["steps", "variants", "uncertain", "links"])


@functools.cache
def quick_compile() -> dict:
    """``compiler_options`` for the root searches, whose first call is mostly XLA compiling.

    XLA's older loop emitters on the CPU compile a root search in about half the time of the
    fusion emitters (0.42 s against 0.80 s for the elasticities of a break-even over the budget;
    ``benchmarks/compile_bench.py``) and run it about as fast (1.3e6 against 1.4e6 roots/s in
    ``benchmarks/uncertainty.py``); the dense sweeps and winner maps keep the default, which runs
    them faster. An XLA that no longer knows the option gets the default ({}).
    """
    opts = {"xla_cpu_use_fusion_emitters": False}
    try:
        jax.jit(lambda x: x + 1, compiler_options=opts).lower(1.0).compile()
    except Exception:  # an unknown option, or a jax without compiler_options
        return {}
    return opts


def quick(jitted, **jit_kwargs):
    """A second jit of the function under ``jitted`` with :func:`quick_compile`'s options.

    For bandjax's own calls that are never inside a user's trace (they return NumPy values): JAX
    allows compiler options on the outermost jit only, so the public jitted functions keep none and
    stay composable with ``jax.grad``, ``jax.vmap`` and a user's ``jax.jit``.
    """
    fun = jitted.__wrapped__
    compiled = []  # built on the first call: the options are probed then, not at import

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if not compiled:
            compiled.append(jax.jit(fun, compiler_options=quick_compile(), **jit_kwargs))
        return compiled[0](*args, **kwargs)

    return call
