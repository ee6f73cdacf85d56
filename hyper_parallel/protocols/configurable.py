"""Configurable: a component class and the nested ``Config`` dataclass that builds it.

A component declares its settings as a nested dataclass and is constructed from it::

    class Profiler(Configurable):
        @dataclass(kw_only=True, slots=True)
        class Config(Configurable.Config):
            enabled: bool = False

        def __init__(self, config: "Profiler.Config") -> None:
            self.config = config

    profiler = Profiler.Config(enabled=True).build()

Rules (the same semantics as torchtitan's Configurable):

- ``Config`` is decorated ``@dataclass(kw_only=True, slots=True)`` and subclasses the parent
  component's ``Config``. Keyword-only fields let subclasses add fields with or without defaults
  in any order; slots make a misspelt attribute assignment an error instead of a silent no-op.
- ``Configurable.__init_subclass__`` checks this and records the owner: ``Config._owner = cls``.
- A subclass that declares no ``Config`` of its own inherits the parent's, whose ``_owner`` stays
  the parent: ``Child.Config().build()`` builds a ``Parent``. A subclass that wants its own builder
  declares its own, possibly empty, ``Config``.
- ``Config.build(**kwargs)`` calls ``owner(config=<shallow copy of the Config>, **kwargs)``. kwargs
  carry runtime objects only (model parts, optimizers, a tokenizer, the dp rank); a kwarg that
  repeats a config field is an error, so a value has exactly one source. The owner's
  ``__init__`` therefore names its first parameter ``config``.
- Slotted dataclasses are re-created by ``@dataclass``, which breaks zero-argument ``super()``
  inside methods defined in the class body: call the parent explicitly
  (``Parent.Config.method(self)``).
- A field typed with a base ``Config`` may default to a concrete subclass
  (``tokenizer: BaseTokenizer.Config = field(default_factory=HuggingFaceTokenizer.Config)``);
  ``build()`` then constructs the concrete owner.

This module does not import tyro: only the command line needs it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import types
import typing
from collections.abc import Hashable, Iterator
from enum import Enum
from typing import Any, ClassVar, Self, TypeVar, cast

import typeguard

__all__ = ["ConfigMixin", "Configurable", "check_field_types", "validate_config_class"]

T = TypeVar("T")

# Method names a Config field must not shadow.
_RESERVED_NAMES = frozenset({"build", "to_dict", "traverse", "replace"})


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _public_fields(obj: Any) -> Iterator[dataclasses.Field]:
    return (f for f in dataclasses.fields(obj) if not f.name.startswith("_"))


def _callable_name(value: Any) -> str:
    """A stable name for functions and classes (their repr carries a memory address)."""
    module = getattr(value, "__module__", None)
    qualname = value.__qualname__
    return f"{module}.{qualname}" if module else qualname


def _plain(value: Any) -> Any:
    """Turn a config value into JSON-able data: dicts, lists, str, int, float, bool, None."""
    if isinstance(value, Enum):
        return _plain(value.value)
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if _is_dataclass_instance(value):
        return {f.name: _plain(getattr(value, f.name)) for f in _public_fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(item) for item in value), key=repr)
    if isinstance(value, dict):
        return {_plain_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if callable(value) and hasattr(value, "__qualname__"):
        return _callable_name(value)
    return repr(value)


def _plain_key(key: Any) -> str:
    plain = _plain(key)
    return plain if isinstance(plain, str) else repr(plain)


def _walk(value: Any, cls: type) -> Iterator[Any]:
    """Depth-first, pre-order walk through dataclasses, lists, tuples and dict values."""
    if _is_dataclass_instance(value):
        if isinstance(value, cls):
            yield value
        for f in _public_fields(value):
            yield from _walk(getattr(value, f.name), cls)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item, cls)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item, cls)


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _bare(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _admits_bool(tp: Any) -> bool:
    """Whether ``tp`` names bool itself (``bool`` is an ``int`` to isinstance, not to a config)."""
    tp = _bare(tp)
    if tp in (bool, Any, object):
        return True
    if typing.get_origin(tp) is typing.Literal:
        return any(isinstance(arg, bool) for arg in typing.get_args(tp))
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_admits_bool(arg) for arg in typing.get_args(tp))
    return False


def _type_text(tp: Any) -> str:
    tp = _bare(tp)
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def check_field_types(config: Any, prefix: str = "") -> None:
    """Refuse a config tree holding a value its annotation does not allow; ``TypeError`` naming it.

    The command line types every value before a Config exists; a recipe written in Python does
    not, and a field's own ``__post_init__`` checks ranges, not kinds. So a trainer checks its
    whole tree once before it builds anything: each public field of each nested config against
    its annotation (typeguard: ``Literal``, ``X | None``, ``tuple[int, ...]``, every item of a
    collection), with a bool refused where the annotation does not name bool.
    """
    hints = _field_hints(cast(Hashable, type(config)))
    for spec in dataclasses.fields(config):
        if not spec.init or spec.name.startswith("_"):
            continue
        value = getattr(config, spec.name)
        if _is_dataclass_instance(value):
            check_field_types(value, f"{prefix}{spec.name}.")
            continue
        hint = hints[spec.name]
        try:
            typeguard.check_type(
                value, hint, collection_check_strategy=typeguard.CollectionCheckStrategy.ALL_ITEMS
            )
            ok = not isinstance(value, bool) or _admits_bool(hint)
        except typeguard.TypeCheckError:
            ok = False
        if not ok:
            raise TypeError(
                f"{prefix}{spec.name}: expected {_type_text(hint)}, got {value!r} ({type(value).__name__})"
            )


class ConfigMixin:
    """Dict export, traversal and copy-with-changes for slotted config dataclasses.

    Shared by component Configs and by the plain value configs in ``hyper_parallel.config``.
    It has empty ``__slots__`` so that it does not give slotted subclasses a ``__dict__``.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the config as plain data, recursing into nested configs, lists, tuples and dicts.

        Fields whose name starts with ``_`` are skipped. Tuples and sets become lists, enums their
        value, paths strings, functions and classes ``"module.qualname"`` (stable across runs),
        any other object its ``repr``.
        """
        return _plain(self)

    def traverse(self, cls: type[T]) -> Iterator[T]:
        """Yield every config in this tree (``self`` included) that is an instance of ``cls``.

        Depth-first in field order; lists, tuples and dict values are entered; ``_private``
        fields are not.
        """
        return _walk(self, cls)

    def replace(self, **changes: Any) -> Self:
        """Return a copy with ``changes`` applied (``__post_init__`` validation runs again).

        The copy is shallow: unchanged nested configs are shared with ``self``.
        """
        known = {f.name for f in dataclasses.fields(cast(Any, self))}  # every Config is a dataclass
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(
                f"{type(self).__qualname__}.replace(): unknown field(s) {', '.join(unknown)}; "
                f"known fields: {', '.join(sorted(known))}"
            )
        return cast(Self, dataclasses.replace(cast(Any, self), **changes))


def validate_config_class(config_cls: type, owner_name: str) -> None:
    """Raise ``TypeError`` unless ``config_cls`` is a ``@dataclass(kw_only=True, slots=True)``.

    ``owner_name`` names the class in the message (the component, or the config itself).
    """
    where = f"{owner_name}: {config_cls.__qualname__}"
    if "__dataclass_fields__" not in vars(config_cls):
        raise TypeError(f"{where} must be decorated with @dataclass(kw_only=True, slots=True)")
    if "__slots__" not in vars(config_cls):
        raise TypeError(f"{where} must be a slotted dataclass: use @dataclass(kw_only=True, slots=True)")
    with_dict = [k.__qualname__ for k in config_cls.__mro__ if "__dict__" in vars(k)]
    if with_dict:
        raise TypeError(
            f"{where} instances still get a __dict__ from base class(es) without __slots__: "
            f"{', '.join(with_dict)}"
        )
    positional = [f.name for f in dataclasses.fields(config_cls) if not f.kw_only]
    if positional:
        raise TypeError(
            f"{where} has fields that are not keyword-only ({', '.join(positional)}); "
            "use @dataclass(kw_only=True, slots=True)"
        )
    shadowing = sorted(_RESERVED_NAMES & {f.name for f in dataclasses.fields(config_cls)})
    if shadowing:
        raise TypeError(f"{where} has fields that shadow Config methods: {', '.join(shadowing)}")


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    """Dataclass field names of a Config class, computed once per class (build() is hot)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def _shallow_copy(config: Any, field_names: frozenset[str]) -> Any:
    """``copy.copy`` for a slotted dataclass without the generic ``__reduce_ex__`` round trip."""
    clone = object.__new__(type(config))
    for name in field_names:
        object.__setattr__(clone, name, getattr(config, name))
    return clone


