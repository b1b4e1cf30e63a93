"""Property tests of the spec readers: whatever a user writes, the answer is a NetworkSpec
(or a Distribution / ArrivalProcess) or a SpecError, never another exception.

Inputs are arbitrary JSON/YAML-like values and near-valid specs made by mutating valid
ones (deleting keys, replacing values, adding unknown keys).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from envs import NetworkSpec, SpecError, load_spec  # noqa: E402
from envs.arrivals import ArrivalProcess, make_arrivals  # noqa: E402
from envs.distributions import Distribution, make_distribution  # noqa: E402

FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# Words the readers care about, so random values often hit real keys and names.
VOCAB = ["name", "arrival", "classes", "stations", "entry", "routing", "d_ub", "eps", "lam", "delay",
         "actions", "objective", "servers", "service", "kind", "dist", "mean", "rate", "scv", "shape",
         "scale", "file", "values", "profile", "period", "table", "sinusoid", "amplitude", "phase",
         "exponential", "exp", "deterministic", "gamma", "lognormal", "hyperexponential", "h2", "lomax",
         "pareto", "empirical", "poisson", "weibull", "fcfs", "ps", "sojourn", "paper", "admission",
         "response_time", "deadline", "reject", "accept", "exit", "auto", "a", "b", "s1", "", " ",
         "1e3", "nan", "inf", "-1", "0.5", "yes"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # unbounded: YAML reads 10**400 as an int
    st.integers(-3, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0.01, 10.0),
    st.sampled_from(VOCAB),
    st.text(max_size=8),
)
keys = st.one_of(st.sampled_from(VOCAB), st.text(max_size=6), st.integers(-2, 3), st.booleans(), st.none())
json_like = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)

DISTS = [
    {"dist": "exponential", "rate": 0.5},
    {"dist": "deterministic", "mean": 2.0},
    {"dist": "gamma", "mean": 1.0, "scv": 0.5},
    {"dist": "lognormal", "mean": 1.0, "scv": 1.5},
    {"dist": "hyperexponential", "mean": 1.0, "scv": 4.0},
    {"dist": "lomax", "mean": 1.0, "scv": 3.0},
    {"dist": "lomax", "shape": 3.0, "scale": 2.0},
    {"dist": "empirical", "values": [0.5, 1.0, 2.5]},
]
ARRIVALS = DISTS + [
    {"dist": "poisson", "rate": 0.4},
    {"dist": "poisson", "profile": {"period": 24, "table": [0.2, 0.8, 0.0, 0.5]}},
    {"dist": "poisson", "rate": 0.3, "profile": {"period": 24, "sinusoid": {"amplitude": 0.5, "phase": 1.0}}},
]
BASES = [
    {"name": "base", "arrival": {"dist": "gamma", "rate": 0.5, "scv": 0.7},
     "stations": [{"name": "a", "servers": 2, "service": {"dist": "gamma", "mean": 1.0, "scv": 0.5}},
                  {"name": "b", "servers": 1, "kind": "ps", "service": {"dist": "empirical", "values": [0.2, 0.8]}},
                  {"name": "c", "service": {"dist": "lomax", "shape": 3.0, "scale": 1.0}}],
     "entry": {"a": 0.8, "c": 0.2},
     "routing": {"a": {"b": 0.5, "exit": 0.5}, "b": "c", "c": "exit"},
     "d_ub": 5, "eps": 0.1, "lam": "auto", "delay": "sojourn", "actions": ["reject", "accept"],
     "objective": "admission"},
    {"classes": [{"name": "gold", "arrival": ARRIVALS[-2], "d_ub": 8},
                 {"name": "bulk", "arrival": ARRIVALS[-1]}],
     "stations": [{"name": "s1", "servers": 3, "service": {"dist": "exponential", "mean": 1.0}},
                  {"name": "s2", "servers": 1, "service": {"dist": "deterministic", "rate": 2.0}}],
     "routing": {"s1": "exit", "s2": "exit"},
     "d_ub": 14, "eps": 0.2, "lam": 3.0, "actions": ["s1", "s2"], "objective": "deadline"},
]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, node) in a nested structure of dicts and lists, the root included."""
    out = [(prefix, obj)]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


@st.composite
def mutated(draw: st.DrawFn, bases: list[Any]) -> Any:
    """A valid base with one to three random edits: delete, replace, or add a key/item."""
    cfg = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 3))):
        path, node = draw(st.sampled_from(_paths(cfg)))
        op = draw(st.sampled_from(["delete", "replace", "add"]))
        if op == "replace" or (op == "delete" and not path):
            value = draw(json_like)
            if not path:
                cfg = value
            else:
                _get(cfg, path[:-1])[path[-1]] = value
        elif op == "delete":
            del _get(cfg, path[:-1])[path[-1]]
        elif isinstance(node, dict):
            node[draw(keys)] = draw(json_like)
        elif isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(json_like))
    return cfg


def _from_dict_or_spec_error(cfg: Any) -> None:
    try:
        spec = NetworkSpec.from_dict(cfg)
    except SpecError as err:
        assert err.field is not None and err.fix, err
        return
    assert isinstance(spec, NetworkSpec)
    # a spec that loads can be warned about, and written out and read back
    warning = spec.stability_warning()
    assert warning is None or (isinstance(warning, str) and "\n" not in warning)
    assert NetworkSpec.from_dict(spec.to_dict()).to_dict() == spec.to_dict()


def test_the_bases_are_valid():
    for base in BASES:
        NetworkSpec.from_dict(base)
    for cfg in ARRIVALS:
        make_arrivals(cfg, "arrival")


@FUZZ
@given(json_like)
def test_from_dict_on_arbitrary_values(cfg):
    _from_dict_or_spec_error(cfg)


@FUZZ
@given(mutated(BASES))
def test_from_dict_on_mutated_specs(cfg):
    _from_dict_or_spec_error(cfg)


def _distribution_or_spec_error(build, cfg: Any, kind: type) -> None:
    try:
        out = build(cfg, "service")
    except SpecError as err:
        assert err.field.startswith("service") and err.fix, err
        return
    assert isinstance(out, kind)
    if isinstance(out, Distribution):
        assert math.isfinite(out.mean) and out.mean > 0, out
    else:
        assert math.isfinite(out.mean_rate) and out.mean_rate > 0, out


@FUZZ
@given(st.one_of(json_like, mutated(DISTS),
                 st.fixed_dictionaries({"dist": st.sampled_from(VOCAB)}, optional={
                     k: json_like for k in ("mean", "rate", "scv", "shape", "scale", "values", "file")})))
def test_make_distribution_alone(cfg):
    _distribution_or_spec_error(make_distribution, cfg, Distribution)


@FUZZ
@given(st.one_of(json_like, mutated(ARRIVALS)))
def test_make_arrivals_alone(cfg):
    _distribution_or_spec_error(make_arrivals, cfg, ArrivalProcess)


@pytest.fixture(scope="module")
def yaml_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spec_fuzz") / "net.yaml"


@settings(max_examples=100, deadline=None, database=None)
@given(data=st.one_of(st.binary(max_size=200),
                      mutated(BASES).map(lambda c: yaml.safe_dump(c, allow_unicode=True, sort_keys=False).encode()),
                      st.text(max_size=200).map(str.encode)))
def test_load_spec_on_arbitrary_file_contents(yaml_file, data):
    yaml_file.write_bytes(data)
    try:
        spec = load_spec(yaml_file)
    except SpecError:
        return
    assert isinstance(spec, NetworkSpec)
