"""Where bandjax first needs jax: 64-bit floats on, the scenario registered as a PyTree, and
JAX's persistent compilation cache in the user's cache folder.

Every module that uses jax imports this one first; the data modules (:mod:`bandjax.scenario`,
:mod:`bandjax.variants`, :mod:`bandjax.units`, :mod:`bandjax.sweepargs`) never do, so reading a
scenario (the event engine, the CLI's ``--help``) does not load jax.
"""

import functools
import hashlib
import os
import pickle
from pathlib import Path

import jax
import numpy as np

from ._cache import cache_folder, date_unbounded_entries, source_digest, trim, warn_if_unusable
from . import links as _links
from .links import Links
from .scenario import LEAVES, Scenario

# Byte counts of billion-parameter models and sub-microsecond terms need 64-bit floats.
jax.config.update("jax_enable_x64", True)

# A links table is static (hashed by its values: one program a table), but a DataLinks table is
# data: its relative bandwidths and latencies leaves, its names (so K) structure, so a new table of
# the same K reuses the compiled program (bandjax.links.as_data).
jax.tree_util.register_pytree_node(Links, lambda t: ((), t), lambda t, _: t)
jax.tree_util.register_pytree_node(_links.DataLinks, _links.flatten, _links.unflatten)
jax.tree_util.register_dataclass(Scenario, data_fields=[*LEAVES, "links"],
                                 meta_fields=["steps", "variants", "uncertain", "sites"])

# ------------------------------------------------------------------------ compilation cache

# Compilations shorter than this are not written. JAX's own default, 1 s, would keep almost none
# of bandjax's: a report makes 78, most under 0.5 s on 2 cores, and keeping all of them (1.3 MB)
# made a second report in a new process faster than keeping those of 0.1 s or more (23-24 s
# against 30-35 s, the same loaded machine, runs alternated).
CACHE_MIN_COMPILE_S = 0.0

# The cache's bound. Setting one also makes JAX take a file lock around every read and write of
# the folder: without it an entry is written in place, and a second process (two commands at
# once, or the test suite's two workers) can read one half written and crash deserialising it.
# A report keeps about 1.3 MB; the least recently used entries go past 2 GiB.
CACHE_MAX_BYTES = 2 * 2**30


def cache_settings(environ=None, configured_dir=None) -> dict:
    """The JAX options bandjax sets for its persistent compilation cache ({} when it sets none).

    The cache is bandjax's cache folder (:func:`bandjax._cache.cache_folder`:
    ``$BANDJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/bandjax``, else ``~/.cache/bandjax``). Nothing
    is set when ``BANDJAX_NO_CACHE`` is 1, when a cache folder is already configured
    (``configured_dir``: ``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), or when no home folder
    is known. The least compile time worth keeping is set only if the user has not set
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``, and the cache's bound
    (:data:`CACHE_MAX_BYTES`, which locks the folder while an entry is read or written) only if
    the user has not set ``JAX_COMPILATION_CACHE_MAX_SIZE``.
    """
    env = os.environ if environ is None else environ
    path = None if configured_dir else cache_folder(env)
    if path is None:
        return {}
    out = {"jax_compilation_cache_dir": str(path)}
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in env:
        out["jax_persistent_cache_min_compile_time_secs"] = CACHE_MIN_COMPILE_S
    if "JAX_COMPILATION_CACHE_MAX_SIZE" not in env:
        out["jax_compilation_cache_max_size"] = CACHE_MAX_BYTES
    return out


warn_if_unusable()
for _name, _value in cache_settings(configured_dir=jax.config.jax_compilation_cache_dir).items():
    jax.config.update(_name, _value)
if jax.config.jax_compilation_cache_dir and jax.config.jax_compilation_cache_max_size != -1:
    # a folder kept by an unbounded cache (an older bandjax's) would refuse every new entry
    date_unbounded_entries(Path(jax.config.jax_compilation_cache_dir))


