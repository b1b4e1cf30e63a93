"""Network descriptions: what loads, and every kind of bad input failing clearly."""

import re

import numpy as np
import pytest

from envs import NetworkSpec, SpecError, load_spec, make_vector
from envs.distributions import make_distribution

BASE = {
    "arrival": {"dist": "exponential", "rate": 0.5},
    "stations": [{"name": "a", "servers": 2, "service": {"dist": "gamma", "mean": 1.0, "scv": 0.5}},
                 {"name": "b", "servers": 1, "service": {"dist": "exponential", "mean": 0.5}}],
    "routing": {"a": {"b": 0.5, "exit": 0.5}},
    "d_ub": 5, "eps": 0.1,
}


def with_(path, value):
    import copy
    cfg = copy.deepcopy(BASE)
    target = cfg
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return cfg


def test_shipped_scenarios_load_with_paper_parameters():
    tandem = load_spec("paper_tandem")
    assert tandem.servers.tolist() == [3, 5, 2]
    assert [s.service.mean for s in tandem.stations] == [3.0, 5.0, 2.0]
    assert tandem.arrival_rate == pytest.approx(0.95)
    assert (tandem.d_ub, tandem.eps, tandem.lam, tandem.delay) == (15, 0.1, 8, "paper")
    np.testing.assert_allclose(tandem.utilization(), 0.95)
    acyclic = load_spec("paper_acyclic")
    np.testing.assert_allclose(acyclic.visit_ratios(), [1, 0.67, 0.33, 1])
    assert (acyclic.d_ub, acyclic.lam) == (20, 5)
    assert load_spec("tandem").delay == "sojourn" and load_spec("tandem").d_ub == 25
    assert load_spec("acyclic").d_ub == 35 and load_spec("acyclic").lam is None


def test_yaml_roundtrip_and_overrides(tmp_path):
    spec = NetworkSpec.from_dict(BASE)
    again = NetworkSpec.from_dict(spec.to_dict())
    assert again == spec
    assert spec.with_overrides(eps=0.05, lam="auto").eps == 0.05
    path = tmp_path / "net.yaml"
    import yaml
    path.write_text(yaml.safe_dump(BASE))
    assert load_spec(path, d_ub=7).d_ub == 7


def test_empirical_distribution_from_file(tmp_path):
    f = tmp_path / "times.txt"
    f.write_text("1.0\n2.0\n3.0\n")
    d = make_distribution({"dist": "empirical", "file": str(f)}, "service")
    assert d.mean == pytest.approx(2.0)
    draws = d.sample(np.random.default_rng(0), 1000)
    assert set(np.unique(draws)) == {1.0, 2.0, 3.0}


@pytest.mark.parametrize("cfg, dist", [
    ({"dist": "gamma", "mean": 2.0, "scv": 0.5}, None),
    ({"dist": "lognormal", "mean": 2.0, "scv": 1.5}, None),
    ({"dist": "hyperexponential", "mean": 2.0, "scv": 4.0}, None),
    ({"dist": "lomax", "mean": 2.0, "scv": 3.0}, None),
    ({"dist": "deterministic", "mean": 2.0}, None),
    ({"dist": "exponential", "rate": 0.5}, None),
    # free phases; by hand: mean 0.5 / 1 + 0.5 * 3 = 2, E[X^2] = 2 (0.5 + 0.5 * 9) = 10, SCV 10 / 4 - 1 = 1.5
    ({"dist": "hyperexponential", "probs": [0.5, 0.5], "rates": [1.0, 1 / 3]}, None),
])
def test_distribution_moments_match_mean_and_scv(cfg, dist):
    d = make_distribution(cfg, "service")
    x = d.sample(np.random.default_rng(1), 2_000_000)
    assert x.mean() == pytest.approx(d.mean, rel=0.01)
    if d.scv < 2:  # heavy tails make the sample SCV converge too slowly to test
        assert x.var() / x.mean() ** 2 == pytest.approx(d.scv, abs=0.03)
    assert d.mean == pytest.approx(2.0)


