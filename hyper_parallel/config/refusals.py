"""One-line refusals of the ``--module``/``--config`` command line: ``<flag>: <what was expected>``.

tyro reports a refused command line (an unknown flag, a value of the wrong type, a value outside a
closed set, a missing value, a Config whose ``__post_init__`` refuses a value) as a multi-line box
and ``SystemExit(2)``. ``refusals_as_errors`` turns each of them into one ``CommandLineError``,
which the entry points print as ``<prog>: error: <flag>: <what was expected>`` with exit status 2
(``hyper_parallel.entry``). ``--help`` is untouched.

It listens to tyro's parse-error hook (``tyro._errors.on_parse_error``, tyro >= 1.0.17; an
experimental API, so every use is guarded): each event names the argument, the value and the
choices. A refusal the hook does not describe (a tyro without the hook, or an event type added
later) still becomes one line: tyro's own report is captured and flattened.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import io
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["CommandLineError", "refusals_as_errors"]

# The borders and rules of tyro's report (UTF-8 or ASCII boxes); flattened away by the fallback.
_BORDERS = "│┃|"
_RULES = "╭╮╰╯─━┏┓┗┛├┤┬┴┼-_=+ "
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class CommandLineError(ValueError):
    """A refused command line; ``str()`` is ``<flag>: <what was expected>`` (one line)."""

    def __init__(self, flag: str, expected: str) -> None:
        expected = " ".join(expected.split())
        super().__init__(f"{flag}: {expected}")
        self.flag = flag
        self.expected = expected


# A sorted list of every flag and a sorted list of every subcommand (``dataloader:hf_text``): for "did you mean".
Surface = Callable[[], tuple[list[str], list[str]]]


@contextlib.contextmanager
def refusals_as_errors(argv: Sequence[str], surface: Surface) -> Iterator[None]:
    """Run a ``tyro.cli`` call inside: each refusal it makes raises ``CommandLineError`` instead.

    ``argv`` is what tyro parses (to find the value given to a flag and the flags the user set);
    ``surface`` lists the flags and subcommands, only called for an unknown one.
    """
    tokens = list(argv)
    errors = _tyro_errors()

    def hook(event: Any) -> None:
        try:
            refusal = _from_event(errors, event, tokens, surface, sys.exc_info()[1])
        except Exception:  # an event of another shape (the hook API is experimental): tyro's report
            refusal = None
        if refusal is not None:
            raise refusal

    captured = io.StringIO()
    with contextlib.ExitStack() as stack:
        if errors is not None:
            stack.enter_context(errors.on_parse_error(hook))
        try:
            with contextlib.redirect_stderr(captured):
                yield
        except SystemExit as exc:
            if exc.code in (0, None):
                _replay(captured)
                raise
            raise _from_report(captured.getvalue(), tokens) from None
        except BaseException:
            _replay(captured)
            raise
        _replay(captured)


def _tyro_errors() -> Any:
    """tyro's parse-error hook module, or None where this tyro has none."""
    try:
        module = importlib.import_module("tyro._errors")
    except ImportError:
        return None
    return module if callable(getattr(module, "on_parse_error", None)) else None


def _replay(captured: io.StringIO) -> None:
    """What tyro wrote to stderr meanwhile (a warning, say) goes out after all."""
    text = captured.getvalue()
    if text:
        sys.stderr.write(text)


# ----------------------------------------------------------------------------- from a hook event


