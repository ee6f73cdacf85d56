"""MindSpore platform checks, each run in a fresh process by ``test_mindspore_platform.py``.

MindSpore reports a failed kernel late and re-raises it from later, unrelated ops in the same
process, so each check gets a process of its own: ``python -m tests.mindspore._checks <name>``.
A check raises ``AssertionError`` on failure and prints one JSON line of measurements.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import warnings

import mindspore as ms
import numpy as np
import torch
from mindspore import nn, ops

from hyper_parallel.platform.mindspore_platform import MindSporePlatform

P = MindSporePlatform()


class TinyNet(nn.Cell):
    """A Cell with torch-shaped ``named_parameters()`` / ``parameters()`` (HF-style names)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weight = ms.Parameter(
            ms.Tensor(rng.standard_normal((4, 3)).astype(np.float32)), name="proj.weight"
        )
        self.bias = ms.Parameter(ms.Tensor(rng.standard_normal(4).astype(np.float32)), name="proj.bias")
        self.norm = ms.Parameter(ms.Tensor(np.ones(4, np.float32)), name="norm.weight")

    def named_parameters(self):  # torch's spelling, as the model helper provides
        yield "proj.weight", self.weight
        yield "proj.bias", self.bias
        yield "norm.weight", self.norm

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def construct(self, x):
        return (ops.matmul(x, self.weight.T) + self.bias) * self.norm


def _numpy(t):
    return t.asnumpy() if isinstance(t, ms.Tensor) else t.detach().numpy()


def _report(**values) -> None:
    print(json.dumps(values))


# ----------------------------------------------------------------------------- optimizer
def _torch_groups(params):
    return [{"params": [params[0]], "weight_decay": 0.1}, {"params": params[1:], "weight_decay": 0.0}]


