"""torchrun worker: train one side (legacy | new) of the debug recipe and dump the curves as JSON.

Usage: torchrun --standalone --nproc_per_node=N _e2e_worker.py SIDE OUT_DIR [--a.b=v ...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from parity.e2e import run_legacy, run_new


def main() -> None:
    side, out = sys.argv[1], Path(sys.argv[2])
    run = {"legacy": run_legacy, "new": run_new}[side]
    artifacts = run("--train.accelerator.dp_shard=-1", *sys.argv[3:], workdir=out / side)
    from parity.canonical import to_json

    rank = int(os.environ.get("RANK", "0"))
    keep = {k: artifacts[k] for k in ("losses", "grad_norms", "lr_curve", "metrics")}
    (out / f"{side}_rank{rank}.json").write_text(json.dumps(to_json(keep), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