@pytest.mark.parametrize("cfg, field", [
    (with_(["stations", 0, "servers"], 0), "stations[0].servers"),
    (with_(["stations", 0, "servers"], 1.5), "stations[0].servers"),
    (with_(["stations", 1, "service"], {"dist": "exponential", "rate": -1}), "stations[1].service.rate"),
    (with_(["stations", 0, "service"], {"dist": "gamma", "mean": 1, "scv": 0}), "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "hyperexponential", "mean": 1, "scv": 0.5}),
     "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "lomax", "mean": 1, "scv": 0.9}), "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "h2", "probs": [0.2, 0.7], "rates": [1, 2]}),
     "stations[0].service.probs"),
    (with_(["stations", 0, "service"], {"dist": "h2", "probs": [0.2, 0.8], "rates": [1, -2]}),
     "stations[0].service.rates[1]"),
    (with_(["stations", 0, "service"], {"dist": "h2", "probs": [0.2, 0.8], "rates": [1]}),
     "stations[0].service.rates"),
    (with_(["stations", 0, "service"], {"dist": "h2", "mean": 1, "probs": [1.0], "rates": [1]}),
     "stations[0].service.mean"),
    (with_(["stations", 0, "service"], {"dist": "weibull", "mean": 1}), "stations[0].service.dist"),
    (with_(["routing", "a"], {"b": 0.5, "exit": 0.4}), "routing.a"),
    (with_(["routing", "a"], {"c": 1.0}), "routing.a.c"),
    (with_(["routing", "b"], {"a": 1.0}), "routing"),  # a -> b -> a is a cycle
    (with_(["routing", "zz"], "exit"), "routing.zz"),
    (with_(["arrival"], {"dist": "gamma", "mean": 0, "scv": 1}), "arrival.mean"),
    (with_(["eps"], 1.5), "eps"),
    (with_(["d_ub"], -1), "d_ub"),
    (with_(["entry"], "nowhere"), "entry.nowhere"),
    (with_(["stations", 1, "service"], {"dist": "empirical", "file": "/no/such/file.txt"}),
     "stations[1].service.file"),
    (with_(["training"], {"num_envs": 0}), "training.num_envs"),
    (with_(["training"], {"updates_per_step": 2.5}), "training.updates_per_step"),
    (with_(["training"], {"lr": 3}), "training.lr"),
    (with_(["training"], {"targets": "mc"}), "training.targets"),
    (with_(["training"], {"rollout_horizon": 0}), "training.rollout_horizon"),
    (with_(["training"], [512]), "training"),
])
def test_bad_input_names_field_and_fix(cfg, field):
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict(cfg)
    assert err.value.field == field
    assert "Fix:" in str(err.value)


def test_a_training_block_is_read_and_written_back():
    spec = load_spec("cell_5g")  # train.py's defaults of the scenario, tuned once
    assert dict(spec.training) == {"num_envs": 512, "updates_per_step": 4}
    assert NetworkSpec.from_dict(spec.to_dict()).training == spec.training
    red = load_spec("redundancy_ps")  # rollout targets over the best rule: strings and numbers
    assert dict(red.training)["targets"] == "rollout" and NetworkSpec.from_dict(red.to_dict()).training == red.training
    assert load_spec("paper_tandem").training == () and "training" not in load_spec("paper_tandem").to_dict()


def test_unknown_scenario_and_bad_delay_measure():
    with pytest.raises(SpecError, match="unknown scenario 'nope'.*paper_tandem"):
        load_spec("nope")
    with pytest.raises(SpecError, match="delay"):
        load_spec("paper_tandem", delay="mean")
    with pytest.raises(SpecError, match="cannot be overridden"):
        make_vector("paper_tandem", 2, rho=0.5)


def test_unstable_network_is_reported():
    spec = NetworkSpec.from_dict(with_(["arrival"], {"dist": "exponential", "rate": 3.0}))
    with pytest.raises(SpecError, match="load .* >= 1"):
        spec.check_stable()
    load_spec("paper_tandem").check_stable()


# --------------------------------------------------------------------------- 1. station names

@pytest.mark.parametrize("name, problem", [
    ("exit", "reserved for the routing sink"),
    ("reject", "reserved for a controller action"),
    ("accept", "reserved for a controller action"),
    ("", "empty"),
    ("   ", "empty"),
    (None, "expected a name"),
    (True, "expected a name"),
    ([1], "expected a name"),
])
def test_reserved_empty_or_odd_station_names_are_refused(name, problem):
    with pytest.raises(SpecError, match=r"^stations\[1\]\.name: .*" + problem) as err:
        NetworkSpec.from_dict(with_(["stations", 1, "name"], name))
    assert err.value.field == "stations[1].name" and err.value.fix


def test_duplicate_station_name_points_at_the_second():
    with pytest.raises(SpecError, match=r"^stations\[1\]\.name: duplicate station name 'a'"):
        NetworkSpec.from_dict(with_(["stations", 1, "name"], "a"))