def check_adamw_param_groups() -> None:
    """param_groups / defaults / state_dict keys and values equal torch 2.13's for the same kwargs."""
    for kwargs in (
        {"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "foreach": None},
        {"lr": 1e-3, "foreach": False, "fused": False},
        {},
    ):
        net = TinyNet()
        tp = [torch.nn.Parameter(torch.zeros(2)) for _ in range(3)]
        mine = P.adamw(_torch_groups(net.parameters()), **kwargs)
        ref = torch.optim.AdamW(_torch_groups(tp), **kwargs)
        strip = lambda groups: [{k: v for k, v in g.items() if k != "params"} for g in groups]  # noqa: E731
        assert strip(mine.param_groups) == strip(ref.param_groups), (
            strip(mine.param_groups),
            strip(ref.param_groups),
        )
        assert [list(g) for g in mine.param_groups] == [list(g) for g in ref.param_groups]
        assert mine.defaults == ref.defaults and list(mine.defaults) == list(ref.defaults)
        assert mine.state_dict() == ref.state_dict(), (mine.state_dict(), ref.state_dict())
        P.lambda_lr(mine, lambda s: 0.5)
        torch.optim.lr_scheduler.LambdaLR(ref, lambda s: 0.5)
        assert strip(mine.param_groups) == strip(ref.param_groups)
        assert [list(g) for g in mine.state_dict()["param_groups"]] == [
            list(g) for g in ref.state_dict()["param_groups"]
        ]
    empty = P.adamw([{"params": [], "weight_decay": 0.1}, {"params": [], "weight_decay": 0.0}], lr=1e-3)
    empty.step()
    assert empty.state_dict()["param_groups"][1]["params"] == []
    _report(ok=True)


def _grads(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def check_adamw_step_matches_torch() -> None:
    """Three AdamW steps (lr 1e-3, betas (0.9, 0.95), wd 0.1 / 0.0) vs torch on the same grads."""
    rng = np.random.default_rng(1)
    shapes = [(64, 32), (32,), (32,)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ms_params = [ms.Parameter(ms.Tensor(a.copy()), name=f"p{i}") for i, a in enumerate(init)]
    t_params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    kwargs = {"lr": 1e-3, "betas": (0.9, 0.95), "eps": 1e-8}
    mine = P.adamw(_torch_groups(ms_params), **kwargs)
    ref = torch.optim.AdamW(_torch_groups(t_params), **kwargs)
    diffs = []
    for step in range(3):
        grads = _grads(shapes, 10 + step)
        for p, g in zip(ms_params, grads, strict=True):
            P.set_grad(p, ms.Tensor(g))
        for p, g in zip(t_params, grads, strict=True):
            p.grad = torch.from_numpy(g)
        mine.step()
        ref.step()
        mine.zero_grad()
        ref.zero_grad()
        diffs.append(
            max(float(np.abs(_numpy(a) - _numpy(b)).max()) for a, b in zip(ms_params, t_params, strict=True))
        )
    sd, rsd = mine.state_dict(), ref.state_dict()
    assert sorted(sd["state"]) == sorted(rsd["state"]) == [0, 1, 2]
    for i in sd["state"]:
        assert list(sd["state"][i]) == list(rsd["state"][i]) == ["step", "exp_avg", "exp_avg_sq"]
        assert float(sd["state"][i]["step"].asnumpy()) == float(rsd["state"][i]["step"]) == 3.0
        assert sd["state"][i]["step"].dtype == ms.float32 and sd["state"][i]["step"].shape == ()
    # weight decay 0 is exact in MindSpore's kernel too (spec notes); the decayed tensor is within 2e-7
    assert diffs[0] < 2e-7 and max(diffs) < 5e-7, diffs
    _report(max_abs_diff_per_step=diffs)


def check_adamw_state_round_trip_and_skip() -> None:
    """state_dict -> load_state_dict into a fresh optimizer continues identically; no grad: untouched."""
    shapes = [(5, 3), (3,), (3,)]

    def build(seed_values):
        params = [ms.Parameter(ms.Tensor(a.copy()), name=f"q{i}") for i, a in enumerate(seed_values)]
        return params, P.adamw(_torch_groups(params), lr=1e-2, betas=(0.9, 0.95))

    init = _grads(shapes, 0)
    a_params, a = build(init)
    for step in range(2):
        for p, g in zip(a_params, _grads(shapes, step), strict=True):
            P.set_grad(p, ms.Tensor(g))
        a.step()
        a.zero_grad()
    saved = a.state_dict()
    with tempfile.TemporaryDirectory() as tmp:  # through the platform's own file format
        P.save(saved, os.path.join(tmp, "opt.pt"))
        loaded = P.load(os.path.join(tmp, "opt.pt"))
    b_params, b = build([_numpy(p) for p in a_params])
    b.load_state_dict(loaded)
    assert b.state_dict()["param_groups"] == saved["param_groups"]
    for i in saved["state"]:
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert np.array_equal(_numpy(b.state_dict()["state"][i][key]), _numpy(saved["state"][i][key]))
    # one more step on both, parameter 2 without a gradient: it stays as it is (torch semantics)
    grads = _grads(shapes, 7)
    for params, opt in ((a_params, a), (b_params, b)):
        for p, g in zip(params[:2], grads[:2], strict=True):
            P.set_grad(p, ms.Tensor(g))
        before = _numpy(params[2]).copy()
        opt.step()
        assert np.array_equal(_numpy(params[2]), before)
        opt.zero_grad()
    for pa, pb in zip(a_params, b_params, strict=True):
        assert np.array_equal(_numpy(pa), _numpy(pb))
    steps = [float(v["step"].asnumpy()) for v in a.state_dict()["state"].values()]
    assert steps == [3.0, 3.0, 2.0], steps
    # torch does the same with a mixed step count on the next full step
    for p, g in zip(a_params, grads, strict=True):
        P.set_grad(p, ms.Tensor(g))
    a.step()
    assert [float(v["step"].asnumpy()) for v in a.state_dict()["state"].values()] == [4.0, 4.0, 3.0]
    try:
        b.load_state_dict({"state": {}, "param_groups": saved["param_groups"][:1]})
    except ValueError as exc:
        assert "different number of parameter groups" in str(exc)
    else:
        raise AssertionError("a state dict with one group loaded into two groups")
    _report(ok=True)


def check_lambda_lr_bitwise() -> None:
    """20 steps of warmup + cosine: every lr equals torch's bit for bit; state_dict keys equal torch's."""
    from hyper_parallel.components.lr_scheduler import lr_factor

    factor = lr_factor(warmup=3, total=20, decay_style="cosine", min_ratio=0.1)
    calls: list = []

    def traced(step):
        calls.append(step)
        return factor(step)

    net = TinyNet()
    opt = P.adamw(_torch_groups(net.parameters()), lr=3e-4)
    ref_opt = torch.optim.AdamW(
        _torch_groups([torch.nn.Parameter(torch.zeros(1)) for _ in range(3)]), lr=3e-4
    )
    sched = P.lambda_lr(opt, traced)
    ref = torch.optim.lr_scheduler.LambdaLR(ref_opt, factor)
    assert calls == [0, 0] and all(type(c) is int for c in calls)
    assert sched.base_lrs == ref.base_lrs and opt.param_groups[0]["initial_lr"] == 3e-4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(20):
            assert [x.hex() for x in sched.get_last_lr()] == [x.hex() for x in ref.get_last_lr()]
            assert all(type(x) is float for x in sched.get_last_lr())
            opt.step()
            ref_opt.step()
            sched.step()
            ref.step()
    state, ref_state = sched.state_dict(), ref.state_dict()
    assert list(state) == list(ref_state), (list(state), list(ref_state))
    assert state == ref_state, (state, ref_state)
    fresh = P.lambda_lr(P.adamw(_torch_groups(TinyNet().parameters()), lr=3e-4), factor)
    fresh.load_state_dict(state)
    fresh.step()
    ref.step()
    assert [x.hex() for x in fresh.get_last_lr()] == [x.hex() for x in ref.get_last_lr()]
    assert fresh.optimizer.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]
    _report(ok=True)


# ----------------------------------------------------------------------------- gradients
def _loss_fn(net, x):
    def fn():
        y = net(x)
        loss = (y * y).mean()
        return loss, loss * 2

    return fn


def check_backward_accumulates() -> None:
    """Two backward calls: stored grad = sum of both; aux returned; hooks run once per backward."""
    net = TinyNet()
    x1 = ms.Tensor(np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32))
    x2 = ms.Tensor(np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32))
    fired = []
    handle = P.register_post_accumulate_grad_hook(
        net.bias, lambda p: fired.append(P.grad_of(p).asnumpy().copy())
    )
    net.norm.requires_grad = False  # frozen: no gradient
    aux = P.backward(_loss_fn(net, x1), net)
    g1 = [P.grad_of(p).asnumpy().copy() for p in (net.weight, net.bias)]
    P.backward(_loss_fn(net, x2), net)
    handle.remove()
    P.backward(_loss_fn(net, x2), net)
    assert P.grad_of(net.norm) is None
    assert len(fired) == 2 and np.array_equal(fired[0], g1[1])

    single = ms.value_and_grad(_loss_fn(net, x2), None, [net.weight, net.bias], has_aux=True)()[1]
    for p, first, second in zip((net.weight, net.bias), g1, single, strict=True):
        want = first + 2 * second.asnumpy()
        np.testing.assert_allclose(P.grad_of(p).asnumpy(), want, rtol=1e-6, atol=1e-6)
    assert isinstance(aux, ms.Tensor) and aux.shape == ()
    # torch reference for the first gradient
    tw = torch.tensor(_numpy(net.weight), requires_grad=True)
    tb = torch.tensor(_numpy(net.bias), requires_grad=True)
    y = (torch.from_numpy(_numpy(x1)) @ tw.T + tb) * torch.from_numpy(_numpy(net.norm))
    (y * y).mean().backward()
    diff = max(float(np.abs(g1[0] - tw.grad.numpy()).max()), float(np.abs(g1[1] - tb.grad.numpy()).max()))
    assert diff < 1e-6, diff
    opt = P.adamw(net.parameters(), lr=1e-3)
    opt.zero_grad()
    assert P.grad_of(net.weight) is None
    _report(max_abs_grad_diff_vs_torch=diff)


