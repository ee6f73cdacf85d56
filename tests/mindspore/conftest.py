"""MindSpore platform tests: skipped as a folder when MindSpore is not installed.

``find_spec`` does not import MindSpore, so the torch-only suite pays nothing for this folder.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("mindspore") is None:
    collect_ignore_glob = ["test_*.py", "*/test_*.py"]
