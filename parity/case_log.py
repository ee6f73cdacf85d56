"""What a framework logs and prints while a case runs: its errors fail the case, its chatter stays out.

A framework can log an error and carry on: the MindSpore profiler, started in a forked worker,
logged "Call to step failed. Exception: daemonic processes are not allowed to have children",
wrote no trace, and every case still passed. While a case runs (:func:`capture`):

- ERROR records of the frameworks' own loggers (``FRAMEWORK_LOGGERS``; MindSpore's does not
  propagate to the root logger) are also written to the case's ``errors.log``; after the case,
  each one makes a passing case an error that quotes them (the framework's own handler still
  prints them, nothing is hidden). MindSpore's C++ log lines go straight to file descriptor 2
  and are not read here; a C++ failure reaches Python as an exception, which errs the case anyway;
- ``sys.stdout`` is the case's ``output.log``: the MindSpore profiler prints "Start parsing
  profiling data" and a progress bar from its parsing processes. A green case's output is
  dropped; any other outcome's (and a case that raised) is printed after the case. A rich display
  on the real stdout keeps drawing there (``rich_proxied_file``);
- on a quiet command line (``python -m parity`` without ``--verbose``), WARNING records of the
  product's own loggers (``hyper_parallel.*``) go to the case's log, not the terminal: a case
  sets the product up on purpose (a tokenizer without pad or eos, ``decay_style: linear``, a
  resume that extends ``max_steps``), in temporary folders of its own, and the product warns about
  exactly that. They are printed with the output of a case that does not pass. Errors still print.

Processes the case forks inherit both (they append to the same files). The files live in the run's
scratch folder and are removed after the case.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from parity import scratch

if TYPE_CHECKING:
    from parity.engine import Outcome

__all__ = ["FRAMEWORK_LOGGERS", "CaseLog", "capture"]

# Logger-name prefix -> framework. MindSpore logs through "ME.mindspore.log.<pid>" (glog style).
FRAMEWORK_LOGGERS: dict[str, str] = {"ME.": "MindSpore"}
_MAX_QUOTED = 5  # error lines quoted in a message
_MAX_CHARS = 300  # per quoted line


class _OneLine(logging.Formatter):
    """``<framework>|<level>|<message on one line> (<where>)``: one record per line."""

    def format(self, record: logging.LogRecord) -> str:
        framework = next((fw for p, fw in FRAMEWORK_LOGGERS.items() if record.name.startswith(p)), "")
        message = " ".join(record.getMessage().split())
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f" ({type(exc).__name__}: {' '.join(str(exc).split())})"
        if len(message) > _MAX_CHARS:
            message = message[:_MAX_CHARS] + "..."
        where = "/".join(Path(record.pathname).parts[-3:])
        return f"{framework}|{record.levelname}|{message} ({where}:{record.lineno})"


class _Once(logging.Filter):
    """Passes a record once: a record that propagates reaches the handler on every matching logger."""

    def __init__(self) -> None:
        super().__init__()
        self.last: logging.LogRecord | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        seen, self.last = record is self.last, record
        return not seen


@dataclass
class CaseLog:
    """The framework errors and the output of one case (read once the case is over)."""

    folder: Path
    errors: list[str] = field(default_factory=list)  # "<framework>|<level>|<message>"
    output: str = ""
    warnings: list[str] = field(default_factory=list)  # the product's WARNING records, kept back

    def judge(self, outcome: Outcome) -> Outcome:
        """``outcome`` with the framework errors: a pass becomes an error quoting them; any other
        outcome names them too, and its output is printed."""
        if self.errors:
            frameworks = sorted({line.split("|", 1)[0] or "a framework" for line in self.errors})
            quoted = [f"  {level} {text}" for _, level, text in (e.split("|", 2) for e in self.errors)]
            if len(quoted) > _MAX_QUOTED:
                quoted = [*quoted[:_MAX_QUOTED], f"  ... and {len(quoted) - _MAX_QUOTED} more"]
            what = (
                f"{' and '.join(frameworks)} logged {len(self.errors)} error(s) while the case ran; "
                "what it was asked to do may not have happened:\n" + "\n".join(quoted)
            )
            if outcome.status == "pass":
                outcome.status = "error"
                outcome.message = f"PARITY ERROR  case={outcome.case.id}  backend={outcome.backend}: {what}"
            else:
                outcome.message = f"{outcome.message.rstrip()}\n{what}" if outcome.message else what
        if not outcome.ok and (self.output.strip() or self.warnings):
            said = "\n".join([*self.warnings, self.output.rstrip()]).strip()
            print(f"output of {outcome.case.id} ({outcome.backend}):\n{said}", flush=True)
        return outcome


PRODUCT_LOGGER = "hyper_parallel"


@contextlib.contextmanager
def warnings_of(logger_name: str = PRODUCT_LOGGER) -> Iterator[list[str]]:
    """The WARNING (and worse) messages of one logger while the block runs, as a list a case's rows
    can hold (the logger's level is WARNING meanwhile, so a quieter setting hides none)."""
    seen: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                seen.append(record.getMessage())

    logger = logging.getLogger(logger_name)
    handler, level = _Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class _KeepWarnings(logging.Handler):
    """On the product's top logger while a case runs (propagation off): keeps its WARNING records in
    the case's log and hands every other record on to the root logger's handlers, as propagation would."""

    def __init__(self, log: CaseLog) -> None:
        super().__init__(logging.NOTSET)
        self.log = log
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def handle(self, record: logging.LogRecord) -> bool:
        if logging.WARNING <= record.levelno < logging.ERROR:
            self.log.warnings.append(self.format(record))
        else:
            logging.getLogger().handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # pragma: no cover - handle() does the work
        pass


@contextlib.contextmanager
def _product_warnings_kept(log: CaseLog) -> Iterator[None]:
    from hyper_parallel.platform.quiet import quiet

    if not quiet():  # --verbose, or not under the harness's command line (pytest keeps its own logs)
        yield
        return
    product = logging.getLogger(PRODUCT_LOGGER)
    handler, propagate = _KeepWarnings(log), product.propagate
    product.addHandler(handler)
    product.propagate = False
    try:
        yield
    finally:
        product.propagate = propagate
        product.removeHandler(handler)


def _framework_loggers() -> list[logging.Logger]:
    names = [
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and name.startswith(tuple(FRAMEWORK_LOGGERS))
    ]
    return [logging.getLogger(name) for name in sorted(names)]


@contextlib.contextmanager
def capture() -> Iterator[CaseLog]:
    """Collect the framework errors and the stdout of the case run inside (module docstring)."""
    log = CaseLog(Path(tempfile.mkdtemp(prefix="parity-case-", dir=scratch.install())))
    errors_path, output_path = log.folder / "errors.log", log.folder / "output.log"
    handler = logging.FileHandler(errors_path, mode="a", encoding="utf-8")
    handler.setLevel(logging.ERROR)
    handler.setFormatter(_OneLine())
    handler.addFilter(_Once())
    loggers = _framework_loggers()
    for logger in loggers:
        logger.addHandler(handler)
    real_stdout = sys.stdout
    output = open(output_path, "a", encoding="utf-8", buffering=1)  # closed in the finally below
    proxied = getattr(real_stdout, "rich_proxied_file", None)
    if proxied is not None:  # rich's Live keeps drawing on the terminal
        output.rich_proxied_file = proxied  # type: ignore[attr-defined]
    sys.stdout = output
    raised = True
    try:
        with _product_warnings_kept(log):
            yield log
        raised = False
    finally:
        if sys.stdout is output:
            sys.stdout = real_stdout
        output.close()
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()
        with contextlib.suppress(OSError):
            log.errors = [line for line in errors_path.read_text(encoding="utf-8").splitlines() if line]
        with contextlib.suppress(OSError):
            log.output = output_path.read_text(encoding="utf-8", errors="replace")
        shutil.rmtree(log.folder, ignore_errors=True)
        if raised and (log.output.strip() or log.warnings):  # the case raised through: what it said
            print("\n".join([*log.warnings, log.output.rstrip()]).strip(), flush=True)