def check_clip_grad_norm_matches_torch() -> None:
    """total norm and the clipped grads equal torch's clip_grad_norm_ (clip and no-clip cases)."""
    out = {}
    for max_norm in (0.5, 1e6):
        net = TinyNet()
        grads = _grads([(4, 3), (4,), (4,)], 3)
        t_params = []
        for p, g in zip(net.parameters(), grads, strict=True):
            P.set_grad(p, ms.Tensor(g * 3))
            tp = torch.nn.Parameter(torch.zeros(g.shape))
            tp.grad = torch.from_numpy(g * 3)
            t_params.append(tp)
        extra = ms.Parameter(ms.Tensor(np.ones(2, np.float32)), name="nograd")  # no grad: skipped
        total = P.clip_grad_norm([*net.parameters(), extra], max_norm)
        ref = torch.nn.utils.clip_grad_norm_(t_params, max_norm)
        assert total.dtype == ms.float32 and total.shape == ()
        rel = abs(float(total.asnumpy()) - float(ref)) / float(ref)
        assert rel <= 1e-6, rel
        coef = min(max_norm / (float(total.asnumpy()) + 1e-6), 1.0)
        gdiff = max(
            float(np.abs(P.grad_of(p).asnumpy() - tp.grad.numpy()).max())
            for p, tp in zip(net.parameters(), t_params, strict=True)
        )
        assert gdiff < 1e-6, gdiff
        np.testing.assert_allclose(P.grad_of(net.weight).asnumpy(), grads[0] * 3 * coef, rtol=1e-6, atol=1e-7)
        assert P.grad_of(extra) is None
        out[str(max_norm)] = {"rel_norm_diff": rel, "max_grad_diff": gdiff}
    assert (
        float(P.clip_grad_norm([ms.Parameter(ms.Tensor(np.ones(1, np.float32)), name="z")], 1.0).asnumpy())
        == 0.0
    )
    _report(**out)


