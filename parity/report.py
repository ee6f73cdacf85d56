"""Mismatch reports: one text block for the failure message and one JSON file per failing case.

A report names the case, backend, platform, the first differing artifact path and element, the
mismatch count, max |diff|, max ULP distance, both values in hex, and a one-line command that
reproduces it (with the hypothesis blob when the inputs were generated). JSON reports live under
``parity/reports/<backend>/<platform>/<case_id>.json`` (gitignored) and are written atomically.
A tier A case with a localiser adds where its two sides first diverged (``localisation``: the
greppable ``first divergence: ...`` line, evidence, and what ``parity.tools.html_report`` plots).
``python -m parity run`` also writes ``parity/reports/last_run.json``: every case of the run with
its status and time (``load_run_summary``). ``parity report`` and ``report --html`` both show the
reports of that run only (``load_last_run``): a report left by an earlier run, of a case this run
did not fail, is counted as stale and not shown. ``update --failed`` does not read it: it takes the
per-backend state of every run on the tree (``parity.run_state``), which overlapping runs share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.compare import PHASE_NAMES, Difference
from parity.fileio import canonical_json, write_text_atomic

__all__ = [
    "ParityReport",
    "difference_lines",
    "report_path",
    "write_json_atomic",
    "load_reports",
    "load_run_summary",
    "load_last_run",
    "LastRun",
    "with_decimal",
    "localisation_lines",
    "run_summary_path",
    "MAX_TEXT_DIFFERENCES",
]

MAX_TEXT_DIFFERENCES = 20
MAX_JSON_DIFFERENCES = 200
RUN_SUMMARY = "last_run.json"


@dataclass
class ParityReport:
    """Everything needed to understand and reproduce one failing case on one backend."""

    case_id: str
    kind: str
    tier: str
    backend: str
    platform: str
    reproduce: str
    differences: list[Difference] = field(default_factory=list)
    error: str | None = None  # a failure that is not a comparison (missing/corrupt golden, ...)
    golden_path: str | None = None
    hypothesis: dict[str, str] | None = None  # version, blob, falsifying example
    # The golden was recorded in another environment: one line naming the fields (parity.golden).
    environment: str | None = None
    # Where the two sides first diverged (``parity.tools.localise.Localisation.to_dict()``), tier A only.
    localisation: dict[str, Any] | None = None
    fingerprint: dict[str, Any] | None = None  # the environment this run checked in (parity.env)
    # What the case covers (its first tag, else its kind): the failure's cause when nothing localises
    # it (``parity.verdict``).
    component: str | None = None

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    @property
    def mismatch_count(self) -> int:
        """Differing elements (values, list items, tensor elements) whose count is known."""
        return mismatch_count(self.differences)

    @property
    def hash_only_tensors(self) -> int:
        """Tensors known only by their hash (above the inline size) whose hashes differ."""
        return hash_only_tensors(self.differences)

    def mismatch_text(self) -> str:
        return mismatch_text(self.differences)

    @property
    def max_abs_diff(self) -> float | None:
        return max_abs_diff(self.differences)

    @property
    def max_ulp(self) -> int | None:
        return max_ulp(self.differences)

    @property
    def max_rel_diff(self) -> float | None:
        return max_rel_diff(self.differences)

    def summary(self) -> dict[str, Any]:
        first = self.first
        return {
            "artifact_path": first.path if first else None,
            "first_index": first.index if first else None,
            "first_kind": first.kind if first else None,
            "expected": first.expected if first else None,
            "actual": first.actual if first else None,
            "mismatch_count": self.mismatch_count,
            "hash_only_tensors": self.hash_only_tensors,
            "max_abs_diff": None if self.max_abs_diff is None else repr(self.max_abs_diff),
            "max_ulp": self.max_ulp,
            "max_rel_diff": None if self.max_rel_diff is None else repr(self.max_rel_diff),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "kind": self.kind,
            "component": self.component,
            "tier": self.tier,
            "backend": self.backend,
            "platform": self.platform,
            "environment": self.environment,
            "error": self.error,
            "golden_path": self.golden_path,
            "summary": self.summary(),
            "differences": [d.to_dict() for d in self.differences[:MAX_JSON_DIFFERENCES]],
            "differences_total": len(self.differences),
            "hypothesis": self.hypothesis,
            "reproduce": self.reproduce,
            "localisation": self.localisation,
            "fingerprint": self.fingerprint,
        }

    def to_text(self) -> str:
        compared = "legacy vs new" if self.tier == "A" else "golden vs produced"
        lines = [self.environment] if self.environment else []
        lines += [
            f"PARITY FAIL  case={self.case_id}  backend={self.backend}  platform={self.platform}  "
            f"tier={self.tier} ({compared})"
        ]
        if self.error:
            lines.append(f"  {self.error}")
        sides = ("legacy", "new") if self.tier == "A" else ("golden", "produced")
        lines += difference_lines(self.differences, sides)
        if self.localisation:
            lines += [f"  {line}" for line in localisation_lines(self.localisation)]
        if self.hypothesis:
            example = self.hypothesis.get("falsifying_example")
            if example:
                lines.append("  " + example.strip().replace("\n", "\n  "))
            lines.append(
                f"  hypothesis blob: {self.hypothesis.get('blob')} (hypothesis {self.hypothesis.get('version')})"
            )
        lines.append(f"  reproduce: {self.reproduce}")
        return "\n".join(lines)


def mismatch_count(differences: list[Difference]) -> int:
    """Differing elements (values, list items, tensor elements) whose count is known."""
    return sum(d.count for d in differences if not d.hash_only)


def hash_only_tensors(differences: list[Difference]) -> int:
    """Tensors known only by their hash (above the inline size) whose hashes differ."""
    return sum(d.hash_only for d in differences)


def mismatch_text(differences: list[Difference]) -> str:
    text = f"{mismatch_count(differences)} element(s)"
    hashed = hash_only_tensors(differences)
    if hashed:
        text += f" + {hashed} tensor(s) differing by hash (their elements are unknown)"
    return text


def max_abs_diff(differences: list[Difference]) -> float | None:
    values = [d.max_abs_diff for d in differences if d.max_abs_diff is not None]
    return max(values) if values else None


def max_ulp(differences: list[Difference]) -> int | None:
    values = [d.max_ulp for d in differences if d.max_ulp is not None]
    return max(values) if values else None


def max_rel_diff(differences: list[Difference]) -> float | None:
    """Largest relative difference where a ULP count means nothing (a sign change, an infinity)."""
    values = [d.max_rel_diff for d in differences if d.max_rel_diff is not None]
    return max(values) if values else None


def spread_text(differences: list[Difference]) -> str:
    """``max |diff|: ...   max ULP: ...`` and, where signs changed or values went infinite,
    ``max rel diff: ...`` for those elements (a ULP count across zero or to infinity is noise)."""
    largest, ulp, rel = max_abs_diff(differences), max_ulp(differences), max_rel_diff(differences)
    text = f"max |diff|: {'n/a' if largest is None else repr(largest)}   max ULP: {'n/a' if ulp is None else ulp}"
    if rel is not None:
        text += f"   max rel diff: {rel:.3g} (sign changed or infinite: no ULP count)"
    return text


def difference_lines(
    differences: list[Difference], sides: tuple[str, str] | None = None, *, more: str = " in the JSON report"
) -> list[str]:
    """The report's difference block: first difference (path, index, both values), counts, list.

    ``sides`` names the two sides in the value lines (``("legacy", "new")``); ``more`` follows
    the count of differences left out of the list. Empty when there is no difference.
    """
    if not differences:
        return []
    first = differences[0]
    lines = []
    if first.position is not None:
        where = f"{first.path}  (index {first.position}, flat {first.index})"
    else:
        where = f"{first.path}" + (f"  (flat index {first.index})" if first.index is not None else "")
    lines.append(f"  first difference [{PHASE_NAMES[first.phase]}/{first.kind}]: {where}")
    lines.append(f"    {first.message}")
    if first.expected is not None or first.actual is not None:
        expected_side, actual_side = (f" ({sides[0]})", f" ({sides[1]})") if sides else ("", "")
        lines.append(f"    expected{expected_side}: {first.expected}")
        lines.append(f"    actual  {actual_side}: {first.actual}")
    lines.append(
        f"  mismatches: {mismatch_text(differences)}   {spread_text(differences)}"
        "   (ULP(+0.0, -0.0) = 0: equal numbers, different bits)"
    )
    lines.append(f"  differences ({len(differences)}):")
    for d in differences[:MAX_TEXT_DIFFERENCES]:
        at = f" @ {d.index}" if d.index is not None and d.kind == "bits" else ""
        lines.append(f"    [{PHASE_NAMES[d.phase]}] {d.kind:<7} {d.path}{at}: {d.message}")
    if len(differences) > MAX_TEXT_DIFFERENCES:
        lines.append(f"    ... {len(differences) - MAX_TEXT_DIFFERENCES} more{more}")
    return lines


def localisation_lines(localisation: dict[str, Any]) -> list[str]:
    """The greppable ``first divergence: ...`` line, then its evidence lines (indented)."""
    line = localisation.get("line") or "first divergence: not localised (no line in the result)"
    return [str(line), *(f"  {e}" for e in localisation.get("evidence") or ())]


def report_path(report_dir: Path, backend: str, platform: str, case_id: str) -> Path:
    return Path(report_dir) / backend / platform / f"{case_id}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Canonical JSON, written atomically (temp file in the same directory + os.replace)."""
    write_text_atomic(Path(path), canonical_json(data))


