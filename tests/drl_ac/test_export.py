"""Exported policies (.pt2 and ONNX) give exactly the torch module's actions."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from drl_ac.checkpoint import CheckpointError
from drl_ac.export import INPUT_NAME, OUTPUT_NAME, export_onnx, export_program
from drl_ac.learning.qnet import GreedyPolicy, QNetwork, RuleDefault

ort = pytest.importorskip("onnxruntime")

D = 6
SCALE = torch.tensor([1.0, 2.0, 4.0, 1.0, 8.0, 3.0])
BATCHES = (1, 2, 7, 64, 926)  # 1000 states in all


def states(seed: int, n: int = 1000) -> np.ndarray:
    """Non-negative observations: small queue lengths, exponential tails, zeros and huge values."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 4, (n, 1))
    x = np.where(kind == 0, rng.integers(0, 30, (n, D)),
                 np.where(kind == 1, rng.exponential(10.0, (n, D)),
                          np.where(kind == 2, 10.0 ** rng.uniform(-3, 7, (n, D)), 0.0)))
    x[rng.random((n, D)) < 0.1] = 0.0
    x[:3] = [[0.0], [1e9], [3.4e38]]  # rows of zeros, of a billion, of nearly float32's largest
    return x.astype(np.float32)


class ArgmaxPolicy(nn.Module):
    """K-action policy: argmax over an MLP's K Q-values (what GreedyPolicy becomes for K > 2)."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int = 32):
        super().__init__()
        self.register_buffer("scale", SCALE.clone())
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                  nn.Linear(hidden, num_actions))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.body(torch.log1p(obs / self.scale)).argmax(dim=1)


def greedy_policy() -> GreedyPolicy:
    torch.manual_seed(1)
    qnet = QNetwork(obs_dim=D, scale=SCALE, hidden=(32, 32)).eval()
    with torch.no_grad():  # bias at the median advantage, so both actions are frequent
        q = qnet(torch.from_numpy(states(0)))
        bias = float((q[:, 1] - q[:, 0]).median())
    return GreedyPolicy(qnet, bias).eval()


def argmax_policy() -> ArgmaxPolicy:
    torch.manual_seed(2)
    return ArgmaxPolicy(D, num_actions=3).eval()


def assert_same_actions(module: nn.Module, folder, seed: int, num_actions: int) -> None:
    pt2 = export_program(module, D, folder / "policy.pt2")
    onnx_path = export_onnx(module, D, folder / "policy.onnx")
    assert sorted(p.name for p in folder.iterdir()) == ["policy.onnx", "policy.pt2"]  # no temporaries left
    program = torch.export.load(pt2).module()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    x = states(seed)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    assert expected.dtype == np.int64 and set(np.unique(expected)) == set(range(num_actions))
    start = 0
    for b in (*BATCHES, len(x)):  # every state in batches of several sizes, then all at once
        chunk = x[start:start + b] if b < len(x) else x
        want = expected[start:start + b] if b < len(x) else expected
        start = (start + b) % len(x)
        with torch.no_grad():
            got_pt2 = program(torch.from_numpy(chunk))
        assert got_pt2.dtype == torch.int64 and got_pt2.shape == (len(chunk),)
        np.testing.assert_array_equal(got_pt2.numpy(), want)
        (got_onnx,) = session.run([OUTPUT_NAME], {INPUT_NAME: chunk})
        assert got_onnx.dtype == np.int64 and got_onnx.shape == (len(chunk),)
        # ONNX has no log1p (it becomes log(1 + x)) and onnxruntime's matmuls round differently,
        # so Q-values agree to ~1e-6, not bitwise; the actions must still agree exactly.
        np.testing.assert_array_equal(got_onnx, want)


def test_greedy_policy_exports_match_torch(tmp_path):
    assert_same_actions(greedy_policy(), tmp_path, seed=10, num_actions=2)


def test_argmax_policy_with_three_actions_exports_match_torch(tmp_path):
    assert_same_actions(argmax_policy(), tmp_path, seed=11, num_actions=3)


def test_a_policy_guarded_by_the_own_server_rule_exports_match_torch(tmp_path):
    # redundancy's own-server threshold (a prefix of features at most m) unrolls into the graph
    torch.manual_seed(3)
    qnet = QNetwork(obs_dim=D, scale=SCALE, hidden=(16,), num_actions=4).eval()
    rule = RuleDefault({"kind": "prefix", "column": 2, "m": 4, "actions": [0, 1, 2, 3]})
    assert_same_actions(GreedyPolicy(qnet, 1e30, admission=False, rule=rule).eval(), tmp_path, seed=12, num_actions=4)


def test_a_policy_guarded_by_rules_switched_by_the_rate_estimate_exports_match_torch(tmp_path):
    # drl_ac.rules.scheduled: a rule per band of the last feature (the rate estimate), each on the leading five
    torch.manual_seed(4)
    qnet = QNetwork(obs_dim=D, scale=SCALE, hidden=(16,), num_actions=4).eval()
    rule = RuleDefault({"kind": "scheduled", "edges": [0.5, 3.0], "rules": [
        {"kind": "constant", "action": 3}, {"kind": "prefix", "column": 0, "m": 2, "actions": [0, 1, 2, 3]},
        {"kind": "threshold", "column": 1, "k": 1.0, "below": 1, "above": 0}]}, columns=D - 1)
    assert_same_actions(GreedyPolicy(qnet, 1e30, admission=False, rule=rule).eval(), tmp_path, seed=13, num_actions=4)


def test_exports_are_quiet(tmp_path, capfd):
    """No warnings at all (FutureWarning, DeprecationWarning, ...) and nothing on stdout/stderr."""
    module = greedy_policy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_program(module, D, tmp_path / "policy.pt2")
        export_onnx(module, D, tmp_path / "policy.onnx")
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == []
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_onnx_signature_has_named_dynamic_batch(tmp_path):
    module = argmax_policy().train()
    session = ort.InferenceSession(str(export_onnx(module, D, tmp_path / "policy.onnx")),
                                   providers=["CPUExecutionProvider"])
    assert module.training  # traced in eval mode, handed back as it came
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert (inp.name, inp.type, inp.shape) == ("obs", "tensor(float)", ["batch", D])
    assert (out.name, out.type, out.shape) == ("action", "tensor(int64)", ["batch"])


def test_failed_export_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "policy.pt2"
    target.write_bytes(b"previous")
    with pytest.raises(ValueError, match="int64 actions"):  # a Q-network is not a policy
        export_program(QNetwork(obs_dim=D), D, target)

    def broken_write(self, data):
        with open(self, "wb") as out:
            out.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_bytes", broken_write)
    with pytest.raises(OSError, match="disk full"):
        export_program(argmax_policy(), D, target)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["policy.pt2"]


@pytest.mark.parametrize(("call", "name", "obs_dim", "match"), [
    (export_program, "policy.onnx", D, r"\.pt2"),
    (export_onnx, "policy.pt2", D, r"\.onnx"),
    (export_program, "policy.pt2", 0, "positive integer"),
])
def test_bad_arguments(tmp_path, call, name, obs_dim, match):
    with pytest.raises(ValueError, match=match):
        call(argmax_policy(), obs_dim, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_a_randomised_admission_policy_given_the_same_uniforms_decides_alike_in_every_format(tmp_path):
    from drl_ac.checkpoint import LoadedPolicy, export_policy
    module = greedy_policy()
    x = states(5)
    with torch.no_grad():
        q = module.qnet(torch.from_numpy(x))
        advantage = (q[:, 1] - q[:, 0]).numpy()
    margin = float(np.quantile(advantage, 0.7) - np.quantile(advantage, 0.3))  # 40% of the states mix
    section = {"obs_dim": D, "num_actions": 2, "admission": True, "hidden": [32, 32], "scale": SCALE,
               "state_dict": module.qnet.state_dict(), "bias": float(np.quantile(advantage, 0.7)),
               "margin": margin, "mix": 0.35, "mix_seed": 9, "encoding": None}
    section.pop("encoding")
    section["scenario"] = {"stations": [{}] * D}  # a version-1 style layout: D queue lengths
    pt2, onnx_path = export_policy(LoadedPolicy(section), tmp_path)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "u"]
    u = np.random.default_rng(3).random(len(x), dtype=np.float32)
    policy = LoadedPolicy(section)
    with torch.no_grad():
        want = policy.module(torch.from_numpy(x), torch.from_numpy(u)).numpy()
        _, p = policy.module.admit_probability(q, torch.from_numpy(x))
    mixed = (p > 0) & (p < 1)
    assert 0.3 < mixed.float().mean() < 0.5 and np.allclose(np.unique(p.numpy()), [0.0, 0.35, 1.0])
    assert 0.2 < want[mixed.numpy()].mean() < 0.5  # about 35% of the margin states admitted
    np.testing.assert_array_equal(session.run([OUTPUT_NAME], {INPUT_NAME: x, "u": u})[0], want)
    np.testing.assert_array_equal(torch.export.load(pt2).module()(torch.from_numpy(x), torch.from_numpy(u)).numpy(),
                                  want)
    first = policy(x)  # drl_ac draws u itself, from mix_seed: reproducible after reset
    policy.reset()
    np.testing.assert_array_equal(policy(x), first)
    deterministic = LoadedPolicy({**section, "mix": 0.0})(x)  # no mixing: the greedy rule at the bias
    np.testing.assert_array_equal(deterministic, (advantage >= section["bias"]).astype(np.int64))


def test_a_scheduled_operating_point_uses_its_bands_bias_and_decides_alike_in_every_format(tmp_path):
    """bias, margin and mix per band of the arrival-rate estimate (the last feature): each row
    decides as the one-point policy of its band would, in torch, ONNX and torch.export."""
    from drl_ac.checkpoint import LoadedPolicy, export_policy
    from envs.observation import ObservationEncoding
    module = greedy_policy()
    x = states(6)
    x[:, -1] = np.random.default_rng(4).uniform(0.5, 1.5, len(x)).astype(np.float32)  # the rate estimate
    with torch.no_grad():
        advantage = (lambda q: (q[:, 1] - q[:, 0]).numpy())(module.qnet(torch.from_numpy(x)))
    low, high = (float(np.quantile(advantage, a)) for a in (0.3, 0.7))
    encoding = ObservationEncoding(D - 1, False, rate=True).to_dict()
    section = {"obs_dim": D, "num_actions": 2, "admission": True, "hidden": [32, 32], "scale": SCALE,
               "state_dict": module.qnet.state_dict(), "encoding": encoding, "bias_edges": [1.0],
               "bias": [low, high], "margin": [0.0, high - low], "mix": [0.0, 0.5], "mix_seed": 2}
    policy = LoadedPolicy(section)
    u = np.random.default_rng(5).random(len(x), dtype=np.float32)
    with torch.no_grad():
        want = policy.module(torch.from_numpy(x), torch.from_numpy(u)).numpy()
    band = x[:, -1] >= 1.0
    for b, (bias, margin, mix) in enumerate([(low, 0.0, 0.0), (high, high - low, 0.5)]):
        alone = LoadedPolicy({**section, "bias_edges": [], "bias": bias, "margin": margin, "mix": mix})
        with torch.no_grad():
            own = alone.module(torch.from_numpy(x), torch.from_numpy(u)).numpy()
        rows = band == bool(b)
        np.testing.assert_array_equal(want[rows], own[rows])
    assert want[~band].mean() > want[band].mean()  # the lower bias admits more
    pt2, onnx_path = export_policy(policy, tmp_path)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run([OUTPUT_NAME], {INPUT_NAME: x, "u": u})[0], want)
    np.testing.assert_array_equal(torch.export.load(pt2).module()(torch.from_numpy(x), torch.from_numpy(u)).numpy(),
                                  want)
    with pytest.raises(ValueError, match="one per band"):
        LoadedPolicy({**section, "bias": [low]})
    with pytest.raises(ValueError, match="bias: .* without bias_edges"):  # a list without edges: no silent per-row bias
        LoadedPolicy({**section, "bias_edges": []})
    with pytest.raises(ValueError, match="bias_edges: .*ascending"):
        LoadedPolicy({**section, "bias_edges": [1.0, 0.5], "bias": [low, high, high], "margin": 0.0, "mix": 0.0})
    with pytest.raises(ValueError, match="bias_edges: .*admission policy"):
        LoadedPolicy({**section, "admission": False})
    same = LoadedPolicy({**section, "bias": [low, low], "margin": 0.0, "mix": 0.0})  # a scalar serves every band
    np.testing.assert_array_equal(same(x), LoadedPolicy({**section, "bias_edges": [], "bias": low, "margin": 0.0,
                                                         "mix": 0.0})(x))
    with pytest.raises(CheckpointError, match="bias_edges"):
        LoadedPolicy({**section, "encoding": ObservationEncoding(D, False).to_dict()})