def _from_event(
    errors: Any, event: Any, argv: list[str], surface: Surface, handling: BaseException | None
) -> CommandLineError | None:
    """The one-line refusal of a tyro parse-error event; None for an event type not known here."""
    if isinstance(event, errors.InvalidChoice):
        names = list(dict.fromkeys(str(choice) for choice in event.choices))
        if "None" in names:
            # tyro builds an Optional Literal's choices from a set, whose order changes with
            # PYTHONHASHSEED: those are named sorted (None last), the same in every run.
            names.sort(key=lambda name: (name == "None", name))
        choices = ", ".join(names)
        return CommandLineError(_name(event.argument), f"expected one of {choices}, got {event.value!r}")
    if isinstance(event, errors.BadValue):
        return _bad_value(event)
    if isinstance(event, errors.InstantiationFailure):
        return _instantiation(event, argv, handling)
    if isinstance(event, errors.UnrecognizedArgs):
        return _unrecognized(event.tokens, argv, surface)
    if isinstance(event, errors.MissingArgs):
        names = [_name(item.arg) for item in event.missing_arguments]
        first = event.missing_arguments[0].arg
        also = f" (also missing: {', '.join(names[1:])})" if len(names) > 1 else ""
        return CommandLineError(names[0], f"expected a value ({_metavar(first)}); it has no default{also}")
    if isinstance(event, errors.MissingSubcommand):
        names = sorted(event.subcommand_spec.parser_from_name)
        group = names[0].partition(":")[0] if names and ":" in names[0] else event.prog
        return CommandLineError(group, f"expected a subcommand, one of {', '.join(names)}")
    if isinstance(event, errors.MutexConflict):
        return CommandLineError(
            event.second_token, f"expected it without {event.first_token} (one of the two)"
        )
    if isinstance(event, errors.MissingMutexGroup):
        members = [_name(item.arg) for group in event.groups for item in group]
        return CommandLineError(members[0], f"expected one of {', '.join(members)}")
    if isinstance(event, errors.SubcommandConflict):
        if event.is_same_subcommand:
            expected = (
                f"given after {event.trigger_flag}, which already selected it; expected it once, before"
            )
        else:
            expected = (
                f"expected before {event.trigger_flag}, which already selected {event.already_selected} "
                "(a flag of the default subcommand)"
            )
        return CommandLineError(event.attempted, expected)
    return None


def _name(argument: Any) -> str:
    try:
        return str(argument.display_name())
    except Exception:  # an ArgumentDefinition of another tyro: its flags
        return "/".join(getattr(getattr(argument, "lowered", None), "name_or_flags", ()) or ("?",))


def _metavar(argument: Any) -> str:
    """tyro's metavar, readable: ``{None}|INT`` -> ``INT or None``."""
    metavar = getattr(getattr(argument, "lowered", None), "metavar", None)
    if not metavar:
        return "a value"
    parts = [part.strip() for part in str(metavar).split("|")]
    parts = [("None" if part == "{None}" else part) for part in parts]
    if len(parts) > 1 and "None" in parts:  # the value first, None last
        parts = [part for part in parts if part != "None"] + ["None"]
    return " or ".join(parts)


def _bad_value(event: Any) -> CommandLineError:
    flag = _name(event.argument)
    if event.reason == "fixed":
        default = getattr(getattr(event.argument, "field", None), "default", None)
        return CommandLineError(flag, f"takes no value (fixed to {default!r}), got {event.offending_value!r}")
    nargs = getattr(event.argument.lowered, "nargs", 1)
    count = "a value" if nargs in (1, "?") else f"{nargs} values" if isinstance(nargs, int) else "values"
    return CommandLineError(flag, f"expected {count} ({_metavar(event.argument)}), got fewer")


def _given_value(argv: list[str], flags: Sequence[str], nargs: Any) -> str | None:
    """The value(s) of the last of ``flags`` in ``argv`` (``--f v`` or ``--f=v``), as typed."""
    count = nargs if isinstance(nargs, int) else 1
    found = None
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if _canonical(name) not in flags:
            continue
        found = value if eq else " ".join(argv[i + 1 : i + 1 + count])
    return found


def _canonical(flag: str) -> str:
    """``--a.b-c`` -> ``--a.b_c`` (tyro takes hyphens for underscores)."""
    return flag[:2] + flag[2:].replace("-", "_") if flag.startswith("--") else flag