# ----------------------------------------------------------------------------- I/O
def check_save_load_round_trip() -> None:
    """Nested dict/list/tuple of tensors (MindSpore, torch, bf16) and scalars survive save/load exactly."""
    obj = {
        "state": {
            0: {
                "step": ms.Tensor(3.0, ms.float32),
                "exp_avg": ms.Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)),
            }
        },
        "param_groups": [
            {"lr": 3e-4, "betas": (0.9, 0.95), "foreach": None, "amsgrad": False, "params": [0, 1]}
        ],
        "bf16": ms.Tensor(np.array([1.5, -2.25], np.float32)).astype(ms.bfloat16),
        "torch": torch.arange(4, dtype=torch.int64),
        "neg_zero": -0.0,
        "inf": math.inf,
        "big": 2**70,
        "text": "x",
        ("a", 1): [None, True, 1.0 / 3.0],
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state.pt")
        P.save(obj, path)
        back = P.load(path, weights_only=True, map_location=None)
        assert list(back) == list(obj)
        assert back["param_groups"] == obj["param_groups"]
        assert isinstance(back["param_groups"][0]["betas"], tuple)
        assert back[("a", 1)] == obj[("a", 1)] and back["big"] == 2**70 and back["text"] == "x"
        assert math.copysign(1.0, back["neg_zero"]) == -1.0 and back["inf"] == math.inf
        assert back["state"][0]["step"].dtype == ms.float32 and back["state"][0]["step"].shape == ()
        assert np.array_equal(back["state"][0]["exp_avg"].asnumpy(), obj["state"][0]["exp_avg"].asnumpy())
        assert back["bf16"].dtype == ms.bfloat16
        assert np.array_equal(back["bf16"].astype(ms.float32).asnumpy(), [1.5, -2.25])
        assert isinstance(back["torch"], torch.Tensor) and torch.equal(back["torch"], obj["torch"])
        # RNG state (a uint8 tensor) goes through the same file
        P.save(P.get_rng_state(), os.path.join(tmp, "rng.pt"))
        P.set_rng_state(P.load(os.path.join(tmp, "rng.pt")))
        try:
            P.save({"f": lambda: 0}, os.path.join(tmp, "bad.pt"))
        except TypeError as exc:
            assert "function" in str(exc)
        else:
            raise AssertionError("a function was saved")
    _report(ok=True)