def test_integer_station_names_work_in_routing():
    import yaml
    spec = NetworkSpec.from_dict(yaml.safe_load("""
        arrival: {dist: exponential, rate: 0.5}
        stations: [{name: 1, service: {dist: exponential, mean: 1}}, {name: 2, service: {dist: exponential, mean: 1}}]
        routing: {1: 2, 2: exit}
        d_ub: 5
        eps: 0.1
    """))
    assert spec.station_names == ("1", "2") and spec.routing[0][1] == 1.0


def test_directly_built_spec_refuses_exit_station():
    from envs import StationSpec
    from envs.distributions import Exponential
    with pytest.raises(SpecError, match=r"stations\[0\]\.name"):
        NetworkSpec("x", (StationSpec("exit", 1, Exponential(1.0)),), ((0.0, 1.0),), (1.0,),
                    Exponential(2.0), 5.0, 0.1)


# --------------------------------------------------------------------------- 2. unknown keys

@pytest.mark.parametrize("path, value, field, hint", [
    (["deadline"], 3, "deadline", "did you mean 'd_ub'"),
    (["epsilon"], 0.1, "epsilon", "did you mean 'eps'"),
    (["stations", 0, "servrs"], 2, "stations[0].servrs", "did you mean 'servers'"),
    (["stations", 0, "knd"], "ps", "stations[0].knd", "did you mean 'kind'"),
    (["stations", 0, "service", "sccv"], 0.5, "stations[0].service.sccv", "did you mean 'scv'"),
    (["stations", 1, "service", "sccv"], 0.5, "stations[1].service.sccv", "'scv' belongs to gamma"),
    (["stations", 1, "service", "scv"], 1.0, "stations[1].service.scv", "exponential distribution takes only"),
    (["arrival", "sccv"], 0.5, "arrival.sccv", "'scv' belongs to gamma"),
    (["arrival", "meen"], 2, "arrival.meen", "did you mean 'mean'"),
    (["routing", "a"], {"bb": 0.5, "exit": 0.5}, "routing.a.bb", "did you mean 'b'"),
    (["routing", "aa"], "exit", "routing.aa", "did you mean 'a'"),
    (["stations", 0, "kind"], "pss", "stations[0].kind", "did you mean 'ps'"),
    (["objective"], "admision", "objective", "did you mean 'admission'"),
])
def test_unknown_keys_are_refused_with_a_suggestion(path, value, field, hint):
    with pytest.raises(SpecError, match="^" + re.escape(field) + ": ") as err:
        NetworkSpec.from_dict(with_(path, value))
    assert err.value.field == field
    assert hint in err.value.fix


def test_unknown_key_in_a_class_and_a_renewal_class_arrival():
    classes = [{"name": "g", "arrival": {"dist": "poisson", "rate": 0.3, "sccv": 1}}]
    cfg = {k: v for k, v in with_(["classes"], classes).items() if k != "arrival"}
    with pytest.raises(SpecError, match=r"^classes\[0\]\.arrival\.sccv: unknown key"):
        NetworkSpec.from_dict(cfg)
    cfg["classes"] = [{"name": "g", "arrival": {"dist": "exponential", "rate": 0.3}, "deadline": 4}]
    with pytest.raises(SpecError, match=r"^classes\[0\]\.deadline: unknown key") as err:
        NetworkSpec.from_dict(cfg)
    assert "did you mean 'd_ub'" in err.value.fix


@pytest.mark.parametrize("cfg, field", [
    ({"mean": 1.0, "scv": 2.0}, "service.dist"),
    ({"dist": "lomax", "shape": 3.0, "scale": 1.0, "scv": 2.0}, "service.scv"),
    ({"dist": "lomax", "shape": 3.0, "scale": 1.0, "mean": 2.0}, "service"),
    ({"dist": "lomax", "scale": 1.0, "mean": 2.0, "scv": 2.0}, "service.scale"),
    ({"dist": "empirical", "values": [1.0], "file": "x.txt"}, "service"),
    ({"dist": "empirical"}, "service"),
    ({"dist": ["gamma"], "mean": 1.0}, "service.dist"),
    ({"dist": "exponential", "rate": 1e-320}, "service.rate"),
])
def test_distribution_key_combinations(cfg, field):
    with pytest.raises(SpecError) as err:
        make_distribution(cfg, "service")
    assert err.value.field == field


