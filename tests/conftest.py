"""Strict numerics for every test: 64-bit floats, warnings are errors (pyproject filterwarnings)."""

import jax

jax.config.update("jax_enable_x64", True)
