"""``-k`` selection for the CLI: pytest-like ``and`` / ``or`` / ``not`` / parentheses over substrings.

The library does not depend on pytest at run time, so this is a tiny parser of its own: a word
matches when it is a substring of the case id.
"""

from __future__ import annotations

import re

__all__ = ["keyword_matches"]

_TOKEN_RE = re.compile(r"\s*(\(|\)|[^\s()]+)")


def _tokens(expr: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        match = _TOKEN_RE.match(expr, pos)
        if match is None:  # only trailing whitespace is left
            break
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def keyword_matches(expr: str, name: str) -> bool:
    """Evaluate ``expr`` (e.g. ``"lr_curve and not cosine"``) against ``name``."""
    tokens = _tokens(expr)
    if not tokens:
        return True
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"-k {expr!r}: unexpected end of expression")
        pos += 1
        return tokens[pos - 1]

    def parse_or() -> bool:
        value = parse_and()
        while peek() == "or":
            take()
            rhs = parse_and()
            value = value or rhs
        return value

    def parse_and() -> bool:
        value = parse_not()
        while peek() == "and":
            take()
            rhs = parse_not()
            value = value and rhs
        return value

    def parse_not() -> bool:
        if peek() == "not":
            take()
            return not parse_not()
        return parse_atom()

    def parse_atom() -> bool:
        token = take()
        if token == "(":
            value = parse_or()
            if take() != ")":
                raise ValueError(f"-k {expr!r}: expected ')'")
            return value
        if token in (")", "and", "or"):
            raise ValueError(f"-k {expr!r}: unexpected {token!r}")
        return token in name

    result = parse_or()
    if pos != len(tokens):
        raise ValueError(f"-k {expr!r}: unexpected {tokens[pos]!r}")
    return result
