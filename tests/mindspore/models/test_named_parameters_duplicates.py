"""``named_parameters(remove_duplicate=False)`` lists a tied Parameter under each name, as torch does.

The checkpoint component asks for it when it loads weights (``weights_path``); the check runs in a
fresh interpreter, as the other MindSpore model tests do.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")

from tests._subprocess import REPO, child_env

_CHILD = """
import json
from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config
m = mm.build_from_config(Qwen3_5Config(**FLAVORS["debug"]))
once = [n for n, _ in m.named_parameters()]
every = [(n, id(p)) for n, p in m.named_parameters(remove_duplicate=False)]
print("RESULT:" + json.dumps({"once": once, "every": every, "embed": id(m.model.embed_tokens.weight)}))
"""


def test_a_tied_weight_is_listed_under_both_names():
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=600
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT:"))
    names = [n for n, _ in out["every"]]
    assert sorted(set(names) - set(out["once"])) == ["lm_head.weight"]
    assert [n for n in names if n in out["once"]] == out["once"]  # same order
    ids = dict(out["every"])
    assert ids["lm_head.weight"] == ids["model.embed_tokens.weight"] == out["embed"]
