"""Tier B over long horizons: a library drift that moves a bit late in a run is caught, not absorbed.

- ``long_curve``: HyperTrainer on the debug recipe for :data:`CURVE_STEPS` steps (dummy data, no
  checkpoints): losses, grad norms and LR per step, on each backend.
- ``long_lr``: the LR scheduler component's cosine curve over :data:`LR_STEPS` steps (torch: the
  LR lambda is the same Python on both backends, and 10,000 optimizer steps cost seconds). Its values
  come from libm's ``cos`` (FMA and non-FMA variants differ in a few factors of a long curve; the
  portable profile pins the non-FMA one, ``parity.numerics``; measured: 2 of 10,006 values move),
  so it is computed in a process started with that pin (:func:`pinned_lr_values`). It is
  stored compactly: the SHA-256 of every value's ``float.hex`` in order, plus the value at
  :data:`LR_SAMPLES` sampled steps (what a report shows when the digest differs).

Both carry the tag ``long``. The 100-step torch curve takes about 10 s on one thread, so it runs in
the default ``python -m parity run``; ``--tag long`` runs only these.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from parity import canonical, numerics
from parity.cases import REGISTRY

__all__ = ["CURVE_STEPS", "LR_STEPS", "LR_SAMPLES", "lr_digest", "long_curve", "long_lr_curve"]

_REPO = Path(__file__).resolve().parents[2]
CURVE_STEPS = 100
LR_STEPS = 10_000
LR_SAMPLES = 40  # sampled steps of the long LR curve kept in the golden (and the last step)
_LR_FIELDS = {"warmup_ratio": 0.01, "decay_style": "cosine", "lr_min": 1e-5}


def long_curve(*, recipe: str, steps: int) -> dict[str, Any]:
    """The new side's losses, grad norms and LR per step of ``recipe`` run for ``steps`` steps."""
    from parity.e2e import RECIPES, ArtifactError, run_new

    if recipe != "dummy":
        raise ValueError(f"long_curve: recipe {recipe!r} is not supported; expected 'dummy'")
    _ = RECIPES[recipe]
    run = run_new(f"--train.max_steps={steps}", "--train.checkpoint.save_steps=0")
    out = {}
    for name in ("losses", "grad_norms", "lr_curve"):
        value = run[name]
        if isinstance(value, ArtifactError):
            raise value
        out[name] = value
    return out


def lr_values(*, steps: int, warmup_ratio: float, decay_style: str, lr_min: float) -> list[float]:
    """The first param group's LR at build and after each step of the component scheduler."""
    from parity.builders import new_lr_curve

    curve = new_lr_curve(steps=steps, warmup_ratio=warmup_ratio, decay_style=decay_style, lr_min=lr_min)
    return [float(_first(v).value) for v in curve]


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) else value


def lr_digest(values: list[float], samples: int = LR_SAMPLES) -> dict[str, Any]:
    """SHA-256 of the curve's ``float.hex`` values, and the values at evenly spaced steps."""
    text = "\n".join(float(v).hex() for v in values)
    stride = max(1, math.ceil(len(values) / samples))
    picked = sorted({*range(0, len(values), stride), len(values) - 1}) if values else []
    return {
        "steps": len(values),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "samples": {f"step_{i:05d}": values[i] for i in picked},
    }


_CHILD = (
    "import json, sys\n"
    "from parity import numerics\n"
    "numerics.apply()\n"
    "from parity.suites.long_horizon import lr_values\n"
    "print(json.dumps([v.hex() for v in lr_values(**json.loads(sys.argv[1]))]))\n"
)


def pinned_lr_values(**fields: Any) -> list[float]:
    """:func:`lr_values` in a process that runs the profile's libm.

    libm's variant is fixed when a process starts (``GLIBC_TUNABLES``); a process started without
    the portable profile's value (pytest, say) computes the curve in a child started with it.
    """
    if numerics.active_profile() != "portable" or not numerics.pending_at_start():
        return lr_values(**fields)
    from hyper_parallel.platform import PLATFORM_ENV, get_platform

    env = {**os.environ, PLATFORM_ENV: get_platform().name}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
    numerics.export("portable")
    env.update({k.env: k.value for k in numerics.knobs()})
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(fields)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"long_lr: the pinned child process exited {proc.returncode}:\n{tail}")
    return [float.fromhex(v) for v in json.loads(proc.stdout.strip().splitlines()[-1])]


def long_lr_curve(*, steps: int, warmup_ratio: float, decay_style: str, lr_min: float) -> Any:
    """The digest of the component's LR curve (:func:`lr_digest`), canonical."""
    values = pinned_lr_values(steps=steps, warmup_ratio=warmup_ratio, decay_style=decay_style, lr_min=lr_min)
    return canonical.canonicalise(lr_digest(values), "lr_curve")


REGISTRY.golden(
    "long_curve",
    kind="train_curve",
    tags=("long", "e2e"),
    seed=42,
    backends=("torch", "mindspore"),
    params={"recipe": "dummy", "steps": CURVE_STEPS},
    producer=long_curve,
)
REGISTRY.golden(
    "long_lr",
    kind="lr_curve",
    tags=("long", "lr_scheduler"),
    params={"steps": LR_STEPS, **_LR_FIELDS},
    producer=long_lr_curve,
)
