"""MindSpore platform placeholder: the backend is a later issue.

Importing this module raises ``ImportError`` unless MindSpore is importable, so that
``get_platform()`` falls back to torch when the variable is unset.
"""

from __future__ import annotations

import mindspore  # noqa: F401  (ImportError here is the signal get_platform() relies on)


class MindSporePlatform:
    """Not implemented yet; selecting it explicitly fails loudly rather than half-working."""

    name = "mindspore"

    def __init__(self) -> None:
        raise ImportError("the MindSpore platform is not implemented yet; set HYPER_PARALLEL_PLATFORM=torch")
