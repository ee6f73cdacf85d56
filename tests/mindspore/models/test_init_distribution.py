"""The MindSpore model's ``init_weights`` draws from the torch model's distribution, parameter by parameter.

Bits cannot match (the two RNGs differ), so each parameter's sample mean and sample standard
deviation are compared across the frameworks under a bound derived from the sample size.

Derivation. Let one parameter have ``n`` elements drawn i.i.d. from a distribution with variance
``s2`` and kurtosis ``kappa`` (fourth central moment over ``s2**2``), and let each framework draw
one independent sample of it.

- Mean: each sample mean has variance ``s2 / n`` (it is a sum of ``n`` i.i.d. terms), so the
  difference of the two has standard deviation ``sqrt(2 * s2 / n)``; by the central limit theorem
  it is close to normal for the sizes here (n >= 2048).
- Standard deviation: the sample variance has variance ``(kappa - 1) * s2**2 / n`` to first order;
  the delta method (``d sqrt(v) = dv / (2 sqrt(v))``) gives the sample standard deviation the
  variance ``(kappa - 1) * s2 / (4 n)``, so the difference of the two has standard deviation
  ``sqrt((kappa - 1) * s2 / (2 n))``. (For ``U(-b, b)``: ``s2 = b**2 / 3``, ``kappa = 9 / 5``.)

``s2`` and ``kappa`` are estimated from the two samples pooled, so the bound assumes nothing about
the distribution. A difference beyond ``K`` of those standard deviations fails: with ``K = 6`` a
normal deviate passes with probability ``1 - 2e-9`` per check, so the ~30 checks here have no
practical false alarms, while the old MindSpore rule (``kaiming_uniform_(a=sqrt(5))``, std about
2.45x narrower) misses by hundreds of deviations. Vectors (norm weights, biases) start at zero on
both sides: compared exactly.

Runs in a fresh interpreter that has both frameworks (the MindSpore venv), like the other
MindSpore model tests.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mindspore")
pytest.importorskip("torch")

from tests._subprocess import REPO, child_env

K = 6.0

_CHILD = """
import json, math
import numpy as np
import torch
import mindspore as ms
from hyper_parallel.models.qwen3_5 import model as tm
from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config

PLANT = %(plant)r
if PLANT == "old_slope":  # the rule before the fix: kaiming_uniform_(a=sqrt(5))
    _bound = mm._kaiming_bound
    mm._kaiming_bound = lambda shape: _bound(shape, a=math.sqrt(5.0))
elif PLANT == "shifted":  # a range [-0.9 b, 1.1 b): the mean moves by 0.1 b
    _bound = mm._kaiming_bound
    _rand = mm.ops.rand
    mm.ops.rand = lambda *shape, dtype=None: _rand(*shape, dtype=dtype) + 0.05

cfg = Qwen3_5Config(**FLAVORS["debug"])
torch.manual_seed(0)
t = tm.build_from_config(cfg)
t.init_weights()
m = mm.build_from_config(cfg)
ms.set_seed(0)
m.init_weights()
theirs = {n: p.asnumpy().astype(np.float64).reshape(-1) for n, p in m.named_parameters()}
out = {}
for name, p in t.named_parameters():
    a = p.detach().numpy().astype(np.float64).reshape(-1)
    b = theirs[name]
    pooled = np.concatenate([a - a.mean(), b - b.mean()])
    s2 = float((pooled ** 2).mean())
    kappa = float((pooled ** 4).mean() / s2 ** 2) if s2 > 0 else 0.0
    out[name] = {"n": int(a.size), "n_ms": int(b.size), "mean": [float(a.mean()), float(b.mean())],
                 "std": [float(a.std()), float(b.std())], "s2": s2, "kappa": kappa,
                 "zero": [bool((a == 0).all()), bool((b == 0).all())]}
print("RESULT:" + json.dumps(out))
"""


def _stats(plant: str = "") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD % {"plant": plant})],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT:"))


def mean_bound(s2: float, n: int, k: float = K) -> float:
    """``k`` standard deviations of the difference of two sample means of ``n`` elements."""
    return k * math.sqrt(2.0 * s2 / n)


def std_bound(s2: float, kappa: float, n: int, k: float = K) -> float:
    """``k`` standard deviations of the difference of two sample standard deviations (delta method)."""
    return k * math.sqrt(max(kappa - 1.0, 0.0) * s2 / (2.0 * n))


def violations(stats: dict) -> list[str]:
    """Every parameter whose mean or std differs beyond its bound, or whose zero vector is not zero."""
    bad = []
    for name, s in stats.items():
        if s["n"] != s["n_ms"]:
            bad.append(f"{name}: {s['n']} vs {s['n_ms']} elements")
            continue
        if s["zero"][0] or s["zero"][1]:
            if s["zero"] != [True, True]:
                bad.append(f"{name}: zeros on one side only (torch {s['zero'][0]}, MindSpore {s['zero'][1]})")
            continue
        d_mean = abs(s["mean"][0] - s["mean"][1])
        d_std = abs(s["std"][0] - s["std"][1])
        mb, sb = mean_bound(s["s2"], s["n"]), std_bound(s["s2"], s["kappa"], s["n"])
        if not d_mean <= mb:
            bad.append(
                f"{name}: mean torch {s['mean'][0]:.3e} vs MindSpore {s['mean'][1]:.3e} (bound {mb:.2e})"
            )
        if not d_std <= sb:
            bad.append(f"{name}: std torch {s['std'][0]:.4e} vs MindSpore {s['std'][1]:.4e} (bound {sb:.2e})")
    return bad


def test_bounds_follow_the_sample_size():
    # U(-b, b) with b = 1, n = 3000: sd of a mean difference sqrt(2/3/3000); of a std difference
    # sqrt(0.8 / 3 / 6000).
    assert mean_bound(1 / 3, 3000, k=1) == pytest.approx(math.sqrt(2 / 9000))
    assert std_bound(1 / 3, 9 / 5, 3000, k=1) == pytest.approx(math.sqrt(0.8 / 18000))


@pytest.fixture(scope="module")
def stats() -> dict:
    return _stats()


def test_every_parameter_follows_the_torch_distribution(stats):
    assert len(stats) >= 10
    assert any(s["zero"] == [True, True] for s in stats.values())  # norm weights
    assert violations(stats) == []


@pytest.mark.parametrize("plant", ["old_slope", "shifted"])
def test_a_planted_init_rule_is_named(plant):
    bad = violations(_stats(plant))
    matrices = "model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"
    for name in matrices:
        assert any(
            line.startswith(name + ": " + ("std" if plant == "old_slope" else "mean")) for line in bad
        ), bad
