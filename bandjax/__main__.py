import sys

# first, before anything loads: a Ctrl-C while the command's modules import is one line and 130
from ._io import install_interrupt

install_interrupt()

from .cli import main  # noqa: E402

sys.exit(main())
