"""Where bandjax first needs jax: 64-bit floats on, and the scenario registered as a PyTree.

Every module that uses jax imports this one first; the data modules (:mod:`bandjax.scenario`,
:mod:`bandjax.variants`, :mod:`bandjax.units`, :mod:`bandjax.sweepargs`) never do, so reading a
scenario (the event engine, the CLI's ``--help``) does not load jax.
"""

import jax

from .scenario import LEAVES, Scenario

# Byte counts of billion-parameter models and sub-microsecond terms need 64-bit floats.
jax.config.update("jax_enable_x64", True)

jax.tree_util.register_dataclass(Scenario, data_fields=list(LEAVES), meta_fields=["steps", "variants", "uncertain"])
