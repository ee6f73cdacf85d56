"""The mutation score: verdicts counted per module and per area, survivors named, and the reviewed
list of mutants that no case should kill.

Killed means a parity case turned red (a failed comparison, or a crash that passed through
product code). Survivors and mutants of functions no case runs (``not_covered``) count against
the score; timeouts and harness errors are counted apart, never as kills, and left out of the
score's denominator (the strict score counts them as not killed). Mutants listed in
``equivalents.toml`` (equivalent, or unreachable on CPU, each with a one-line reason) are not run.

A sampled run gives the score with a 95% Wilson interval over the mutants drawn.
"""

from __future__ import annotations

import json
import math
import os
import time
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from parity.tools.mutation.mutants import area_of
from parity.tools.mutation.where import KINDS, where

__all__ = ["REVIEWED_FILE", "Progress", "Result", "Reviewed", "print_summary", "wilson", "write"]

REVIEWED_FILE = Path(__file__).with_name("equivalents.toml")
STATUSES = ("killed", "survived", "not_covered", "timeout", "harness_error")
VERDICTS = ("equivalent", "unreachable")


@dataclass
class Reviewed:
    """``equivalents.toml``: ``[[mutant]]`` entries (key, verdict, reason) and per-module notes."""

    entries: dict[str, dict[str, str]]
    module_notes: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> Reviewed:
        if not path.exists():
            return cls({}, {})
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise SystemExit(f"parity mutation: error: {path}: not valid TOML ({exc})") from None
        entries: dict[str, dict[str, str]] = {}
        for n, item in enumerate(data.get("mutant", []), 1):
            key, verdict, reason = item.get("key"), item.get("verdict"), item.get("reason")
            if (
                not isinstance(key, str)
                or verdict not in VERDICTS
                or not isinstance(reason, str)
                or not reason
            ):
                raise SystemExit(
                    f"parity mutation: error: {path}: mutant entry {n}: expected key, "
                    f"verdict ({' or '.join(VERDICTS)}) and a one-line reason"
                )
            entries[key] = {"verdict": verdict, "reason": reason}
        notes = {str(k): str(v.get("why", "")) for k, v in data.get("module", {}).items()}
        return cls(entries, notes)

    def get(self, key: str) -> dict[str, str] | None:
        return self.entries.get(key)

    def entry(self, key: str) -> dict[str, str]:
        return self.entries[key]