class Configurable:
    """Base class of every component that is built from a nested ``Config``."""

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Config(ConfigMixin):
        """Base of every component Config; building it directly is an error (it has no owner)."""

        # The component class this Config builds; set by Configurable.__init_subclass__.
        _owner: ClassVar[type | None] = None

        def build(self, **kwargs: Any) -> Any:
            """Construct the owning component as ``owner(config=<shallow copy>, **kwargs)``.

            The copy means the built component never shares this Config object, so a later
            ``replace``/rebuild cannot alias it; nested Configs inside the copy are the same
            objects as in ``self`` (shallow copy).
            """
            cls = type(self)
            owner = cls._owner
            if owner is None:
                raise TypeError(
                    f"{cls.__qualname__} has no owner component and cannot be built; build the Config of a "
                    "concrete Configurable subclass instead"
                )
            field_names = _field_names(cls)
            if kwargs and not field_names.isdisjoint(kwargs):
                raise ValueError(
                    f"{cls.__qualname__}.build(): kwargs repeat config field(s) "
                    f"{', '.join(sorted(field_names.intersection(kwargs)))}; kwargs are for runtime objects "
                    "only, set config values on the Config (e.g. with replace())"
                )
            if "config" in kwargs:
                raise ValueError(
                    f"{cls.__qualname__}.build(): 'config' is passed by build() itself, not as a kwarg"
                )
            return owner(config=_shallow_copy(self, field_names), **kwargs)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        config_cls = cls.__dict__.get("Config")
        if config_cls is None:
            return  # inherits the parent's Config, which keeps building the parent
        if not isinstance(config_cls, type) or not issubclass(config_cls, Configurable.Config):
            raise TypeError(f"{cls.__qualname__}.Config must subclass Configurable.Config")
        for base in cls.__mro__[1:]:
            parent_config = base.__dict__.get("Config")
            if isinstance(base, type) and issubclass(base, Configurable) and parent_config is not None:
                if not issubclass(config_cls, parent_config):
                    raise TypeError(
                        f"{cls.__qualname__}.Config must subclass {base.__qualname__}.Config "
                        "(so that a field typed with the parent Config accepts it)"
                    )
                break
        validate_config_class(config_cls, cls.__qualname__)
        config_cls._owner = cls