def run_summary_path(report_dir: Path) -> Path:
    return Path(report_dir) / RUN_SUMMARY


def load_run_summary(report_dir: Path) -> dict[str, Any] | None:
    """The last ``python -m parity run``'s summary (``cases``: id, tier, backend, status, seconds),
    or None when there is none or it does not parse."""
    try:
        data = json.loads(run_summary_path(report_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cases"), list) else None


def load_reports(report_dir: Path) -> list[tuple[Path, dict[str, Any] | None, str | None]]:
    """Every case report (``<backend>/<platform>/*.json``, at any depth below ``report_dir``; files
    directly in ``report_dir``, such as ``last_run.json`` or ``selfcheck.json``, are not case
    reports): (path, data or None, error or None), sorted."""
    out: list[tuple[Path, dict[str, Any] | None, str | None]] = []
    root = Path(report_dir)
    if not root.is_dir():
        return out
    for path in sorted(p for p in root.rglob("*.json") if p.parent != root):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out.append((path, data, None))
        except (OSError, ValueError) as exc:
            out.append((path, None, f"{path}: unreadable report ({exc})"))
    return out


_FAILING = ("fail", "error")


@dataclass
class LastRun:
    """The reports of the last ``parity run`` (``summary``: its ``last_run.json``, or None when
    the folder has none, e.g. reports of pytest runs: then every report is shown)."""

    summary: dict[str, Any] | None
    reports: list[tuple[Path, dict[str, Any] | None, str | None]]
    stale: int = 0  # reports under the folder from earlier runs, not shown

    @property
    def stamp(self) -> str:
        """Which run this is, in words: ``last run finished <time> (<n> cases)``."""
        if self.summary is None:
            return "no last_run.json: every report in the folder"
        status = str(self.summary.get("status", "finished"))
        when = self.summary.get(status) or self.summary.get("finished") or self.summary.get("started") or "?"
        stale = f"; {self.stale} report(s) of earlier runs not shown" if self.stale else ""
        return f"last run {status} {when} ({len(self.summary.get('cases') or [])} cases){stale}"


def load_last_run(report_dir: Path) -> LastRun:
    """The reports of the last run: those of its failing cases (an unreadable file is kept as an
    error line; it may be this run's). Without ``last_run.json``, every report."""
    summary = load_run_summary(report_dir)
    reports = load_reports(report_dir)
    if summary is None:
        return LastRun(None, reports)
    failing = {
        (c.get("backend"), c.get("platform"), c.get("case_id"))
        for c in summary["cases"]
        if isinstance(c, dict) and c.get("status") in _FAILING
    }
    kept, stale = [], 0
    for path, data, error in reports:
        if (
            data is not None
            and (data.get("backend"), data.get("platform"), data.get("case_id")) not in failing
        ):
            stale += 1
            continue
        kept.append((path, data, error))
    return LastRun(summary, kept, stale)


def with_decimal(value: Any) -> Any:
    """A hex float (``0x1.8p+1``), or a text holding some, with each one's decimal value first:
    ``3.0 (0x1.8p+1)``; anything else as it is."""
    if not isinstance(value, str) or "0x" not in value:
        return value
    import re

    def decimal(match: re.Match[str]) -> str:
        text = match.group(0)
        try:
            number = float.fromhex(text)
        except (ValueError, OverflowError):
            return text
        return f"{number!r} ({text})"

    return re.sub(r"[-+]?0x[0-9a-fA-F]*(?:\.[0-9a-fA-F]*)?p[-+]?\d+", decimal, value)