def test_to_dict_round_trips_every_family():
    import copy
    cfg = copy.deepcopy(BASE)
    cfg["stations"] = [
        {"name": f"s{i}", "servers": 1, "service": svc} for i, svc in enumerate([
            {"dist": "exponential", "mean": 1.0}, {"dist": "deterministic", "rate": 2.0},
            {"dist": "lognormal", "mean": 1.0, "scv": 2.0}, {"dist": "h2", "mean": 1.0, "scv": 3.0},
            {"dist": "lomax", "shape": 3.0, "scale": 2.0}, {"dist": "lomax", "shape": 3.0, "mean": 1.0},
            {"dist": "empirical", "values": [1.0, 2.5]},
            {"dist": "hyperexponential", "probs": [0.1, 0.9], "rates": [0.19, 1.9]}])]
    cfg["routing"] = {}
    spec = NetworkSpec.from_dict(cfg)
    assert NetworkSpec.from_dict(spec.to_dict()) == spec


# --------------------------------------------------------------------------- 3. empirical values

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("values, field, problem", [
    ([1.0, NAN], "values[1]", "not finite"),
    ([INF], "values[0]", "not finite"),
    ([1.0, -2.0], "values[1]", "must be positive"),
    ([0.0], "values[0]", "must be positive"),
    ([1.0, "fast"], "values[1]", "not a number"),
    ([1.0, None], "values[1]", "not a number"),
    ([1.0, [2.0]], "values[1]", "not a number"),
    ([True, 2.0], "values[0]", "boolean"),
    (3, "values", "expected a list"),
    ("1 2 3", "values", "expected a list"),
    ({"a": 1}, "values", "expected a list"),
    ([], "values", "empty"),
])
def test_bad_inline_empirical_values(values, field, problem):
    full = "stations[1].service." + field
    with pytest.raises(SpecError, match="^" + re.escape(full) + ": .*" + problem):
        NetworkSpec.from_dict(with_(["stations", 1, "service"], {"dist": "empirical", "values": values}))


@pytest.mark.parametrize("text, line, problem", [
    ("1.0\n2.0\nnan\n", 3, "not finite"),
    ("1.0\ninf\n", 2, "not finite"),
    ("1.0, 2.0\n3.0, -1\n", 2, "not positive"),
    ("0\n", 1, "not positive"),
    ("time\n1.0\n", 1, "not a number"),
    ("1.0\n\n2.0 x\n", 3, "not a number"),
])
def test_bad_empirical_file_names_the_file_and_line(tmp_path, text, line, problem):
    f = tmp_path / "times.txt"
    f.write_text(text)
    cfg = with_(["stations", 1, "service"], {"dist": "empirical", "file": "times.txt"})
    with pytest.raises(SpecError, match=re.escape(str(f)) + f".* line {line}: .*{problem}") as err:
        NetworkSpec.from_dict(cfg, base_dir=tmp_path)
    assert err.value.field == "stations[1].service.file"


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_empty_empirical_file(tmp_path, text):
    f = tmp_path / "times.txt"
    f.write_text(text)
    with pytest.raises(SpecError, match=r"^service\.file: .*holds no values"):
        make_distribution({"dist": "empirical", "file": str(f)}, "service")


def test_empirical_file_must_be_a_path_to_a_regular_file(tmp_path):
    with pytest.raises(SpecError, match=r"^service\.file: expected the path"):
        make_distribution({"dist": "empirical", "file": 3}, "service")
    with pytest.raises(SpecError, match=r"^service\.file: .*not a regular file"):
        make_distribution({"dist": "empirical", "file": str(tmp_path)}, "service")


# --------------------------------------------------------------------------- 4. binary files

BINARY = bytes(range(256)) * 4


def test_binary_yaml_file_is_a_spec_error(tmp_path):
    f = tmp_path / "net.yaml"
    f.write_bytes(BINARY)
    with pytest.raises(SpecError, match=r"^scenario: .*not a text file"):
        load_spec(f)
    f.write_bytes(b"d_ub: 5\x00\n")  # valid UTF-8, but a NUL byte
    with pytest.raises(SpecError, match=r"^scenario: .*not a text file"):
        load_spec(f)


def test_binary_empirical_file_is_a_spec_error(tmp_path):
    f = tmp_path / "times.bin"
    f.write_bytes(BINARY)
    with pytest.raises(SpecError, match=r"not a text file") as err:
        NetworkSpec.from_dict(with_(["stations", 0, "service"], {"dist": "empirical", "file": str(f)}))
    assert err.value.field == "stations[0].service.file"


