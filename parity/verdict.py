"""The verdict of a run, and its failures grouped by cause: what every report of a run leads with.

A failure's cause is where it first went wrong, as precisely as the run knows it:

- a tier A pair whose localiser found the first divergence (``parity.tools.localise``): the step,
  the phase (the artifact) and the component that owns it, so the eight e2e artifact cases of a
  recipe and every recipe that diverges at the same step in the same component are one cause;
- any other pair or golden: its component (``component_of``: the case's first tag, else its kind) and the artifact
  of its first difference (the path up to its first index: ``lr_curve`` for ``lr_curve[1][0]``);
- a golden that could not be compared (missing, corrupt): that message, paths left out;
- a golden recorded in another environment: that environment line, paths left out;
- a case that raised instead of producing a result: the exception's first line.

:func:`group_failures` turns failures into cause groups, most urgent first: tier A (legacy and new
disagree: a real divergence, which no golden can accept), then errors, then goldens, each tier's
largest group first. :func:`verdict` adds the one line a reader needs first. The terminal summary
of ``parity run`` (``parity.cli``), ``parity report`` and its HTML page
(``parity.tools.html_report``) all print these, so the three say the same thing.

Failures come from a run's outcomes (:meth:`Failure.from_outcome`) or from the JSON reports and
``last_run.json`` rows it left (:meth:`Failure.from_report`, :meth:`Failure.from_row`). This module
reads no file and imports no framework.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from parity.engine import Outcome

__all__ = [
    "Cause",
    "CauseGroup",
    "CauseKind",
    "Failure",
    "Verdict",
    "counts_lines",
    "component_of",
    "group_failures",
    "run_failures",
    "verdict",
]

CauseKind = Literal["diverged", "differs", "golden", "environment", "error"]
FAILING = ("fail", "error")
_KIND_ORDER: tuple[CauseKind, ...] = ("diverged", "differs", "golden", "environment", "error")

# "PARITY ERROR  case=X  backend=Y: " before an error's text (``parity.engine._format_error``).
_PREFIX = re.compile(r"^PARITY (ERROR|FAIL)\s+case=\S+\s+backend=\S+(\s+platform=\S+)?:?\s*")
# A path in a message (a golden's file, a temp folder): left out so that one cause is one group.
_PATH = re.compile(r"[^\s:;,()'\"]*/[^\s:;,()'\"]*")
_MAX_TEXT = 160
# Tags that say how a case runs, not what it covers: never a failure's component.
MARKER_TAGS = frozenset({"long", "nonfinite"})


def component_of(tags: Sequence[str], kind: str) -> str:
    """What a case covers: its first tag that is not a marker (``MARKER_TAGS``), else its kind."""
    return next((t for t in tags if t not in MARKER_TAGS), kind)


@dataclass(frozen=True)
class Failure:
    """One failing case on one backend, as far as its cause needs it."""

    case_id: str
    tier: str
    backend: str
    status: Literal["fail", "error"] = "fail"
    component: str = ""  # what the case covers (``component_of``)
    first_path: str | None = None  # the artifact path of the first difference
    error: str | None = None  # a failure that is not a comparison, or the raised exception (one line)
    environment: str | None = None  # the golden was recorded elsewhere (its first line)
    localisation: Mapping[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_outcome(cls, outcome: Outcome) -> Failure:
        case, report = outcome.case, outcome.report
        component = component_of(case.tags, case.kind)
        error: str | None = None
        if outcome.status == "error":
            error = _first_line(outcome.message)
        elif report is not None and report.error:
            error = _first_line(report.error)
        return cls(
            case_id=case.id,
            tier=case.tier,
            backend=outcome.backend,
            status="error" if outcome.status == "error" else "fail",
            component=component,
            first_path=report.differences[0].path if report is not None and report.differences else None,
            error=error,
            environment=_first_line(report.environment)
            if report is not None and report.environment
            else None,
            localisation=report.localisation if report is not None else None,
        )

    @classmethod
    def from_report(cls, data: Mapping[str, Any]) -> Failure:
        """A JSON case report (``ParityReport.to_dict()``); reports without ``component`` (older
        harness) fall back on the case's kind."""
        summary = data.get("summary") or {}
        environment = data.get("environment")
        return cls(
            case_id=str(data.get("case_id")),
            tier=str(data.get("tier")),
            backend=str(data.get("backend")),
            status="fail",
            component=str(data.get("component") or data.get("kind") or ""),
            first_path=summary.get("artifact_path"),
            error=_first_line(data["error"]) if data.get("error") else None,
            environment=_first_line(environment) if environment else None,
            localisation=data.get("localisation") or None,
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Failure:
        """A failing row of ``last_run.json`` whose case left no report (a case that raised)."""
        status = str(row.get("status"))
        return cls(
            case_id=str(row.get("case_id")),
            tier=str(row.get("tier")),
            backend=str(row.get("backend")),
            status="error" if status == "error" else "fail",
            component=str(row.get("component") or row.get("kind") or ""),
            error=_first_line(row.get("message") or "") or f"{status} (no message recorded)",
        )


@dataclass(frozen=True)
class Cause:
    """What a group of failures has in common (see the module doc)."""

    tier: str
    kind: CauseKind
    component: str = ""
    step: int | None = None
    artifact: str = ""  # the phase (localised), the first path's root, or the message

    @property
    def rank(self) -> int:
        """0: legacy and new disagree; 1: a case raised; 2: a golden; 3: anything else."""
        if self.kind == "error":
            return 1
        if self.tier == "A":
            return 0
        return 2 if self.tier == "B" else 3


def cause_of(failure: Failure) -> Cause:
    if failure.status == "error":
        # One exception is one cause whatever the tier or component of the cases that raised it.
        return Cause("", "error", artifact=_generic(failure.error or ""))
    loc = failure.localisation or {}
    if failure.tier == "A" and loc.get("status") == "diverged":
        step = loc.get("step")
        return Cause(
            "A",
            "diverged",
            str(loc.get("component") or failure.component),
            step if isinstance(step, int) else None,
            str(loc.get("phase") or _root(str(loc.get("artifact") or ""))),
        )
    if failure.environment:
        return Cause(failure.tier, "environment", artifact=_generic(failure.environment))
    if failure.first_path is None and failure.error:
        return Cause(failure.tier, "golden", failure.component, artifact=_generic(failure.error))
    return Cause(failure.tier, "differs", failure.component, artifact=_root(failure.first_path or ""))


@dataclass
class CauseGroup:
    """Failures of one cause, in the order they were given."""

    cause: Cause
    failures: list[Failure]

    def __len__(self) -> int:
        return len(self.failures)

    @property
    def case_ids(self) -> list[str]:
        return [f.case_id for f in self.failures]

    @property
    def backends(self) -> list[str]:
        return sorted({f.backend for f in self.failures})

    @property
    def artifacts(self) -> list[str]:
        """The exact first artifacts of the group, most frequent first (localised: the replay's)."""
        counts: dict[str, int] = {}
        for f in self.failures:
            loc = f.localisation or {}
            path = str(loc.get("artifact") or "") if self.cause.kind == "diverged" else (f.first_path or "")
            if path:
                counts[path] = counts.get(path, 0) + 1
        return sorted(counts, key=lambda p: -counts[p])

    @property
    def localisation_line(self) -> str | None:
        """The greppable ``first divergence: ...`` line the group shares (localised groups)."""
        if self.cause.kind != "diverged":
            return None
        return next(
            (
                str((f.localisation or {})["line"])
                for f in self.failures
                if (f.localisation or {}).get("line")
            ),
            None,
        )

    def headline(self, *, show_backends: bool = False) -> str:
        """One line: how many, what they are, and where they first went wrong."""
        c, n = self.cause, len(self.failures)
        if c.kind == "error":
            text = f"{n} case{_s(n)} raised instead of producing a result: {c.artifact}"
        elif c.kind == "environment":
            text = f"{_what(c.tier, n)} recorded in another environment: {c.artifact}"
        elif c.kind == "golden":
            text = f"{_what(c.tier, n)} could not be compared in {c.component}: {c.artifact}"
        elif c.kind == "diverged":
            text = f"{_what(c.tier, n)} {_verb(n, 'diverge')} at step {c.step} in {c.component} ({self._paths()})"
        else:
            where = f" in {c.component}" if c.component else ""
            text = f"{_what(c.tier, n)} {_verb(n, 'differ')}{where}, first at {self._paths()}"
            if c.tier == "A":
                text += self._not_localised()
        if show_backends:
            text += f" [{', '.join(self.backends)}]"
        return text

    def _paths(self) -> str:
        artifacts = self.artifacts
        if not artifacts:
            return self.cause.artifact or "?"
        more = len(artifacts) - 2
        return ", ".join(artifacts[:2]) + (f" and {more} other path{_s(more)}" if more > 0 else "")

    def _not_localised(self) -> str:
        statuses = [str((f.localisation or {}).get("status") or "") for f in self.failures]
        reasons = sorted({s for s in statuses if s})
        return f" (not localised: {', '.join(reasons)})" if reasons else " (no step: no localiser)"


def group_failures(failures: Iterable[Failure]) -> list[CauseGroup]:
    """Failures grouped by :func:`cause_of`: tier A first, then errors, then goldens; within each,
    localised groups first (they name the step), then the largest, then the earliest step, then by
    component and artifact."""
    groups: dict[Cause, CauseGroup] = {}
    for failure in failures:
        cause = cause_of(failure)
        groups.setdefault(cause, CauseGroup(cause, [])).failures.append(failure)

    def order(group: CauseGroup) -> tuple[Any, ...]:
        c = group.cause
        return (
            c.rank,
            _KIND_ORDER.index(c.kind),
            -len(group),
            c.step if c.step is not None else 1 << 30,
            c.component,
            c.kind,
            c.artifact,
            c.tier,
        )

    return sorted(groups.values(), key=order)


@dataclass
class Verdict:
    """The groups of a run's failures and the sentence that leads every report of it."""

    groups: list[CauseGroup]
    total: int | None = None  # case runs in the run, when known

    @property
    def failures(self) -> list[Failure]:
        return [f for g in self.groups for f in g.failures]

    @property
    def divergent_pairs(self) -> int:
        """Tier A pairs where legacy and new disagree (errors not counted)."""
        return sum(len(g) for g in self.groups if g.cause.tier == "A" and g.cause.kind != "error")

    @property
    def real_divergence(self) -> bool:
        return self.divergent_pairs > 0

    @property
    def errors(self) -> int:
        return sum(len(g) for g in self.groups if g.cause.kind == "error")

    @property
    def goldens(self) -> int:
        return sum(len(g) for g in self.groups if g.cause.tier != "A" and g.cause.kind != "error")

    @property
    def line(self) -> str:
        """``verdict: ...`` in one line."""
        if not self.groups:
            return "verdict: pass" + (f" ({self.total} case run{_s(self.total)})" if self.total else "")
        parts: list[str] = []
        if self.real_divergence:
            n = self.divergent_pairs
            head = f"a real divergence: legacy and new disagree in {n} tier A pair{_s(n)}"
        elif self.errors:
            n = self.errors
            head = f"{n} case{_s(n)} raised instead of producing a result"
        else:
            n = self.goldens
            head = f"no tier A pair differs; {n} golden{_s(n)} differ{'' if n != 1 else 's'} from what this tree produces"
        if self.real_divergence and self.errors:
            parts.append(f"{self.errors} case{_s(self.errors)} raised")
        if (self.real_divergence or self.errors) and self.goldens:
            parts.append(f"{self.goldens} golden{_s(self.goldens)} differ{'' if self.goldens != 1 else 's'}")
        causes = len(self.groups)
        tail = f"; {', '.join(parts)}" if parts else ""
        of = f" of {self.total} case runs" if self.total else ""
        return f"verdict: {head}{tail} ({len(self.failures)} failing{of}, {causes} cause{_s(causes)})"

    def lines(self, *, examples: int = 3, indent: str = "  ") -> list[str]:
        """The verdict line, then each group's headline with up to ``examples`` of its case ids
        (``examples=-1``: every id), most urgent group first."""
        out = [self.line]
        for index, group in enumerate(self.groups, 1):
            out.append(f"{indent}{index}. {self.headline(group)}")
            shown = group.failures if examples < 0 else group.failures[:examples]
            out += [f"{indent}     {f.backend} {f.case_id}" for f in shown]
            if len(group) > len(shown):
                out.append(f"{indent}     ... and {len(group) - len(shown)} more")
        return out

    def headline(self, group: CauseGroup) -> str:
        """The group's headline as this verdict shows it: backends named when the failures span
        several, and a golden group whose component a tier A divergence shares marked as such."""
        text = group.headline(show_backends=len({f.backend for f in self.failures}) > 1)
        if self.consequences(group):
            text += " (same component as a tier A divergence above: fix that first)"
        return text

    def group_of(self, failure: Failure) -> int:
        """The index (from 0) of ``failure``'s group."""
        cause = cause_of(failure)
        return next(i for i, g in enumerate(self.groups) if g.cause == cause)

    def consequences(self, group: CauseGroup) -> bool:
        """Whether a golden group's component also holds a tier A divergence: the goldens may move
        because of it, so they are accepted only once the pairs agree."""
        if group.cause.tier == "A" or group.cause.kind == "error":
            return False
        components = {
            g.cause.component for g in self.groups if g.cause.tier == "A" and g.cause.kind != "error"
        }
        return group.cause.component in components


def verdict(failures: Iterable[Failure], total: int | None = None) -> Verdict:
    return Verdict(group_failures(failures), total)


def counts_lines(rows: Iterable[tuple[str, str, str]], *, indent: str = "  ") -> list[str]:
    """Counts per tier and backend of ``(tier, backend, status)`` rows, one line per tier:
    ``tier A: torch 120 passed; mindspore 40 passed, 2 skipped``."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for tier, backend, status in rows:
        per = table.setdefault(tier, {}).setdefault(backend, {})
        per[status] = per.get(status, 0) + 1
    order = ("pass", "fail", "error", "skip")
    label = {"pass": "passed", "fail": "failed", "error": "errors", "skip": "skipped"}
    out = []
    for tier in sorted(table):
        parts = []
        for backend in sorted(table[tier]):
            per = table[tier][backend]
            statuses = [s for s in order if s in per] + sorted(s for s in per if s not in order)
            parts.append(f"{backend} " + ", ".join(f"{per[s]} {label.get(s, s)}" for s in statuses))
        out.append(f"{indent}tier {tier}: " + "; ".join(parts))
    return out


# ----------------------------------------------------------------------------- text helpers
def _first_line(text: str) -> str:
    line = next((x.strip() for x in str(text).splitlines() if x.strip()), "")
    return _PREFIX.sub("", line)


def _generic(text: str) -> str:
    """A message without its paths (``<path>``), at most ``_MAX_TEXT`` characters."""
    text = _PATH.sub("<path>", _first_line(text))
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _root(path: str) -> str:
    """An artifact path up to its first index: ``lr_curve`` for ``lr_curve[1][0]``."""
    return path.partition("[")[0] or path


def _s(n: int | None) -> str:
    return "" if n == 1 else "s"


def _verb(n: int, verb: str) -> str:
    return f"{verb}s" if n == 1 else verb


def _what(tier: str, n: int) -> str:
    if tier == "A":
        return f"{n} tier A pair{_s(n)}"
    if tier == "B":
        return f"{n} golden{_s(n)}"
    return f"{n} tier {tier} case{_s(n)}"


def run_failures(
    reports: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]] | None = None
) -> list[Failure]:
    """The failures a finished run left: one per JSON case report, plus one per failing row of its
    ``last_run.json`` (``rows``) that has no report (a case that raised writes none)."""
    out = [Failure.from_report(data) for data in reports]
    reported = {(f.backend, f.case_id) for f in out}
    for row in rows or ():
        if (
            row.get("status") in FAILING
            and (str(row.get("backend")), str(row.get("case_id"))) not in reported
        ):
            out.append(Failure.from_row(row))
    return out
