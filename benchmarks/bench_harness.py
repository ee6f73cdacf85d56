"""Harness cost on big checkpoints: canonicalise + compare two checkpoints vs one plain sha256 pass.

    python benchmarks/bench_harness.py --gib 1

builds two checkpoints of ``--gib`` GiB of fp32 each (``--tensor-mib`` MiB per tensor; the second
is a copy of the first), then times, in the same process:

- ``sha256``: one ``hashlib.sha256`` pass over all the bytes of both checkpoints (the floor: the
  harness has to read every byte of both sides once);
- ``harness``: ``canonical.checkpoint`` on both + ``compare`` (equal checkpoints);
- ``harness, 1 bit flipped``: the same with one bit flipped in one tensor, so the comparator also
  scans that one differing pair.

It reports the harness/sha256 ratio (target <= 1.25) and the peak RSS beyond the inputs
(``resource.getrusage``), which should stay around one tensor pair or less: tensors are hashed
and compared through zero-copy views, one pair at a time.

``nox -s bench`` runs the small pytest-benchmark version at the bottom (``PARITY_BENCH_GIB``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import resource
import time
from collections.abc import Callable

import pytest
import torch

from parity import canonical
from parity.compare import compare

MIB = 1 << 20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def make_checkpoints(gib: float, tensor_mib: int) -> tuple[dict, dict]:
    """Two equal checkpoints of ``gib`` GiB each, built one tensor at a time."""
    count = max(1, round(gib * 1024 / tensor_mib))
    numel = tensor_mib * MIB // 4
    gen = torch.Generator().manual_seed(0)
    first = {f"layers.{i}.weight": torch.randn(numel, generator=gen) for i in range(count)}
    second = {k: v.clone() for k, v in first.items()}
    return first, second


def sha256_pass(*checkpoints: dict) -> str:
    h = hashlib.sha256()
    for ckpt in checkpoints:
        for t in ckpt.values():
            h.update(memoryview(t.numpy()).cast("B"))
    return h.hexdigest()


def harness_pass(expected: dict, actual: dict) -> list:
    return compare(canonical.checkpoint(expected), canonical.checkpoint(actual), "checkpoint")


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def run(gib: float, tensor_mib: int, repeat: int) -> dict[str, float]:
    first, second = make_checkpoints(gib, tensor_mib)
    rss_inputs = peak_rss_mib()
    t_sha, _ = timed(lambda: sha256_pass(first, second), repeat)
    rss_sha = peak_rss_mib()
    t_harness, diffs = timed(lambda: harness_pass(first, second), repeat)
    assert diffs == [], "equal checkpoints must compare equal"
    rss_harness = peak_rss_mib()
    victim = next(iter(second))
    second[victim].view(torch.int32)[12345] ^= 1
    t_flip, diffs = timed(lambda: harness_pass(first, second), repeat)
    assert len(diffs) == 1 and diffs[0].index == 12345
    rss_flip = peak_rss_mib()
    return {
        "gib_per_checkpoint": gib,
        "tensors_per_checkpoint": len(first),
        "tensor_mib": tensor_mib,
        "bytes_read_gib": 2 * gib,
        "t_sha256": t_sha,
        "t_harness": t_harness,
        "t_harness_flip": t_flip,
        "ratio": t_harness / t_sha,
        "ratio_flip": t_flip / t_sha,
        "rss_inputs_mib": rss_inputs,
        "rss_peak_mib": rss_flip,
        "rss_beyond_inputs_mib": rss_flip - rss_inputs,
        "rss_beyond_after_sha_mib": rss_sha - rss_inputs,
        "rss_beyond_after_harness_mib": rss_harness - rss_inputs,
        "tensor_pair_mib": 2 * tensor_mib,
    }


def print_table(r: dict[str, float]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"parity harness vs sha256: 2 x {r['gib_per_checkpoint']} GiB fp32 "
        f"({r['tensors_per_checkpoint']} x {r['tensor_mib']} MiB per checkpoint)"
    )
    table.add_column("pass")
    table.add_column("seconds", justify="right")
    table.add_column("GiB/s", justify="right")
    table.add_column("vs sha256", justify="right")
    for name, key, ratio in (
        ("sha256 over both checkpoints", "t_sha256", 1.0),
        ("harness: canonicalise both + compare", "t_harness", r["ratio"]),
        ("harness, one bit flipped in one tensor", "t_harness_flip", r["ratio_flip"]),
    ):
        table.add_row(name, f"{r[key]:.3f}", f"{r['bytes_read_gib'] / r[key]:.2f}", f"{ratio:.3f}x")
    console = Console()
    console.print(table)
    verdict = "OK" if r["ratio"] <= 1.25 else "ABOVE TARGET"
    console.print(f"harness / sha256 = {r['ratio']:.3f}x (target <= 1.25x: {verdict})")
    console.print(
        f"peak RSS: inputs {r['rss_inputs_mib']:.0f} MiB, overall peak {r['rss_peak_mib']:.0f} MiB, "
        f"beyond inputs {r['rss_beyond_inputs_mib']:.1f} MiB (one tensor pair = {r['tensor_pair_mib']} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="GiB of fp32 per checkpoint")
    parser.add_argument("--tensor-mib", type=int, default=16, help="MiB per tensor")
    parser.add_argument("--repeat", type=int, default=2, help="timed repetitions (best is kept)")
    args = parser.parse_args()
    print_table(run(args.gib, args.tensor_mib, args.repeat))


@pytest.mark.benchmark
def test_canonicalise_and_compare_checkpoints(benchmark):
    """pytest-benchmark of the harness pass on a small pair of checkpoints (PARITY_BENCH_GIB)."""
    gib = float(os.environ.get("PARITY_BENCH_GIB", "0.125"))
    first, second = make_checkpoints(gib, 16)
    diffs = benchmark(harness_pass, first, second)
    assert diffs == []


if __name__ == "__main__":
    main()