def check_damaged_files_named() -> None:
    """Truncated, foreign (a torch pickle) and crafted files raise ValueError naming the file."""
    import pickle

    import safetensors

    class Boom:
        def __reduce__(self):
            return (os.system, ("echo pwned > /tmp/msplat_pwned",))

    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.pt")
        P.save({"w": ms.Tensor(np.ones((3, 3), np.float32)), "n": 1}, good)
        data = open(good, "rb").read()
        cases = {}
        cases["truncated.pt"] = data[: len(data) - 7]
        cases["header.pt"] = b"\xff" * 8 + data[8:]
        with open(os.path.join(tmp, "pickle.pt"), "wb") as fh:
            pickle.dump(Boom(), fh)
        torch.save({"a": torch.ones(1)}, os.path.join(tmp, "torch.pt"))
        structure_bad = os.path.join(tmp, "structure.pt")
        safetensors.serialize_file(
            {},
            structure_bad,
            metadata={
                "format": "hyper_parallel.mindspore.state/1",
                "hyper_parallel.structure": '{"tensor": "t9"}',
            },
        )
        for name, blob in cases.items():
            with open(os.path.join(tmp, name), "wb") as fh:
                fh.write(blob)
        for name in (*cases, "pickle.pt", "torch.pt", "structure.pt"):
            path = os.path.join(tmp, name)
            try:
                P.load(path)
            except ValueError as exc:
                assert path in str(exc), str(exc)
            else:
                raise AssertionError(f"{name} loaded")
        assert not os.path.exists("/tmp/msplat_pwned")
        st = os.path.join(tmp, "w.safetensors")
        P.save_safetensors({"w": ms.Tensor(np.ones(4, np.float32))}, st)
        blob = open(st, "rb").read()
        with open(st, "wb") as fh:
            fh.write(blob[:-3])
        for call in (P.check_safetensors, P.load_safetensors):
            try:
                call(st)
            except ValueError as exc:
                assert st in str(exc)
            else:
                raise AssertionError("truncated safetensors accepted")
    _report(ok=True)


