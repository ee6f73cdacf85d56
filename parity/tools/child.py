"""What a self-check child runs first, and the environment it runs in.

Shared by the fresh-interpreter launch (``parity.tools.selfcheck_runner.run_suite``) and the
warm-started one (``parity.tools.warm_start``), so that both children are the same: the bootstrap
records where ``hyper_parallel`` and ``parity`` were imported from (the probe: a child that tested
the editable install instead of its planted copy is an error, never a green plant), then runs
``python -m parity`` with the child's arguments.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["_BOOTSTRAP", "_PROBE_EXIT", "_child_env"]

_PROBE_EXIT = 97
_RENDEZVOUS_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PYTHONSTARTUP")

# Runs inside the child, before the CLI: where do the two packages come from?
_BOOTSTRAP = r"""
import json, os, runpy, sys
import hyper_parallel, parity
root = os.path.realpath(os.environ["PARITY_SELFCHECK_COPY"])
found = {m.__name__: os.path.realpath(m.__file__) for m in (hyper_parallel, parity)}
with open(os.environ["PARITY_SELFCHECK_PROBE"], "w", encoding="utf-8") as fh:
    json.dump({"root": root, "modules": found, "python": sys.executable}, fh)
outside = {k: v for k, v in found.items() if not v.startswith(root + os.sep)}
if outside:
    sys.stderr.write(
        "selfcheck probe: %s imported from outside the copy %s\n"
        % (", ".join("%s from %s" % kv for kv in outside.items()), root)
    )
    raise SystemExit(PROBE_EXIT)
sys.argv = ["python -m parity", *sys.argv[1:]]
runpy.run_module("parity", run_name="__main__", alter_sys=True)
""".replace("PROBE_EXIT", str(_PROBE_EXIT))


def _child_env(copy: Path, probe: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(copy) + (os.pathsep + old if old else "")
    env.setdefault("HYPOTHESIS_PROFILE", "selfcheck")  # ci without shrinking: red or green is the question
    # One case worker per run: the plants are what runs in parallel (`-- -j N` overrides it).
    env["PARITY_JOBS"] = "1"
    env["PARITY_SELFCHECK_COPY"] = str(copy)
    env["PARITY_SELFCHECK_PROBE"] = str(probe)
    # A process group of the caller (a test process, say) must not leak its rendezvous into a run.
    for name in _RENDEZVOUS_VARS:
        env.pop(name, None)
    return env
