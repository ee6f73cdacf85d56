"""``python -m parity``: see ``parity.cli``."""

from parity.cli import main

raise SystemExit(main(reexec=True))
