"""Where bandjax first needs jax: 64-bit floats on, the scenario registered as a PyTree, and
JAX's persistent compilation cache in the user's cache folder.

Every module that uses jax imports this one first; the data modules (:mod:`bandjax.scenario`,
:mod:`bandjax.variants`, :mod:`bandjax.units`, :mod:`bandjax.sweepargs`) never do, so reading a
scenario (the event engine, the CLI's ``--help``) does not load jax.
"""

import functools
import os

import jax

from ._cache import cache_folder
from .scenario import LEAVES, Scenario

# Byte counts of billion-parameter models and sub-microsecond terms need 64-bit floats.
jax.config.update("jax_enable_x64", True)

jax.tree_util.register_dataclass(Scenario, data_fields=list(LEAVES), meta_fields=["steps", "variants", "uncertain", "links"])

# ------------------------------------------------------------------------ compilation cache

# Compilations shorter than this are not written. JAX's own default, 1 s, would keep almost none
# of bandjax's: a report makes 78, most under 0.5 s on 2 cores, and keeping all of them (1.3 MB)
# made a second report in a new process faster than keeping those of 0.1 s or more (23-24 s
# against 30-35 s, the same loaded machine, runs alternated).
CACHE_MIN_COMPILE_S = 0.0


def cache_settings(environ=None, configured_dir=None) -> dict:
    """The JAX options bandjax sets for its persistent compilation cache ({} when it sets none).

    The cache is bandjax's cache folder (:func:`bandjax._cache.cache_folder`:
    ``$BANDJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/bandjax``, else ``~/.cache/bandjax``). Nothing
    is set when ``BANDJAX_NO_CACHE`` is 1, when a cache folder is already configured
    (``configured_dir``: ``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), or when no home folder
    is known. The least compile time worth keeping is set only if the user has not set
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``.
    """
    env = os.environ if environ is None else environ
    path = None if configured_dir else cache_folder(env)
    if path is None:
        return {}
    out = {"jax_compilation_cache_dir": str(path)}
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in env:
        out["jax_persistent_cache_min_compile_time_secs"] = CACHE_MIN_COMPILE_S
    return out


for _name, _value in cache_settings(configured_dir=jax.config.jax_compilation_cache_dir).items():
    jax.config.update(_name, _value)


@functools.cache
def quick_compile() -> dict:
    """``compiler_options`` for calls whose first run is mostly XLA compiling: the root searches,
    and the sweeps of small grids (:data:`bandjax.grid.QUICK_CELLS`).

    Two options, each measured on this code (``benchmarks/compile_bench.py``):
    - XLA's older loop emitters on the CPU compile a root search in about half the time of the
      fusion emitters (0.42 s against 0.80 s for the elasticities of a break-even over the budget)
      and run it about as fast (1.3e6 against 1.4e6 roots/s in ``benchmarks/uncertainty.py``);
    - LLVM's optimisation level 0 (``xla_backend_optimization_level``) takes about a third off
      what is left: the reference report's closed forms, searches and sweeps compile in 9.6 s
      against 15.0 s (its shared-WAN section left out), and a sweep of 7,200 cells compiles in
      0.24 s against 0.62 s, then runs in 1.9 ms against 1.3 ms.
    The dense sweeps, winner maps and the queueing approximation keep the default, which runs them
    faster. An XLA that does not know an option gets the default ({}).
    """
    opts = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}
    try:
        jax.jit(lambda x: x + 1, compiler_options=opts).lower(1.0).compile()
    except Exception:  # an unknown option, or a jax without compiler_options
        return {}
    return opts


@functools.cache
def loop_emitters() -> dict:
    """``compiler_options`` with XLA's older loop emitters alone, LLVM optimising as usual: for a
    function whose run costs about what its compile does. The queueing approximation of the
    report's 30 loads compiles in 2.6 s of CPU against 3.5 s and runs in 0.41 s against 0.38 s
    (CPU seconds, one process, the best of 3 runs). {} where XLA does not know the option."""
    opts = {"xla_cpu_use_fusion_emitters": False}
    try:
        jax.jit(lambda x: x + 1, compiler_options=opts).lower(1.0).compile()
    except Exception:  # an unknown option, or a jax without compiler_options
        return {}
    return opts


def quick(jitted, options=quick_compile, **jit_kwargs):
    """A second jit of the function under ``jitted`` with ``options()`` as its compiler options
    (:func:`quick_compile`'s by default).

    For bandjax's own calls that are never inside a user's trace (they return NumPy values): JAX
    allows compiler options on the outermost jit only, so the public jitted functions keep none and
    stay composable with ``jax.grad``, ``jax.vmap`` and a user's ``jax.jit``.
    """
    fun = jitted.__wrapped__
    compiled = []  # built on the first call: the options are probed then, not at import

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if not compiled:
            compiled.append(jax.jit(fun, compiler_options=options(), **jit_kwargs))
        return compiled[0](*args, **kwargs)

    return call
