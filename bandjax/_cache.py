"""bandjax's cache folder: where JAX's compiled functions, the report's figures and the event
engine's runs are kept between processes (no jax here: the event engine's workers read it too)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_OFF_ENV = "BANDJAX_NO_CACHE"  # set to 1 (or true, yes): no cache from bandjax
CACHE_DIR_ENV = "BANDJAX_CACHE_DIR"  # a folder for the cache instead of the default
_OFF = ("", "0", "false", "no", "off")


def cache_folder(environ=None) -> Path | None:
    """``$BANDJAX_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/bandjax`` (an absolute
    ``XDG_CACHE_HOME``), else ``~/.cache/bandjax``: the user's cache folder, never the working
    directory. None when ``BANDJAX_NO_CACHE`` is 1 (or true, yes, on) or no home folder is known."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_OFF_ENV, "").strip().lower() not in _OFF:
        return None
    if env.get(CACHE_DIR_ENV):
        path = Path(env[CACHE_DIR_ENV]).expanduser().absolute()
    else:
        xdg = env.get("XDG_CACHE_HOME", "")
        if xdg and os.path.isabs(xdg):
            base = Path(xdg)
        else:
            try:
                base = Path.home() / ".cache"
            except RuntimeError:  # no home folder known
                return None
        path = base / "bandjax"
    return path if path.is_absolute() else None
