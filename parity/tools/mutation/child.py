"""What runs inside one mutant's process: the chosen case groups, and a verdict written as JSON.

The process is forked from the runner's warm interpreter (or started fresh for mutants of code
that runs at import) with its working directory in the mutated tree. It selects the mutant
(``MUTANT_UNDER_TEST``, inherited by every rank and worker the cases start), runs each group's
cases in order and stops at the first red one when asked to.

A case that fails its comparison kills the mutant. A case that errors kills it only when the
exception passed through product code (a crash of the product under a mutant is a divergence a
user would see); an error raised by the harness alone is a harness error, never a kill.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CHILD_CODE", "child_env", "crash_site", "main", "run_spec"]

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_TRAMPOLINE = os.sep + os.path.join("mutmut", "mutation", "trampoline.py")


def child_env(tree: Path, extra_path: Sequence[Path] = ()) -> dict[str, str]:
    """A mutant process's environment: the tree first on the path, one case worker, no shrinking."""
    from parity.tools.child import _RENDEZVOUS_VARS
    from parity.tools.warm_start import _profile_env

    env = {k: v for k, v in os.environ.items() if k not in _RENDEZVOUS_VARS}
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in extra_path), str(tree)])
    env["PYTHONHASHSEED"] = "0"
    env["PARITY_JOBS"] = "1"
    env.setdefault("HYPOTHESIS_PROFILE", "selfcheck")  # red or green is the question, no shrinking
    env["MUTANT_UNDER_TEST"] = ""
    env["HYPER_PARALLEL_PLATFORM"] = "torch"
    env.update(_profile_env())
    return env


def crash_site(exc: BaseException, product_root: str) -> str | None:
    """The innermost product frame (``path:line``) an exception passed through, or None.

    The exception's text counts too: a failed forked rank comes back as the harness's
    ``RuntimeError`` quoting the rank's traceback. mutmut's trampoline is product code here (a
    mutant that raises on entry, as the forced-fail check's do, raises there).
    """
    text = "".join(traceback.format_exception(exc))
    frames = [
        (f, line) for f, line in _FRAME.findall(text) if f.startswith(product_root) or f.endswith(_TRAMPOLINE)
    ]
    if not frames:
        return None
    path, line = frames[-1]
    if path.startswith(product_root):
        path = "hyper_parallel/" + path[len(product_root) :]
    return f"{path}:{line}"


def _switch_context(label: str) -> None:
    """Tell coverage.py (when it measures this process) and the processes to come which group runs."""
    global _at_fork
    os.environ["PARITY_MUTATION_GROUP"] = label
    try:
        import coverage
    except ImportError:
        return
    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(label)
        if not _at_fork:
            # coverage.py restarts in a forked child (``patch = fork``) without the dynamic
            # context, so a forked rank's lines would count as run at import: set it again there.
            os.register_at_fork(after_in_child=_context_in_child)
            _at_fork = True


_at_fork = False


def _context_in_child() -> None:
    import coverage

    current = coverage.Coverage.current()
    label = os.environ.get("PARITY_MUTATION_GROUP")
    if current is not None and label:
        current.switch_context(label)