@functools.cache
def quick_compile() -> dict:
    """``compiler_options`` for calls whose first run is mostly XLA compiling: the root searches,
    and the sweeps of small grids (:data:`bandjax.grid.QUICK_CELLS`).

    Two options:
    - XLA's older loop emitters on the CPU compile a root search in about half the time of the
      fusion emitters (0.42 s against 0.80 s for the elasticities of a break-even over the budget,
      ``benchmarks/compile_bench.py``) and run it about as fast (1.3e6 against 1.4e6 roots/s in
      ``benchmarks/uncertainty.py``);
    - LLVM's optimisation level 0 (``xla_backend_optimization_level``) on top: the reference
      report's first run (its shared-WAN section left out, both options set for every compile
      through ``XLA_FLAGS``) took 9.6 s, against 12.7 s with the loop emitters alone and 15.0 s
      with neither; a sweep of 7,200 cells compiles in 0.24 s against 0.62 s, then runs in
      1.9 ms against 1.3 ms.
    The dense sweeps and winner maps keep the default, which runs them faster; the queueing
    approximation's one or two calls of a report take these (:mod:`bandjax.queueing`). An XLA that
    does not know an option gets the default ({}).
    """
    return _if_known({"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0})


def _if_known(opts: dict) -> dict:
    """``opts`` where this XLA compiles a small function with them, else {} (the default)."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=opts).lower(1.0).compile()
    except Exception:  # an unknown option, or a jax without compiler_options
        return {}
    return opts


def quick(jitted, options=quick_compile, **jit_kwargs):
    """A second jit of the function under ``jitted`` with ``options()`` as its compiler options
    (:func:`quick_compile`'s by default), its compiled program kept between processes
    (:func:`kept_program`).

    For bandjax's own calls that are never inside a user's trace (they return NumPy values): JAX
    allows compiler options on the outermost jit only, so the public jitted functions keep none and
    stay composable with ``jax.grad``, ``jax.vmap`` and a user's ``jax.jit``.
    """
    fun = jitted.__wrapped__
    compiled = []  # built on the first call: the options are probed then, not at import
    statics = tuple(jit_kwargs.get("static_argnames", ()))

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if not compiled:
            compiled.append(jax.jit(fun, compiler_options=options(), **jit_kwargs))
        kept = kept_program(fun, options(), statics, args, kwargs)
        if kept is None:
            return compiled[0](*args, **kwargs)
        run, out_tree = kept
        dynamic = {k: v for k, v in kwargs.items() if k not in statics}
        return jax.tree.unflatten(out_tree, run(*jax.tree.leaves((args, dynamic))))

    return call


# ------------------------------------------------------------------ compiled programs kept
# JAX's persistent cache keeps XLA's output, but a new process still traces each function and
# lowers it before it can look that up: about two thirds of a second report's own time. bandjax's
# own one-off calls (:func:`quick`) keep their compiled program instead (the XLA executable,
# ``jax.experimental.serialize_executable``), under PROGRAMS_FOLDER in bandjax's cache folder,
# keyed by everything the program is a function of: bandjax's source, the versions of JAX, jaxlib,
# NumPy and Python, the device and the host CPU's features, the compiler options, the function,
# its static arguments, its other arguments' structure (the scenario's tables and variants
# included), shapes and dtypes, and JAX's settings that change a trace (64-bit floats).
# A new process loads the executable and runs it: no tracing, lowering or compiling. The first
# process compiles as it would with no cache and writes the executable once: keeping a traced
# program (jax.export) instead cost a first report 1.3 s of CPU, to export each program and then
# compile the exported one. A file that cannot be read is compiled anew and replaced.
PROGRAMS_FOLDER = "programs"
PROGRAMS_KEEP = 400  # programs kept (10 KB to 1.1 MB each), the least recently used go first
_LOADED: dict = {}  # this process's (run, out_tree), by what decides them
LOADED_KEEP = 256  # programs a process keeps at hand


def _cpu_features() -> str:
    """The host CPU's feature flags (Linux), which an XLA executable for the CPU is compiled for;
    '' where they cannot be read (the machine's name and kind still key the program)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line for line in f if line.startswith(("flags", "Features"))), "")
    except OSError:
        flags = ""
    return f"{platform.machine()} {platform.processor()} {flags.strip()}"


@functools.cache
def _program_digest() -> str:
    """bandjax's source (every module of the package), and what else decides a compiled program."""
    import sys
    from pathlib import Path

    import jaxlib

    device = jax.devices()[0]
    return source_digest(Path(__file__).parent, "**/*.py",
                         (jax.__version__, jaxlib.__version__, np.__version__, sys.version,
                          device.platform, device.device_kind, _cpu_features()))


def kept_program(fun, options: dict, statics: tuple, args: tuple, kwargs: dict):
    """(run, out_tree) for ``fun`` at these arguments: ``run`` takes the flat leaves of the
    arguments but the static ones; its compiled program is this process's, else the one kept in
    bandjax's cache folder, else compiled now with ``options`` and kept there. None (the caller
    calls its own jit) where nothing is kept: the cache is off, a static argument came by position,
    or an argument cannot be described."""
    folder = cache_folder()
    names = fun.__code__.co_varnames[:fun.__code__.co_argcount]
    if folder is None or any(name in statics for name in names[:len(args)]):
        return None
    dynamic = {k: v for k, v in kwargs.items() if k not in statics}
    static_kw = {k: v for k, v in kwargs.items() if k in statics}
    leaves, tree = jax.tree.flatten((args, dynamic))
    # 64-bit floats on or off (a float32 sweep turns them off for its call), and JAX's other
    # settings that change a trace, decide the program
    config = jax.config
    settings = (bool(config.jax_enable_x64), str(config.jax_numpy_dtype_promotion),
                str(config.jax_default_matmul_precision), str(config.jax_numpy_rank_promotion))
    seen = (fun, settings, tuple(sorted(options.items())),
            tuple(sorted((k, repr(v)) for k, v in static_kw.items())), tree,
            tuple(map(_described, leaves)))
    try:
        if seen in _LOADED:
            return _LOADED[seen]
        key = hashlib.sha256(pickle.dumps(
            (_program_digest(), fun.__module__, fun.__qualname__, seen[1:]))).hexdigest()
    except Exception:  # noqa: BLE001 - an argument that cannot be hashed or pickled: not kept
        return None
    path = folder / PROGRAMS_FOLDER / f"{key}.bin"
    kept = _load(path, key)
    if kept is None:
        out_trees = []

        def flat(*flat_leaves):
            a, d = jax.tree.unflatten(tree, flat_leaves)
            out, out_tree = jax.tree.flatten(fun(*a, **d, **static_kw))
            out_trees.append(out_tree)
            return out

        try:
            with _not_in_jax_cache():
                compiled = jax.jit(flat, compiler_options=options).lower(*leaves).compile()
        except Exception:  # noqa: BLE001 - a program that cannot be compiled apart: the caller's jit
            return None
        kept = compiled, out_trees[-1]
        _keep(path, key, *kept)
    while len(_LOADED) >= LOADED_KEEP:  # the oldest first: dicts keep their insertion order
        del _LOADED[next(iter(_LOADED))]
    _LOADED[seen] = kept
    return kept


def _not_in_jax_cache():
    """A context in which this thread's compiles are not written to JAX's persistent cache (a
    program :func:`kept_program` keeps itself: writing it there too serialised each executable
    twice, 0.3 s of a first report's main process); no change where this JAX has no such
    thread-local setting."""
    import contextlib
    import math

    try:
        from jax._src import config as jax_config

        return jax_config.persistent_cache_min_compile_time_secs(math.inf)
    except Exception:  # noqa: BLE001 - written to both: slower, the same programs
        return contextlib.nullcontext()


def _described(x):
    """What a traced program sees of an argument: a Python number's kind (JAX takes it weakly
    typed), else its type, shape, dtype and weak typing."""
    kind = type(x)
    if kind is np.ndarray:
        return kind, x.shape, x.dtype
    if kind in (bool, int, float, complex):
        return kind
    return kind, np.shape(x), getattr(x, "dtype", None), getattr(x, "weak_type", False)


def _load(path, key: str):
    from jax.experimental import serialize_executable

    try:
        kept_key, blob, in_tree, exec_out_tree, out_tree = pickle.loads(path.read_bytes())
        if kept_key != key:  # another program's file under this name
            return None
        compiled = serialize_executable.deserialize_and_load(blob, in_tree, exec_out_tree)
        os.utime(path)  # recently used: kept longest
    except Exception:  # noqa: BLE001 - absent, partial or from elsewhere: compiled anew
        return None
    return compiled, out_tree


def _keep(path, key: str, compiled, out_tree) -> None:
    from jax.experimental import serialize_executable

    from ._io import atomic_write_bytes

    try:
        blob, in_tree, exec_out_tree = serialize_executable.serialize(compiled)
        atomic_write_bytes(path, pickle.dumps((key, blob, in_tree, exec_out_tree, out_tree)))
        trim(path.parent, "*.bin", PROGRAMS_KEEP)
    except Exception:  # noqa: BLE001 - a cache that cannot be written, or a program that cannot
        pass  # be serialised, is skipped