def check_safetensors_interop() -> None:
    """Files written here load with safetensors.torch (fp32, bf16, int64); torch-written ones load here."""
    from safetensors.torch import load_file, save_file

    values = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    tensors = {
        "model.w": ms.Tensor(values),
        "model.b": ms.Tensor(values).astype(ms.bfloat16),
        "ids": ms.Tensor(np.arange(4, dtype=np.int64)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.safetensors")
        P.save_safetensors(tensors, path, metadata={"format": "pt"})
        loaded = load_file(path)
        assert torch.equal(loaded["model.w"], torch.from_numpy(values))
        assert loaded["model.b"].dtype == torch.bfloat16
        assert torch.equal(loaded["model.b"], torch.from_numpy(values).to(torch.bfloat16))
        assert loaded["ids"].dtype == torch.int64
        assert sorted(P.check_safetensors(path)) == sorted(tensors)
        back = P.load_safetensors(path)
        assert back["model.b"].dtype == ms.bfloat16 and np.array_equal(back["model.w"].asnumpy(), values)
        tpath = os.path.join(tmp, "torch.safetensors")
        save_file({"x": torch.from_numpy(values).to(torch.bfloat16)}, tpath)
        x = P.load_safetensors(tpath)["x"]
        assert np.array_equal(
            x.astype(ms.float32).asnumpy(), torch.from_numpy(values).to(torch.bfloat16).float().numpy()
        )
    _report(ok=True)


def check_dcp_round_trip_in_place() -> None:
    """dcp_save then dcp_load into other values: the same Parameter objects now hold the saved values."""
    net = TinyNet(seed=0)
    state = {name: p for name, p in net.named_parameters()}
    state["extra"] = ms.Tensor(np.arange(3, dtype=np.int64))
    state["bf16"] = ms.Tensor(np.array([0.5, 3.0], np.float32)).astype(ms.bfloat16)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "step_1")
        P.dcp_wait(P.dcp_save(state, ckpt, async_op=True))
        assert P.dcp_damaged_file(ckpt) is None
        assert P.dcp_tensor_shapes(ckpt)["proj.weight"] == (4, 3)
        other = TinyNet(seed=5)
        target = {name: p for name, p in other.named_parameters()}
        target["extra"] = ms.Tensor(np.zeros(3, dtype=np.int64))
        target["bf16"] = ms.Tensor(np.zeros(2, np.float32)).astype(ms.bfloat16)
        ids = {k: id(v) for k, v in target.items()}
        P.dcp_load(target, ckpt)
        assert {k: id(v) for k, v in target.items()} == ids
        for name, p in net.named_parameters():
            assert np.array_equal(dict(other.named_parameters())[name].asnumpy(), p.asnumpy())
        assert np.array_equal(target["extra"].asnumpy(), [0, 1, 2])
        assert target["bf16"].dtype == ms.bfloat16
        assert np.array_equal(target["bf16"].astype(ms.float32).asnumpy(), [0.5, 3.0])
        full = P.dcp_full_state_dict(ckpt)
        assert isinstance(full["proj.bias"], ms.Tensor)
        assert np.array_equal(full["proj.bias"].asnumpy(), net.bias.asnumpy())
        shard = [n for n in os.listdir(ckpt) if n.endswith(".distcp")][0]
        with open(os.path.join(ckpt, shard), "r+b") as fh:
            fh.truncate(10)
        assert P.dcp_damaged_file(ckpt) is not None
    _report(ok=True)


def check_model_state_dict() -> None:
    """full_model_state_dict copies; set_full_model_state_dict loads by name with torch's key reports."""
    src, dst = TinyNet(seed=1), TinyNet(seed=2)
    full = P.full_model_state_dict(src)
    assert list(full) == ["proj.weight", "proj.bias", "norm.weight"]
    keys = P.set_full_model_state_dict(dst, {**full, "unused": full["proj.bias"]}, strict=False)
    assert keys.missing_keys == [] and keys.unexpected_keys == ["unused"]
    assert np.array_equal(dst.weight.asnumpy(), src.weight.asnumpy())
    try:
        P.set_full_model_state_dict(dst, {"proj.weight": full["proj.weight"]}, strict=True)
    except RuntimeError as exc:
        assert "norm.weight" in str(exc)
    else:
        raise AssertionError("strict load with missing keys passed")
    src.weight.set_data(ops.zeros_like(src.weight))
    assert float(full["proj.weight"].abs().sum().asnumpy()) > 0  # a copy, not a view
    _report(ok=True)


# ----------------------------------------------------------------------------- RNG and misc
def _draws():
    return [
        ops.rand(4).asnumpy(),
        ops.randn(3).asnumpy(),
        ops.randint(0, 1000, (5,)).asnumpy(),
        ops.standard_normal((2,)).asnumpy(),
        nn.Dense(3, 2).weight.asnumpy(),
        torch.rand(3).numpy(),
    ]


def check_rng_replay() -> None:
    """set_rng_state(get_rng_state()) replays the same draws; manual_seed repeats them too."""
    P.manual_seed(1234)
    first = _draws()
    P.manual_seed(1234)
    again = _draws()
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    state = P.get_rng_state()
    assert state.dtype == ms.uint8 and len(state.shape) == 1
    a = _draws()
    b = _draws()
    P.set_rng_state(state)
    c = _draws()
    assert all(np.array_equal(x, z) for x, z in zip(a, c, strict=True)), [
        np.array_equal(x, z) for x, z in zip(a, c)
    ]
    assert not any(np.array_equal(x, y) for x, y in zip(a[:4], b[:4], strict=True))
    g1, g2 = P.generator(7), P.generator(7)
    assert g1.integers(0, 10**9) == g2.integers(0, 10**9)
    _report(ok=True)


def check_tensor_helpers_and_losses() -> None:
    """dtype names, int views, raw bytes, collate helpers, losses and recompute vs torch."""
    assert P.dtype_from_name("bf16") == ms.bfloat16 and P.dtype_from_name("FP32") == ms.float32
    try:
        P.dtype_from_name("int4")
    except ValueError as exc:
        assert "bf16" in str(exc)
    x = ms.Tensor(np.array([0.0, -0.0, 1.5], np.float32))
    assert P.dtype_name(x) == "float32" and P.dtype_name(x.astype(ms.bfloat16)) == "bfloat16"
    assert P.dtype_name(P.as_int64([1, 2])) == "int64"
    assert list(P.int_view_numpy(x)) == list(np.array([0.0, -0.0, 1.5], np.float32).view(np.int32))
    assert bytes(P.raw_bytes(x)) == np.array([0.0, -0.0, 1.5], np.float32).tobytes()
    bf = x.astype(ms.bfloat16)
    assert list(P.int_view_numpy(bf)) == list(
        torch.tensor([0.0, -0.0, 1.5]).bfloat16().view(torch.int16).numpy()
    )
    padded = P.stack([P.pad_last_dim(P.as_int64([1, 2]), 1, -100), P.as_int64([3, 4, 5])])
    assert padded.asnumpy().tolist() == [[1, 2, -100], [3, 4, 5]] and padded.dtype == ms.int64
    assert P.cat([padded, padded], dim=0).shape == (4, 3)
    assert P.full([2], 7, dtype=ms.int64).asnumpy().tolist() == [7, 7]
    logits = np.random.default_rng(0).standard_normal((6, 11)).astype(np.float32)
    labels = np.array([1, 2, -100, 4, 10, 0], np.int64)
    out = {}
    for reduction in ("mean", "sum", "none"):
        mine = P.cross_entropy(ms.Tensor(logits), ms.Tensor(labels), ignore_index=-100, reduction=reduction)
        ref = torch.nn.functional.cross_entropy(
            torch.from_numpy(logits), torch.from_numpy(labels), reduction=reduction
        )
        out[reduction] = float(np.abs(mine.asnumpy() - ref.numpy()).max())
        assert out[reduction] < 1e-5, out
    lp = P.log_softmax(ms.Tensor(logits), dim=-1)
    nll = P.nll_loss(lp, ms.Tensor(labels), ignore_index=-100)
    assert (
        abs(
            float(nll.asnumpy())
            - float(torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(labels)))
        )
        < 1e-5
    )
    w = ms.Parameter(ms.Tensor(np.ones((11, 11), np.float32)), name="w")
    fn = lambda: (P.recompute(lambda t: ops.matmul(t, w).sum(), ms.Tensor(logits)), None)  # noqa: E731
    g = ms.grad(lambda: fn()[0], None, [w])()
    assert g[0].shape == (11, 11)
    moved = P.move_to_device({"a": [torch.ones(2, dtype=torch.int64)], "b": (ms.Tensor([1]),)}, "cpu")
    assert (
        isinstance(moved["a"][0], ms.Tensor)
        and moved["a"][0].dtype == ms.int64
        and isinstance(moved["b"], tuple)
    )
    _report(**out)