def _first_difference(outcome: Any) -> str:
    report = getattr(outcome, "report", None)
    diffs = getattr(report, "differences", None) or []
    if diffs:
        return str(getattr(diffs[0], "path", ""))
    return (outcome.message or "").strip().splitlines()[0][:200] if outcome.message else ""


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec["groups"]`` (lists of case ids) under ``spec["mutant"]``; return the verdict.

    Verdict: ``{"status": killed | survived | harness_error, "case", "evidence", "groups": [...]}``
    with one entry per group run (its status and seconds: the forced-fail check reads them).
    """
    from mutmut.mutation.trampoline import set_mutant_under_test

    from parity.cases import load_registry
    from parity.engine import Engine
    from parity.hypothesis_profiles import load_selected_profile

    product_root = os.path.realpath(Path(spec["tree"]) / "hyper_parallel") + os.sep
    # A mutant (or the stats mode) is on while the cases register, where a fresh process imports
    # them; the forced-fail mode only once they are loaded (it would stop every import).
    if spec["mutant"] != "fail":
        set_mutant_under_test(spec["mutant"])
    load_selected_profile()
    registry = load_registry(spec.get("cases", "parity.suites:REGISTRY"))
    import hyper_parallel

    if not os.path.realpath(hyper_parallel.__file__).startswith(product_root):
        raise RuntimeError(
            f"hyper_parallel was imported from {hyper_parallel.__file__}, not the mutated tree"
        )
    set_mutant_under_test(spec["mutant"])
    errors: dict[str, BaseException] = {}
    engine = Engine(registry, report_dir=None, on_error=lambda case, exc: errors.__setitem__(case.id, exc))
    stop = bool(spec.get("stop_at_first", True))

    def judge(case: Any) -> tuple[str, str]:
        """(pass | killed | harness_error, evidence) of one case under the mutant."""
        try:
            outcome = engine.check(case, "torch")
        except BaseException as exc:  # raised outside the case's own try (setup, sys.exit())
            error: BaseException | None = exc
        else:
            if outcome.status == "fail":
                return "killed", _first_difference(outcome)
            if outcome.status != "error":
                return "pass", ""
            error = errors.get(case.id)
            if error is None:
                return "harness_error", outcome.message[:160]
        assert error is not None
        site = crash_site(error, product_root)
        what = f"{type(error).__name__}: {error}"[:160]
        return ("killed", f"{what} (at {site})") if site else ("harness_error", what)

    verdict: dict[str, Any] = {"status": "survived", "case": None, "evidence": "", "groups": []}
    for index, group in enumerate(spec["groups"]):
        if spec.get("labels"):  # the coverage map's run: lines are filed per group
            _switch_context(spec["labels"][index])
        start = time.perf_counter()
        group_status = "pass"
        for case_id in group:
            case = registry.get(case_id)
            if case is None:
                verdict.update(status="harness_error", case=case_id, evidence="case not registered")
                return verdict
            status, evidence = judge(case)
            if status == "pass":
                continue
            if group_status != "killed":  # a kill outranks a harness error
                group_status = status
            if verdict["status"] != "killed":
                verdict.update(status=status, case=case_id, evidence=evidence)
            if stop and status == "killed":
                break
        verdict["groups"].append({"status": group_status, "seconds": time.perf_counter() - start})
        if stop and verdict["status"] == "killed":
            break
    return verdict


def main(argv: list[str] | None = None) -> int:
    """``python -c ... SPEC.json``: run the spec, write the verdict to ``spec["out"]`` atomically."""
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    try:
        verdict = run_spec(spec)
    except BaseException as exc:  # raised before any case ran: importing the product or the cases
        evidence = "".join(traceback.format_exception_only(exc)).strip()[:300]
        product_root = os.path.realpath(Path(spec["tree"]) / "hyper_parallel") + os.sep
        site = crash_site(exc, product_root)
        first = next((g[0] for g in spec["groups"] if g), None)
        if site and first is not None and spec.get("mutant") not in ("", "fail"):
            # The product itself cannot be imported under the mutant (a class check at import, say):
            # every case fails, the first one to run stands for them.
            verdict = {
                "status": "killed",
                "case": first,
                "evidence": f"the product fails at import: {evidence} (at {site})",
                "groups": [{"status": "killed", "seconds": 0.0}],
            }
        else:  # the harness's own failure
            verdict = {"status": "harness_error", "case": None, "evidence": evidence, "groups": []}
    if spec.get("modules_out"):  # the coverage map's run: what a case run imports, for the zygote
        Path(spec["modules_out"]).write_text("\n".join(sorted(sys.modules)), encoding="utf-8")
    out = Path(spec["out"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(verdict), encoding="utf-8")
    os.replace(tmp, out)
    return 0


# Run by the warm interpreter's fork (``python -c`` semantics) or a fresh one.
CHILD_CODE = "import sys\nfrom parity.tools.mutation.child import main\nraise SystemExit(main())\n"
