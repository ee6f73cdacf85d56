"""Two slow cases for the signal tests: each records its process and a child process it starts.

``PARITY_TEST_PIDS`` names a folder: each case writes ``<pid>.worker`` (the process running it) and
``<pid>.child`` (a sleeping subprocess it started, as a case starting ranks or a launcher does),
then sleeps ``PARITY_TEST_SLEEP`` seconds. The test signals the harness and checks that none of
these processes is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from parity import canonical
from parity.cases import Registry

REGISTRY = Registry(source="tests.parity.parity_signal_cases:REGISTRY")


def sleeper() -> list:
    folder = Path(os.environ["PARITY_TEST_PIDS"])
    seconds = float(os.environ.get("PARITY_TEST_SLEEP", "0"))
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds!r})"])
    (folder / f"{child.pid}.child").write_text("")
    (folder / f"{os.getpid()}.worker").write_text("")
    try:
        time.sleep(seconds)
    finally:
        child.kill()
        child.wait()
    return canonical.lr_curve([0.1])


REGISTRY.pair("sleep_a", kind="lr_curve", seed=0, legacy=sleeper, new=sleeper)
REGISTRY.pair("sleep_b", kind="lr_curve", seed=0, legacy=sleeper, new=sleeper)