def test_empirical_file_with_a_byte_order_mark_reads(tmp_path):
    f = tmp_path / "times.txt"
    f.write_bytes(b"\xef\xbb\xbf1.0\n2.0\n")
    assert make_distribution({"dist": "empirical", "file": str(f)}, "service").values == (1.0, 2.0)


# --------------------------------------------------------------------------- 5. top level and booleans

@pytest.mark.parametrize("text, problem", [
    ("", "is empty"),
    ("# only a comment\n", "is empty"),
    ("- a\n- b\n", "top level .* is a list, not a mapping"),
    ("3\n", "top level .* is a int, not a mapping"),
    ("just words\n", "top level .* is a str, not a mapping"),
    ("d_ub: [1\n", "not valid YAML"),
    ("d_ub: 2001-13-01\n", "not valid YAML"),
    ("d_ub: !!int abc\n", "not valid YAML"),
    ("[" * 5000, "nests too deeply|not valid YAML"),
])
def test_yaml_that_is_not_a_network(tmp_path, text, problem):
    f = tmp_path / "net.yaml"
    f.write_text(text)
    with pytest.raises(SpecError, match=r"^scenario: .*" + problem):
        load_spec(f)


def test_load_spec_refuses_a_non_path():
    with pytest.raises(SpecError, match=r"^scenario: expected a scenario name"):
        load_spec(3)


@pytest.mark.parametrize("line, field", [
    ("d_ub: yes", "d_ub"),
    ("eps: true", "eps"),
    ("lam: no", "lam"),
    ("stations: [{name: a, servers: true, service: {dist: exponential, mean: 1}}]", "stations[0].servers"),
    ("stations: [{name: a, service: {dist: exponential, mean: on}}]", "stations[0].service.mean"),
    ("stations: [{name: a, service: {dist: empirical, values: [1, yes]}}]", "stations[0].service.values[1]"),
    ("entry: {a: true}", "entry.a"),
    ("arrival: {dist: gamma, rate: 1, scv: true}", "arrival.scv"),
    ("arrival: {dist: poisson, rate: 1, profile: {period: yes, table: [1]}}", "arrival.profile.period"),
])
def test_booleans_are_not_numbers(tmp_path, line, field):
    import yaml
    base = {"arrival": {"dist": "exponential", "rate": 0.5}, "d_ub": 5, "eps": 0.1,
            "stations": [{"name": "a", "service": {"dist": "exponential", "mean": 1}}]}
    base.update(yaml.safe_load(line))
    f = tmp_path / "net.yaml"
    f.write_text(yaml.safe_dump(base))
    with pytest.raises(SpecError, match="^" + re.escape(field) + ": ") as err:
        load_spec(f)
    assert "boolean" in err.value.problem


def test_numbers_pyyaml_reads_as_strings_still_work(tmp_path):
    f = tmp_path / "net.yaml"
    f.write_text("arrival: {dist: exponential, rate: 5e-1}\nstations: [{name: a, service: {dist: exponential, "
                 "mean: 1}}]\nd_ub: 1e1\neps: 0.1\nlam: auto\n")
    spec = load_spec(f)
    assert (spec.d_ub, spec.arrival.mean, spec.lam) == (10.0, 2.0, None)


def test_overrides_are_checked_numbers():
    spec = NetworkSpec.from_dict(BASE)
    assert spec.with_overrides(d_ub="7").d_ub == 7.0
    with pytest.raises(SpecError, match="^d_ub: expected a number, got the boolean"):
        spec.with_overrides(d_ub=True)


def test_huge_integers_are_spec_errors():
    with pytest.raises(SpecError, match="^d_ub: number too large"):
        NetworkSpec.from_dict(with_(["d_ub"], 10**400))
    with pytest.raises(SpecError, match=r"^stations\[0\]\.servers: .*too many"):
        NetworkSpec.from_dict(with_(["stations", 0, "servers"], 2**70))


# --------------------------------------------------------------------------- 6. stability warning

def test_stability_warning_matches_check_stable():
    stable = NetworkSpec.from_dict(BASE)
    assert stable.stability_warning() is None
    stable.check_stable()
    unstable = NetworkSpec.from_dict(with_(["arrival"], {"dist": "exponential", "rate": 3.0}))
    text = unstable.stability_warning()
    assert isinstance(text, str) and "\n" not in text
    assert text.startswith("stations[0] (a): load 1.500 >= 1") and "Fix:" in text
    with pytest.raises(SpecError) as err:
        unstable.check_stable()
    assert str(err.value) == text
    assert load_spec("mmc_c5_overload").stability_warning() is not None
