"""The MindSpore model's RoPE frequencies do not depend on the CPU: exact Python, not numpy's kernels.

numpy's float32 ``power`` differs between its AVX-512 and AVX2 code paths (5 of 32 entries at
rotary dim 64), so ``inv_freq`` is computed in decimal arithmetic (``inv_freq_values``) and rounded
once to float32. Each check runs in a fresh interpreter, as the other MindSpore model tests do.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")
pytest.importorskip("torch")

from tests._subprocess import REPO, child_env

_CHILD = """
import json, struct
import numpy as np
import torch
from hyper_parallel.models.qwen3_5 import model_mindspore as mm

out = {}
for r, theta in ((8, 1e7), (64, 1e7), (128, 1e4)):
    mine = [struct.pack("<f", v).hex() for v in mm.inv_freq_values(r, theta)]
    ref = 1.0 / (theta ** (torch.arange(0, r, 2, dtype=torch.int64).float() / r))
    torch_bits = [struct.pack("<f", float(v)).hex() for v in ref.tolist()]
    exponent = np.arange(0, r, 2, dtype=np.int64).astype(np.float32) / np.float32(r)
    npv = np.float32(1.0) / np.power(np.float32(theta), exponent, dtype=np.float32)
    out[f"{r}/{theta:g}"] = {"mine": mine, "torch": torch_bits, "numpy": [struct.pack("<f", float(v)).hex() for v in npv],
                             "buffer": [struct.pack("<f", float(v)).hex() for v in mm._inv_freq(r, theta).asnumpy()]}
print("RESULT:" + json.dumps(out))
"""


def _run(**env: str) -> dict:
    child = child_env(**env)
    for name, value in env.items():
        if value == "":
            child.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=REPO, env=child, capture_output=True, text=True, timeout=600
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT:"))


def test_inv_freq_is_exact_python_and_equals_torchs_avx2_kernels():
    pinned = _run()  # the test session's portable profile: AVX2 kernels, numpy without AVX-512
    native = _run(NPY_DISABLE_CPU_FEATURES="", ATEN_CPU_CAPABILITY="", GLIBC_TUNABLES="")
    for key, values in pinned.items():
        assert values["mine"] == native[key]["mine"] == values["buffer"], key
        assert values["mine"] == values["torch"], key  # torch under the portable profile
        assert values["mine"] == values["numpy"], key  # numpy without its AVX-512 paths
