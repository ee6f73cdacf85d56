"""Configurable: decorator checks, owner wiring, build, to_dict, traverse, replace, polymorphism."""

from __future__ import annotations

import dataclasses
import enum
import functools
import pathlib
from dataclasses import dataclass, field

import pytest

from hyper_parallel.protocols import (
    BASE_MESH_AXES,
    FLATTENED_MESH_AXES,
    Configurable,
    MeshAxisName,
    ModelSpec,
    verify_module_protocol,
)
from hyper_parallel.protocols.configurable import validate_config_class


def scale(x: int) -> int:
    return 2 * x


class Color(enum.Enum):
    RED = "red"


# --------------------------------------------------------------------------- sample components
class Tokenizer(Configurable):
    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        path: str = "tok"

    def __init__(self, config: Tokenizer.Config) -> None:
        self.config = config


class HFTokenizer(Tokenizer):
    @dataclass(kw_only=True, slots=True)
    class Config(Tokenizer.Config):
        trust_remote_code: bool = False


class InheritsConfig(Tokenizer):
    """Declares no Config: Config is Tokenizer.Config, which still builds a Tokenizer."""


class EmptyOwnConfig(Tokenizer):
    @dataclass(kw_only=True, slots=True)
    class Config(Tokenizer.Config):
        pass


class Optim(Configurable):
    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        lr: float = 1e-3
        betas: tuple[float, float] = (0.9, 0.999)
        decay_keywords: list[str] = field(default_factory=lambda: ["bias", "norm"])
        _secret: int = 7

        def describe(self) -> str:
            return f"lr={self.lr}"

    def __init__(self, config: Optim.Config, *, model_parts: list, dp_rank: int = 0) -> None:
        self.config = config
        self.model_parts = model_parts
        self.dp_rank = dp_rank


class AdamW(Optim):
    @dataclass(kw_only=True, slots=True)
    class Config(Optim.Config):
        eps: float = 1e-8

        def describe(self) -> str:
            # zero-argument super() is broken in slotted dataclasses: name the parent explicitly
            return Optim.Config.describe(self) + f" eps={self.eps}"


class Trainer(Configurable):
    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        tokenizer: Tokenizer.Config = field(default_factory=HFTokenizer.Config)
        optimizer: Optim.Config = field(default_factory=AdamW.Config)
        extras: list[Tokenizer.Config] = field(default_factory=lambda: [Tokenizer.Config(path="a")])
        named: dict[str, Tokenizer.Config] = field(default_factory=lambda: {"b": Tokenizer.Config(path="b")})
        hook: object = scale
        spec: ModelSpec | None = None

    def __init__(self, config: Trainer.Config, **runtime) -> None:
        self.config = config
        self.runtime = runtime


# ------------------------------------------------------------------------- decorator checks
def test_config_without_slots_is_rejected_naming_the_class():
    with pytest.raises(TypeError, match=r"NoSlots.*slotted"):

        class NoSlots(Configurable):
            @dataclass(kw_only=True)
            class Config(Configurable.Config):
                a: int = 1


def test_config_not_kw_only_is_rejected_naming_class_and_field():
    with pytest.raises(TypeError, match=r"Positional.*keyword-only.*\ba\b"):

        class Positional(Configurable):
            @dataclass(slots=True)
            class Config(Configurable.Config):
                a: int = 1


def test_config_not_a_dataclass_is_rejected():
    with pytest.raises(TypeError, match=r"Undecorated.*@dataclass"):

        class Undecorated(Configurable):
            class Config(Configurable.Config):
                __slots__ = ()


def test_config_must_subclass_parent_config():
    with pytest.raises(TypeError, match=r"Stray\.Config must subclass Tokenizer\.Config"):

        class Stray(Tokenizer):
            @dataclass(kw_only=True, slots=True)
            class Config(Configurable.Config):
                a: int = 1

    with pytest.raises(TypeError, match=r"Plain\.Config must subclass Configurable\.Config"):

        class Plain(Configurable):
            @dataclass(kw_only=True, slots=True)
            class Config:
                a: int = 1


def test_field_shadowing_a_config_method_is_rejected():
    with pytest.raises(TypeError, match=r"Shadow.*shadow.*build"):

        class Shadow(Configurable):
            @dataclass(kw_only=True, slots=True)
            class Config(Configurable.Config):
                build: int = 1


def test_validate_config_class_rejects_base_with_dict():
    class Loose:  # no __slots__: instances would get a __dict__
        pass

    @dataclass(kw_only=True, slots=True)
    class Cfg(Loose):
        a: int = 1

    with pytest.raises(TypeError, match=r"__dict__.*Loose"):
        validate_config_class(Cfg, "owner")


