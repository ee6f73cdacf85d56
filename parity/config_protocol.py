"""The ``Configurable`` protocol's own contract: what defining, replacing and building tells its user.

Every component of the new path is a ``Configurable`` with a nested ``Config``
(``hyper_parallel.protocols.configurable``). The trainers only ever define and build correct ones,
so the checks a component author meets (a ``Config`` that is not a keyword-only slotted dataclass,
one that does not extend its parent's, a field named like a ``Config`` method) and the calls a
recipe author makes (``replace`` with a known or unknown field, ``build`` with keyword arguments
that repeat a field) are reached by no run. Here each is made once:

- ``definitions``: a component class defined with each mistake (and correctly, without a
  ``Config`` of its own, over a parent without one, after a mixin): ``ok`` or the one error line;
- ``replace``: a field changed, no change, an unknown field, two unknown fields, and a value its
  ``__post_init__`` refuses: the resulting fields or the error line;
- ``build``: the owner built, with a runtime keyword, with a keyword that repeats a field, with
  ``config=``, and the base ``Configurable.Config`` (which has no owner);
- ``tree``: ``traverse`` over the debug recipe, and ``to_dict`` of a Config holding a function and
  a class (their stable dotted names).

Used by the ``protocols.configurable_contract`` golden (``parity/suites/protocols.py``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from parity.canonical import error_line

__all__ = ["contract_rows"]


_LOCALS = re.compile(r"(?:\w+\.<locals>\.)+")  # where this module defines its classes: not the product's


def _line(exc: BaseException) -> str:
    return _LOCALS.sub("", error_line(exc))


def _outcome(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception as exc:  # the refusal is the compared value
        return _line(exc)


def _definitions() -> dict[str, Callable[[], Any]]:
    from hyper_parallel.protocols.configurable import Configurable

    def good() -> str:
        class Widget(Configurable):
            @dataclasses.dataclass(kw_only=True, slots=True)
            class Config(Configurable.Config):
                size: int = 1

        class Gadget(Widget):  # no Config of its own: builds through the parent's
            pass

        return f"ok (Gadget.Config builds {getattr(Gadget.Config._owner, '__name__', None)})"

    def define(config: Any, base: Any = None) -> Callable[[], str]:
        def make() -> str:
            type("Widget", (base or Configurable,), {"Config": config})
            return "ok"

        return make

    class Plain(Configurable.Config):  # a subclass, but no dataclass of its own
        pass

    @dataclasses.dataclass(kw_only=True)
    class NoSlots(Configurable.Config):
        size: int = 1

    @dataclasses.dataclass(slots=True)
    class Positional(Configurable.Config):
        size: int = 1

    class Mixin:  # a base without __slots__: instances get a __dict__
        pass

    @dataclasses.dataclass(kw_only=True, slots=True)
    class WithDict(Configurable.Config, Mixin):
        size: int = 1

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Shadowing(Configurable.Config):
        replace: int = 1  # type: ignore[assignment]  # the mistake this row makes

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Unrelated:
        size: int = 1

    @dataclasses.dataclass(kw_only=True, slots=True)
    class ParentConfig(Configurable.Config):
        size: int = 1

    Parent = type("Parent", (Configurable,), {"Config": ParentConfig})

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Sibling(Configurable.Config):  # not a subclass of Parent.Config
        size: int = 1

    def grandchild() -> str:
        """A Config two levels down, over a parent that has none of its own: checked against the
        nearest class that has one."""
        Gadget = type("Gadget", (Parent,), {})

        @dataclasses.dataclass(kw_only=True, slots=True)
        class GizmoConfig(ParentConfig):
            depth: int = 2

        type("Gizmo", (Gadget,), {"Config": GizmoConfig})
        return "ok"

    def beside_a_mixin() -> str:
        @dataclasses.dataclass(kw_only=True, slots=True)
        class MixedConfig(Configurable.Config):
            size: int = 1

        type("Mixed", (Mixin, Configurable), {"Config": MixedConfig})
        return "ok"

    return {
        "correct, and a subclass without a Config": good,
        "a Config over a parent class without one": grandchild,
        "a Configurable after a mixin without a Config": beside_a_mixin,
        "Config is not a class": define(5),
        "Config does not extend Configurable.Config": define(Unrelated),
        "Config is not a dataclass": define(Plain),
        "Config is not slotted": define(NoSlots),
        "Config has positional fields": define(Positional),
        "Config has a base without __slots__": define(WithDict),
        "Config has a field named like a Config method": define(Shadowing),
        "a subclass's Config does not extend its parent's": define(Sibling, Parent),
    }


def _replace_rows() -> dict[str, Any]:
    from hyper_parallel.components.optimizer import OptimizersContainer

    config = OptimizersContainer.Config()

    def fields(c: Any) -> dict[str, str]:
        return {f.name: repr(getattr(c, f.name)) for f in dataclasses.fields(c)}

    def changed(**changes: Any) -> Callable[[], Any]:
        def make() -> Any:
            out = config.replace(**changes)
            before, after = fields(config), fields(out)
            return {
                "changed": {k: after[k] for k in after if after[k] != before[k]},
                "a new object": out is not config,
                "the original unchanged": fields(config) == before,
            }

        return make

    return {
        "lr=0.5": _outcome(changed(lr=0.5)),
        "no change": _outcome(changed()),
        "an unknown field": _outcome(changed(zz_unknown=1)),
        "two unknown fields and a known one": _outcome(changed(zz_b=1, zz_a=2, lr=0.5)),
        "a value __post_init__ refuses": _outcome(changed(lr=-1.0)),
    }


def _build_rows() -> dict[str, Any]:
    from hyper_parallel.protocols.configurable import Configurable

    class Widget(Configurable):
        @dataclasses.dataclass(kw_only=True, slots=True)
        class Config(Configurable.Config):
            size: int = 1

        def __init__(self, config: Any, **runtime: Any) -> None:
            self.config, self.runtime = config, runtime

    config = Widget.Config(size=3)

    def built(**kwargs: Any) -> Callable[[], Any]:
        def make() -> Any:
            widget = config.build(**kwargs)
            return {
                "owner": type(widget).__name__,
                "size": widget.config.size,
                "a copy of the Config": widget.config is not config,
                "runtime": sorted(widget.runtime),
            }

        return make

    return {
        "no keywords": _outcome(built()),
        "a runtime keyword": _outcome(built(device="cpu")),
        "a keyword that repeats a field": _outcome(built(size=4)),
        "config= as a keyword": _outcome(built(config=config)),
        "the base Configurable.Config": _outcome(lambda: Configurable.Config().build()),
    }


def _tree_rows() -> dict[str, Any]:
    """``traverse`` over the debug recipe (every Config of a kind, in order) and ``to_dict`` of a
    Config holding a function and a class (their stable names, not a repr with an address)."""
    from hyper_parallel.protocols.configurable import Configurable
    from hyper_parallel.recipes import qwen3_5

    recipe = qwen3_5.debug()

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Holder(Configurable.Config):
        function: Any = None
        kind: Any = None

    return {
        "traverse Configurable.Config": [type(c).__qualname__ for c in recipe.traverse(Configurable.Config)],
        "traverse the optimizer's Config": [
            type(c).__qualname__ for c in recipe.traverse(type(recipe.optimizer))
        ],
        "to_dict with a function and a class": _outcome(
            lambda: Holder(function=_line, kind=Configurable).to_dict()
        ),
    }


def contract_rows() -> dict[str, Any]:
    """``{definitions|replace|build|tree: {row: outcome}}`` (module docstring)."""
    return {
        "definitions": {label: _outcome(make) for label, make in _definitions().items()},
        "replace": _replace_rows(),
        "build": _build_rows(),
        "tree": _tree_rows(),
    }