def _instantiation(event: Any, argv: list[str], handling: BaseException | None) -> CommandLineError:
    message = " ".join(str(event.message).split())
    if event.argument is not None:  # a value tyro could not convert (``int('abc')``)
        flag = _name(event.argument)
        if message.startswith("expected"):
            return CommandLineError(flag, message)
        flags = [_canonical(f) for f in getattr(event.argument.lowered, "name_or_flags", ())]
        given = _given_value(argv, flags, getattr(event.argument.lowered, "nargs", 1))
        # The value as typed says it all; without it, the converter's own message does.
        detail = f"got {given!r}" if given is not None else f"({message})"
        return CommandLineError(flag, f"expected {_metavar(event.argument)}, {detail}")
    # A Config's __post_init__ refused the values: tyro names the section it was building (the
    # InstantiationError being handled); the flag is the one the user gave that the message names.
    where = getattr(handling, "arg", None)
    section = where if isinstance(where, str) else ""
    blamed = _blame(message, argv, section)
    if blamed is None:
        return CommandLineError(section or "command line", message)
    flag = blamed
    leaf = flag.rpartition(".")[2].lstrip("-")
    # "TrainingConfig.steps: expected ..." under --training.steps: the flag already says which field.
    stripped = re.sub(rf"^[\w.]*\b{re.escape(leaf)}:\s*", "", message)
    return CommandLineError(flag, stripped or message)


def _blame(message: str, argv: list[str], section: str) -> str | None:
    """The flag under ``section`` given in ``argv`` that ``message`` names first (by its field name)."""
    prefix = f"--{section}." if section else "--"
    best: tuple[int, int, int] | None = None
    blamed = None
    for order, token in enumerate(argv):
        flag = _canonical(token.partition("=")[0])
        if not flag.startswith(prefix):
            continue
        parts = flag[2:].split(".")
        for depth in range(len(parts), 0, -1):  # the longest dotted tail the message contains
            found = re.search(rf"(?<!\w){re.escape('.'.join(parts[-depth:]))}(?!\w)", message)
            if found:
                score = (found.start(), -depth, -order)  # first named, most specific, last given
                if best is None or score < best:
                    best, blamed = score, flag
                break
    return blamed


def _unrecognized(tokens: list[str], argv: list[str], surface: Surface) -> CommandLineError:
    token = str(tokens[0])
    flags, subcommands = surface()
    if token.startswith("-"):
        name = _canonical(token.partition("=")[0])
        if name in flags:  # a real flag in the wrong place (before or after its subcommand, or twice)
            return CommandLineError(
                name,
                "not accepted here; expected once, and the flags of a subcommand's Config after that "
                "subcommand (dataloader:NAME --dataloader.x v)",
            )
        match = difflib.get_close_matches(name, flags, n=1)
        hint = f"did you mean {match[0]}?" if match else "see --help for the flags"
        return CommandLineError(name, f"unknown flag; {hint}")
    group = token.partition(":")[0]
    choices = [name for name in subcommands if name.partition(":")[0] == group] if ":" in token else []
    if choices:
        return CommandLineError(token, f"unknown subcommand; expected one of {', '.join(choices)}")
    previous = _previous_flag(argv, token)
    if previous is not None:
        return CommandLineError(previous, f"takes one value; got the extra value {token!r}")
    return CommandLineError(
        token, "unexpected argument; expected --section.field VALUE pairs or a subcommand"
    )


def _previous_flag(argv: list[str], token: str) -> str | None:
    """The flag before the first occurrence of ``token`` in ``argv``, if it is one."""
    for i, item in enumerate(argv):
        if item == token:
            for earlier in reversed(argv[:i]):
                if earlier.startswith("--"):
                    return _canonical(earlier.partition("=")[0])
            return None
    return None


# ----------------------------------------------------------------------------- from tyro's report


def _from_report(report: str, argv: list[str]) -> CommandLineError:
    """tyro's multi-line report, flattened to one line (a refusal the hook does not describe).

    The report is a box (UTF-8 or ASCII): a title, then sections split by rules; the first
    section is the error, the others are help.
    """
    rows = [_ANSI.sub("", row).strip().strip(_BORDERS).strip() for row in report.splitlines()]
    rows = [row for row in rows if row][1:]  # the title ("Value error", "Unrecognized options")
    sections: list[list[str]] = [[]]
    for row in rows:
        if not row.strip(_RULES):
            if sections[-1]:
                sections.append([])
            continue
        sections[-1].append(row)
    text = " ".join(" ".join(sections[0]).split())
    flags = re.findall(r"--[A-Za-z][\w.\-]*", text)
    flag = _canonical(flags[0]) if flags else _blame(text, argv, "") or "command line"
    return CommandLineError(flag, text or f"refused: {' '.join(argv)}")