def test_owner_is_set_and_slots_work():
    assert Configurable.Config._owner is None
    assert Tokenizer.Config._owner is Tokenizer
    assert HFTokenizer.Config._owner is HFTokenizer
    assert AdamW.Config._owner is AdamW
    cfg = Tokenizer.Config()
    with pytest.raises(AttributeError):
        cfg.pathh = "typo"  # slots: a misspelt attribute is an error
    with pytest.raises(TypeError):
        Tokenizer.Config("positional")  # kw_only


# ------------------------------------------------------------------------------------ build
def test_build_passes_config_copy_and_runtime_kwargs():
    cfg = Optim.Config(lr=0.5)
    parts = [object()]
    opt = cfg.build(model_parts=parts, dp_rank=3)
    assert type(opt) is Optim
    assert opt.model_parts is parts and opt.dp_rank == 3
    assert opt.config == cfg
    # shallow copy: the component does not share the Config object ...
    assert opt.config is not cfg
    cfg.lr = 9.0
    assert opt.config.lr == 0.5
    # ... but mutable and nested values inside it are the same objects
    assert opt.config.decay_keywords is cfg.decay_keywords


def test_build_shallow_copy_shares_nested_configs():
    cfg = Trainer.Config()
    trainer = cfg.build()
    assert trainer.config is not cfg
    assert trainer.config.tokenizer is cfg.tokenizer
    assert trainer.config.optimizer is cfg.optimizer


def test_build_rejects_kwargs_that_repeat_config_fields():
    with pytest.raises(ValueError, match=r"betas, lr") as info:
        Optim.Config().build(model_parts=[], lr=1.0, betas=(0.1, 0.2))
    assert "decay_keywords" not in str(info.value)
    with pytest.raises(ValueError, match=r"_secret"):
        Optim.Config().build(model_parts=[], _secret=1)
    with pytest.raises(ValueError, match=r"'config'"):
        Optim.Config().build(config=None)


def test_building_bare_config_raises():
    with pytest.raises(TypeError, match=r"no owner"):
        Configurable.Config().build()


def test_subclass_without_own_config_builds_parent():
    assert InheritsConfig.Config is Tokenizer.Config
    assert type(InheritsConfig.Config().build()) is Tokenizer
    assert EmptyOwnConfig.Config is not Tokenizer.Config
    assert type(EmptyOwnConfig.Config().build()) is EmptyOwnConfig


def test_explicit_parent_call_in_config_method():
    assert AdamW.Config(lr=0.1, eps=0.5).describe() == "lr=0.1 eps=0.5"


# ----------------------------------------------------------------------------- polymorphism
def test_polymorphic_default_factory_builds_concrete_owner():
    cfg = Trainer.Config()
    assert type(cfg.tokenizer) is HFTokenizer.Config
    assert isinstance(cfg.tokenizer, Tokenizer.Config)
    assert type(cfg.tokenizer.build()) is HFTokenizer
    assert type(cfg.optimizer.build(model_parts=[])) is AdamW
    # the field accepts any Config of the family
    assert type(Trainer.Config(tokenizer=Tokenizer.Config()).tokenizer.build()) is Tokenizer


# ---------------------------------------------------------------------------------- to_dict
def test_to_dict_recurses_and_skips_private_fields():
    spec = ModelSpec(name="m", build_model_fn=scale, model=Tokenizer.Config(path="model"))
    d = Trainer.Config(spec=spec).to_dict()
    assert d["tokenizer"] == {"path": "tok", "trust_remote_code": False}
    assert d["optimizer"] == {
        "lr": 1e-3,
        "betas": [0.9, 0.999],
        "decay_keywords": ["bias", "norm"],
        "eps": 1e-8,
    }
    assert "_secret" not in d["optimizer"]
    assert d["extras"] == [{"path": "a"}]
    assert d["named"] == {"b": {"path": "b"}}
    # callables become a stable dotted name (their repr would carry a memory address)
    assert d["hook"] == f"{__name__}.scale"
    # plain dataclasses inside the tree (ModelSpec) are recursed too
    assert d["spec"]["name"] == "m"
    assert d["spec"]["build_model_fn"] == f"{__name__}.scale"
    assert d["spec"]["model"] == {"path": "model"}
    assert d["spec"]["parallelize_fn"] is None


def test_to_dict_other_values():
    @dataclass(kw_only=True, slots=True)
    class Misc(Configurable.Config):
        color: Color = Color.RED
        axis: MeshAxisName = MeshAxisName.TP
        path: pathlib.Path = pathlib.Path("a/b")
        cls: type = int
        partial: object = functools.partial(int, base=2)
        keyed: dict = field(default_factory=lambda: {1: "x", Color.RED: (1, 2)})

    d = Misc().to_dict()
    assert d["color"] == "red" and d["axis"] == "tp" and type(d["axis"]) is str
    assert d["path"] == "a/b"
    assert d["cls"] == "builtins.int"
    assert d["partial"] == repr(Misc().partial)
    assert d["keyed"] == {"1": "x", "red": [1, 2]}