def check_dataloader_workers() -> None:
    """StatefulDataLoader with the component collate (MindSpore tensors) for 0 and 2 workers: same batches."""
    import functools

    os.environ["HYPER_PARALLEL_PLATFORM"] = "mindspore"
    from hyper_parallel.components.dataloader import _pad_collate

    data = [{"input_ids": list(range(i % 5 + 1)), "labels": list(range(i % 5 + 1))} for i in range(12)]
    batches = {}
    for workers in (0, 2):
        sampler = P.distributed_sampler(data, num_replicas=1, rank=0, shuffle=True, seed=3, drop_last=True)
        loader = P.stateful_dataloader(
            data,
            batch_size=3,
            sampler=sampler,
            num_workers=workers,
            collate_fn=functools.partial(_pad_collate, pad_id=0),
            drop_last=True,
        )
        got = [P.move_to_device(b, "cpu") for b in loader]
        assert all(isinstance(b["input_ids"], ms.Tensor) for b in got)
        batches[workers] = [b["input_ids"].asnumpy().tolist() for b in got]
        state = loader.state_dict()
        P.save(state, os.path.join(tempfile.gettempdir(), f"msplat_dl_{os.getpid()}.pt"))
    assert batches[0] == batches[2], batches
    ref = list(
        torch.utils.data.distributed.DistributedSampler(
            data, num_replicas=1, rank=0, shuffle=True, seed=3, drop_last=True
        )
    )
    assert list(sampler) == ref
    _report(batches=len(batches[0]))