def wilson(killed: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (fine at 0 and 1, unlike the normal one)."""
    if n == 0:
        return (0.0, 1.0)
    p = killed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Result:
    verdicts: list[dict[str, Any]]
    reviewed: list[dict[str, Any]]
    population: int  # non-reviewed mutants in scope (the sample is drawn from these)
    sample: int | None
    seed: int
    scope: str
    seconds: dict[str, float]
    max_groups: int | None = None
    module_notes: dict[str, str] = field(default_factory=dict)

    def counts(self, rows: Iterable[dict[str, Any]] | None = None) -> dict[str, Any]:
        c = Counter(v["status"] for v in (self.verdicts if rows is None else rows))
        judged = c["killed"] + c["survived"] + c["not_covered"]
        lo, hi = wilson(c["killed"], judged)
        return {
            **{s: c[s] for s in STATUSES},
            "run": sum(c.values()),
            "score": c["killed"] / judged if judged else None,
            "ci95": [lo, hi],
            "strict_score": c["killed"] / sum(c.values()) if c else None,
        }

    def by(self, what: str) -> dict[str, dict[str, Any]]:
        keyf = (lambda v: v["path"]) if what == "module" else (lambda v: area_of(v["path"]))
        groups: dict[str, list[dict[str, Any]]] = {}
        for v in self.verdicts:
            groups.setdefault(keyf(v), []).append(v)
        out = {k: self.counts(rows) for k, rows in sorted(groups.items())}
        listed = Counter(keyf(r) for r in self.reviewed)
        for k in out:
            out[k]["reviewed"] = listed.get(k, 0)
        return out

    def survivors(self) -> list[dict[str, Any]]:
        """Survivors and mutants no case runs, each with ``where`` it sits (``where.where``)."""
        root = Path.cwd()
        return [
            {**v, "where": where(v["path"], v["line"], root)}
            for v in self.verdicts
            if v["status"] in ("survived", "not_covered")
        ]

    def to_dict(self) -> dict[str, Any]:
        run = len(self.verdicts)
        minutes = self.seconds.get("mutants", 0.0) / 60
        return {
            "tool": "mutmut",
            "scope": self.scope,
            "max_groups": self.max_groups,
            "cut_survivors": sum(
                1
                for v in self.verdicts
                if v["status"] == "survived" and v.get("covering", 0) > v.get("groups", 0)
            ),
            "sample": self.sample,
            "seed": self.seed,
            "population": self.population,
            "total": self.counts(),
            "mutants_per_minute": round(run / minutes, 2) if minutes else None,
            "seconds": self.seconds,
            "by_module": self.by("module"),
            "by_area": self.by("area"),
            "survivors": [
                {
                    k: v[k]
                    for k in (
                        "key",
                        "path",
                        "qualname",
                        "line",
                        "operator",
                        "status",
                        "where",
                        "before",
                        "after",
                    )
                }
                for v in self.survivors()
            ],
            "survivors_by_where": {
                kind: Counter(v["where"] for v in self.survivors())[kind] for kind in KINDS
            },
            "verdicts": self.verdicts,
            "reviewed": self.reviewed,
            "module_notes": self.module_notes,
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


def write(result: Result, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mutation.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_summary(result: Result, console: Console, *, survivors: int = 40) -> None:
    data = result.to_dict()
    table = Table(title="mutation score by area", show_lines=False)
    for col in (
        "area",
        "run",
        "killed",
        "survived",
        "not covered",
        "timeout",
        "harness err",
        "score",
        "listed",
    ):
        table.add_column(col, justify="left" if col == "area" else "right")
    for area, c in data["by_area"].items():
        table.add_row(
            area, str(c["run"]), str(c["killed"]), str(c["survived"]), str(c["not_covered"]),
            str(c["timeout"]), str(c["harness_error"]), _pct(c["score"]), str(c["reviewed"]),
        )  # fmt: skip
    console.print(table)
    for row in data["survivors"][:survivors]:
        console.print(
            f"  {row['status']:<11} {row['where']:<10} {row['path']}:{row['qualname']}:{row['line']} "
            f"{row['operator']}",
            highlight=False,
            markup=False,
        )
    if len(data["survivors"]) > survivors:
        console.print(f"  ... {len(data['survivors']) - survivors} more in mutation.json")
    by_where = data["survivors_by_where"]
    console.print(
        "survivors and not covered, by where they sit: "
        + ", ".join(f"{kind} {by_where[kind]}" for kind in KINDS)
        + " (message: error or log text; error_path: a refusal or failure branch; behaviour: the rest)",
        highlight=False,
    )
    t = data["total"]
    lo, hi = t["ci95"]
    drawn = f"{result.sample} drawn of {result.population}" if result.sample else f"{result.population}"
    if result.max_groups:
        console.print(
            f"--max-groups {result.max_groups}: {data['cut_survivors']} survivors were not run against "
            "every group that covers them",
            highlight=False,
        )
    console.print(
        f"mutation score {_pct(t['score'])} (95% CI {_pct(lo)}-{_pct(hi)}): {t['killed']} killed, "
        f"{t['survived']} survived, {t['not_covered']} not covered, {t['timeout']} timeouts, "
        f"{t['harness_error']} harness errors; mutants {drawn}, {len(result.reviewed)} listed as "
        f"equivalent/unreachable; {data['mutants_per_minute']} mutants/min",
        highlight=False,
    )


class Progress:
    """One line per 10 verdicts (counts and rate), and every verdict appended to a JSON-lines file
    as it comes, so that an interrupted run keeps what it measured."""

    def __init__(
        self, console: Console, total: int, log: Path | None = None, *, append: bool = False
    ) -> None:
        self.console, self.total, self.start = console, total, time.perf_counter()
        self.counts: Counter[str] = Counter()
        self.log = log
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            if not append:
                log.write_text("", encoding="utf-8")

    def add(self, verdict: Any) -> None:
        self.counts[verdict.status] += 1
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(verdict.to_dict()) + "\n")
        done = sum(self.counts.values())
        if done % 10 == 0 or done == self.total:
            rate = done / max(1e-9, time.perf_counter() - self.start) * 60
            parts = ", ".join(f"{k} {self.counts[k]}" for k in STATUSES if self.counts[k])
            self.console.print(f"[{done}/{self.total}] {parts}  ({rate:.1f}/min)", highlight=False)