# --------------------------------------------------------------------------------- traverse
def test_traverse_depth_first_in_field_order():
    spec = ModelSpec(name="m", model=Tokenizer.Config(path="model"))
    cfg = Trainer.Config(spec=spec)
    found = list(cfg.traverse(Configurable.Config))
    assert found[0] is cfg
    assert found[1:] == [cfg.tokenizer, cfg.optimizer, cfg.extras[0], cfg.named["b"], spec.model]
    assert [t.path for t in cfg.traverse(Tokenizer.Config)] == ["tok", "a", "b", "model"]
    assert list(cfg.traverse(HFTokenizer.Config)) == [cfg.tokenizer]
    assert list(cfg.traverse(Optim.Config)) == [cfg.optimizer]
    assert list(cfg.traverse(ModelSpec)) == [spec]


# ---------------------------------------------------------------------------------- replace
def test_replace_returns_changed_copy():
    cfg = AdamW.Config(lr=0.1)
    new = cfg.replace(lr=0.2, eps=1e-6)
    assert type(new) is AdamW.Config
    assert (new.lr, new.eps, cfg.lr) == (0.2, 1e-6, 0.1)
    assert new.decay_keywords is cfg.decay_keywords  # shallow


def test_replace_unknown_field_is_a_clear_error():
    with pytest.raises(TypeError, match=r"unknown field\(s\) lrr.*known fields:.*\blr\b"):
        AdamW.Config().replace(lrr=1.0)


def test_replace_reruns_post_init_validation():
    class Checked(Configurable):
        @dataclass(kw_only=True, slots=True)
        class Config(Configurable.Config):
            n: int = 1

            def __post_init__(self) -> None:
                if self.n < 1:
                    raise ValueError("Checked.Config.n must be >= 1")

    with pytest.raises(ValueError, match=r"n must be >= 1"):
        Checked.Config().replace(n=0)


def test_config_is_a_dataclass_with_expected_fields():
    assert [f.name for f in dataclasses.fields(AdamW.Config)] == [
        "lr",
        "betas",
        "decay_keywords",
        "_secret",
        "eps",
    ]


# ------------------------------------------------------------------- module protocol, mesh
class _Good:
    config = object()

    def forward_logits(self, input_ids, attention_mask=None):
        return input_ids

    def to_empty(self, *, device):
        return self

    def init_weights(self, buffer_device=None):
        pass

    def named_parameters(self):
        return iter(())


def test_verify_module_protocol_accepts_complete_model():
    verify_module_protocol(_Good())


def test_verify_module_protocol_lists_every_problem():
    class Bad:
        config = None
        forward_logits = 3

        def init_weights(self):  # no buffer_device
            pass

    with pytest.raises(TypeError) as info:
        verify_module_protocol(Bad())
    message = str(info.value)
    assert message.startswith("test_verify_module_protocol_lists_every_problem.<locals>.Bad ")
    for expected in (
        "config: the model's Config (read for shape checks) (is None)",
        "forward_logits(input_ids, ...) -> logits (not callable)",
        "to_empty(device=...) (materialise meta tensors) (missing)",
        "init_weights(buffer_device=None) (initialise after to_empty) (signature does not accept this call)",
        "named_parameters() (optimizer param groups) (missing)",
    ):
        assert expected in message


def test_verify_module_protocol_on_torch_module():
    torch = pytest.importorskip("torch")

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = {"dim": 2}
            self.lin = torch.nn.Linear(2, 2)

        def forward_logits(self, input_ids):
            return self.lin(input_ids)

        def init_weights(self, buffer_device=None):
            torch.nn.init.zeros_(self.lin.weight)

    verify_module_protocol(Tiny())
    with pytest.raises(TypeError, match=r"(?s)Linear.*config.*forward_logits.*init_weights"):
        verify_module_protocol(torch.nn.Linear(2, 2))


def test_mesh_axis_names():
    assert [a.value for a in BASE_MESH_AXES] == ["dp_replicate", "dp_shard", "ep", "cp", "tp", "pp"]
    assert [a.value for a in FLATTENED_MESH_AXES] == ["fsdp", "dp", "loss"]
    assert MeshAxisName.DP_SHARD == "dp_shard" and f"{MeshAxisName.LOSS}" == "loss"
    assert {MeshAxisName.TP: 1}["tp"] == 1
    assert len(MeshAxisName) == 9