def check_profiler_mesh_misc() -> None:
    """profiler context with .step(), 1-rank mesh as ParallelDims uses it, collectives as no-ops."""
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    with tempfile.TemporaryDirectory() as tmp:
        with P.profiler(output_dir=tmp, rank=0, wait=0, warmup=0, active=1) as prof:
            for _ in range(2):
                ops.matmul(
                    ms.Tensor(np.ones((4, 4), np.float32)), ms.Tensor(np.ones((4, 4), np.float32))
                ).asnumpy()
                prof.step()
        assert os.listdir(os.path.join(tmp, "rank_0"))
    P.init_process_group()
    assert not P.is_distributed() and P.get_rank() == 0 and P.get_world_size() == 1
    dims = (
        ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=1, pp=1, ep=1, world_size=1)
        if _takes_kwargs()
        else None
    )
    if dims is not None:
        mesh = dims.build_mesh("cpu")
        assert mesh.ndim == 1 and mesh.get_group("dp") is None and mesh.get_group("loss") is None
    t, work = P.all_reduce(ms.Tensor([1.0]), None)
    assert work is None and float(t.asnumpy()[0]) == 1.0
    P.barrier()
    assert P.new_group(backend="gloo") is None
    try:
        P.init_device_mesh("cpu", [2], ["dp_shard"])
    except NotImplementedError:
        pass
    else:
        raise AssertionError("a 2-rank mesh was built in a 1-rank world")
    P.destroy_process_group()
    P.set_deterministic(True)
    assert P.is_deterministic() and P.determinism_settings() == {"deterministic_algorithms": True}
    assert P.get_device_handle("cpu").device_count() == 1
    assert isinstance(P.cpu_libraries()["onednn"], str) and P.num_threads() >= 1
    writer = P.summary_writer_class()
    assert writer.__name__ == "SummaryWriter"
    with P.meta_device():
        lazy = nn.Dense(3, 2)
    assert lazy.weight.has_init
    _report(ok=True)


def _takes_kwargs() -> bool:
    import dataclasses

    from hyper_parallel.trainer.parallel_dims import ParallelDims

    names = {f.name for f in dataclasses.fields(ParallelDims) if f.init}
    return {"dp_replicate", "dp_shard", "cp", "tp", "pp", "ep", "world_size"} <= names


if __name__ == "__main__":
    globals()[f"check_{sys.argv[1]}"]()
