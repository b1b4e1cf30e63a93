"""Every documented command runs.

The commands of every ```bash block of README.md and docs/**/*.md are extracted, shrunk to a
tiny budget by the BUDGETS table below and run in a scratch folder; each must exit 0 and
write what it says. A documented program with no entry in BUDGETS fails here, so a new
command cannot escape. Commands that take a scenario run on every packaged headline
scenario. Every ```python block runs (in order per page, in one scratch folder, with the
substitutions of PYTHON_BUDGETS), every ```yaml block that names a system loads, every
relative link resolves, and the README stays short.

Commands that take minutes even with tiny budgets, or more than about 10 s each where the
default run would grow past two minutes, are marked slow with the reason and the time measured
(python -m pytest -m slow tests/test_docs.py runs them).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from envs import NetworkSpec, load_spec

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
HEADLINE = ("paper_tandem", "cell_5g", "redundancy_ps", "pools")
SHIPPED = {"paper_tandem", "paper_acyclic", "tandem", "acyclic", "cell_5g"}  # checkpoints/NAME/policy.pt
README_MAX_LINES = 210
TIMEOUT = 1200  # seconds per command


@dataclass(frozen=True)
class Budget:
    """How a documented command is run here.

    ``set``: flags given these values (replacing the command's own, else appended; ``True``: a
    bare flag); ``{out}`` is the case's output folder. ``per``: ``"scenario"`` runs a command
    without ``--scenario`` once per headline scenario, ``"checkpoint"`` replaces
    ``--checkpoint`` by a policy of each headline scenario. ``writes``: files that must exist
    afterwards (``{out}``, ``{scenario}``); ``json_stdout``: stdout must be one JSON object when
    the command asks for ``--json``. ``slow`` / ``xfail``: reasons, for every case or per
    scenario. ``skip``: the command is not run by this test, and why."""

    set: dict = field(default_factory=dict)
    per: str | None = None
    writes: tuple[str, ...] = ()
    stdout: bool = False
    slow: str | dict | None = None
    xfail: dict = field(default_factory=dict)
    skip: str | None = None
    control: dict = field(default_factory=dict)  # set only on a control system (train.py refuses them elsewhere)


TRAIN_FILES = ("{out}/policy.pt", "{out}/policy.pt2", "{out}/policy.onnx", "{out}/metrics.json", "{out}/checkpoint.pt")

STUDY_SMOKE = {"--budget": "smoke", "--steps": "2000", "--num-envs": "16", "--snapshots": "1", "--seeds": "0",
               "--costs": "holding", "--out": "{out}", "--force": True, "--quiet": True}
STUDY_FILES = ("{out}/study.json", "{out}/study.md")

BUDGETS: dict[str, Budget] = {
    "pip install": Budget(skip="installs the project; .ci/run does it before the tests"),
    "python -m pytest": Budget(skip="the test suite itself, which .ci/run runs"),
    "experiments/train.py": Budget(
        set={"--steps": "2000", "--num-envs": "64", "--eval-arrivals": "500", "--device": "cpu",
             "--out": "{out}", "--quiet": True, "--force": True, "--compare": "off"},
        control={"--base": "none"},
        per="scenario", writes=TRAIN_FILES,
        slow={"cell_5g": "calibration and evaluation of a periodic cell cover whole days per instance: "
                         "55-71 s even with 500 arrivals"}),
    "experiments/evaluate.py": Budget(
        set={"--arrivals": "500", "--num-envs": "50", "--tune-arrivals": "500", "--tabular-decisions": "2000",
             "--budget": "smoke", "--quiet": True},
        per="checkpoint", stdout=True,
        slow={"cell_5g --baselines": "five cell rules tuned over whole days: more than 3 minutes even with 500 "
                                     "arrivals",
              "paper_tandem --baselines": "three rule families tuned by about 50 evaluations of 400+ warm-up steps "
                                          "each: minutes even with 500 arrivals",
              "pools --baselines": "every constant action and the signalled-pool rule, each tuned, measured and "
                                   "checked for stability (about a minute at the smoke budget)",
              "redundancy_ps --baselines": "every fixed d, the load and own-server thresholds tuned, measured and checked for "
                                           "stability (about a minute at the smoke budget; tests/drl_ac/study "
                                           "covers the comparison in the default run)"},
        xfail={f"{name} --per-hour": "--per-hour needs a day of hourly rate tables (a cell's): refused on "
                                     f"{name}'s policy" for name in ("paper_tandem", "redundancy_ps", "pools")}),
    "experiments/cell.py": Budget(set=STUDY_SMOKE, writes=STUDY_FILES,
                                  slow="cell_5g's six rules are tuned and evaluated over whole days: minutes even "
                                       "at the smoke budget (tests/experiments/test_cell.py runs the preset on a "
                                       "small cell)"),
    "experiments/optimality.py": Budget(
        set={"--steps": "2000", "--arrivals": "500", "--num-envs": "64", "--cell-envs": "32",
             "--calibration-arrivals": "4000",
             "--json": "{out}/optimality.json"},
        writes=("{out}/optimality.json",),
        slow={"mmc_c1": "a learner, its calibration and the exact optimum per M/M/c scenario: more than 3 minutes "
                        "even with 2000 decisions"}),
    "experiments/coverage.py": Budget(set={"--cases": "mm1_0.95", "--seeds": "2", "--max-steps": "400",
                                           "--workers": "1", "--out": "{out}/coverage.jsonl"},
                                      writes=("{out}/coverage.jsonl",)),
    "experiments/untuned.py": Budget(set={"--networks": "1", "--steps": "2000", "--compare": "smoke", "--out": "{out}"},
                                     writes=("{out}/untuned.md", "{out}/untuned.json", "{out}/random-0/network.yaml"),
                                     slow="draws a network and runs train.py on it at the smoke budget (136 s, two other runs on the cores)"),
    "experiments/ps_checks.py": Budget(stdout=True, slow="fixed sizes, no flags: 400 instances x 6,000 arrivals x "
                                                        "5 systems (43 s)"),
    "experiments/sweep.py": Budget(
        set={"--steps": "2000", "--num-envs": "64", "--arrivals": "500", "--lams": ["1", "8"], "--seeds": "0",
             "--workers": "1", "--out": "{out}"},
        writes=("{out}/sweep.json", "{out}/sweep.csv", "{out}/trials.csv"),
        slow={"--ray": "starts and stops a local Ray (14 s)"}),
    "experiments/reproduce.py": Budget(
        set={"--scenarios": "paper_tandem", "--seeds": "1", "--steps": "2000", "--num-envs": "64",
             "--points": "2", "--arrivals": "500", "--out": "{out}"},
        writes=("{out}/summary.json", "{out}/summary.md")),
    "experiments/stability.py": Budget(set={"--quick": True, "--out": "{out}/stability.json"},
                                       writes=("{out}/stability.json",),
                                       slow="drift bisections from a backlog even with --quick (26 s)"),
    "experiments/cost_curves.py": Budget(
        set={"--sizes": ["1", "16"], "--stations": ["3", "10"], "--loads": ["0.5", "0.9"], "--decisions": "2000",
             "--visits": "6000", "--num-envs": "16", "--ciw-visits": "600", "--plots": "{out}"},
        writes=("{out}/cost_instances.png", "{out}/cost_stations.png", "{out}/cost_loads.png")),
    "experiments/tails.py": Budget(set={"--arrivals": "20000", "--ks": ["100", "200"], "--out": "{out}"},
                                   writes=("{out}/hill.json", "{out}/hill.png")),
    "experiments/redundancy.py": Budget(set={**STUDY_SMOKE, "--loads": "0.5"}, writes=STUDY_FILES,
                                        slow="a whole study (rules, a learner, its choice, the comparison) even "
                                             "at the smoke budget (20-30 s)"),
    "experiments/study.py": Budget(set={**STUDY_SMOKE, "--loads": ["0.5", "0.9"]}, writes=STUDY_FILES,
                                   slow="a whole study even at the smoke budget (20-30 s a load; with --one-policy "
                                        "the rules tuned at 3 loads and the range)"),
    "experiments/pools.py": Budget(set={"--quick": True, "--out": "{out}"}, writes=("{out}/pools.json",),
                                   slow="drift bisections and simulated loads even with --quick (9-13 s each)"),
    "experiments/pools_control.py": Budget(set={**STUDY_SMOKE, "--loads": "0.5"}, writes=STUDY_FILES,
                                           slow="a whole study (every constant action, a learner, its choice, the "
                                                "comparison) even at the smoke budget (25-40 s)"),
}

# Substitutions in ```python blocks (a block without one runs as written).
PYTHON_BUDGETS = {
    'DECISIONS, ARRIVALS, BUDGET = 1_000_000, 20_000, "quick"': 'DECISIONS, ARRIVALS, BUDGET = 4_000, 2_000, "smoke"',
    "num_envs=4096": "num_envs=64",
    ".learn(1_000_000)": ".learn(20_000)",  # docs/gymnasium.md's PPO: two rollouts of 256 x 64 steps, each with its update
}


# ------------------------------------------------------------------ reading the pages
def blocks(page: Path, lang: str) -> list[tuple[int, str]]:
    """(line of the opening fence, text) of every ```lang block of ``page``."""
    out, inside, start, lines = [], False, 0, []
    for i, line in enumerate(page.read_text().splitlines(), start=1):
        if not inside and line.strip() == f"```{lang}":
            inside, start, lines = True, i, []
        elif inside and line.strip() == "```":
            out.append((start, "\n".join(lines)))
            inside = False
        elif inside:
            lines.append(line)
    return out


@dataclass(frozen=True)
class Command:
    where: str  # page:line
    argv: tuple[str, ...]

    @property
    def program(self) -> str:
        a = self.argv
        if a[0] == "python" and len(a) > 1 and a[1].endswith(".py"):
            return a[1]
        return " ".join(a[:3] if a[:2] == ("python", "-m") else a[:2])


def documented_commands() -> list[Command]:
    out = []
    for page in PAGES:
        for start, text in blocks(page, "bash"):
            for offset, line in enumerate(text.replace("\\\n", " ").splitlines(), start=1):
                argv = shlex.split(line, comments=True)
                if argv:
                    out.append(Command(f"{page.relative_to(ROOT)}:{start + offset}", tuple(argv)))
    return out


def with_flags(argv: list[str], flags: dict, out: Path) -> list[str]:
    """``argv`` with each flag of ``flags`` given its budget value (its own values removed)."""
    argv = list(argv)
    for flag, value in flags.items():
        if flag in argv:
            i = argv.index(flag)
            j = i + 1
            while j < len(argv) and not argv[j].startswith("--"):
                j += 1
            del argv[i:j]
        values = [] if value is True else ([value] if isinstance(value, str) else list(value))
        argv += [flag, *(v.format(out=out) for v in values)]
    return argv


def flag_value(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


@dataclass(frozen=True)
class Case:
    command: Command
    budget: Budget | None
    scenario: str | None

    @property
    def id(self) -> str:
        return f"{self.command.where} {' '.join(self.command.argv[1:3])}" + (f" [{self.scenario}]" if self.scenario else "")

    def argv(self, out: Path, policy: Path | None) -> list[str]:
        """The command line run: the scenario added, the checkpoint replaced by ``policy``,
        the budget's flags set."""
        argv, budget = list(self.command.argv), self.budget
        if budget.per == "scenario" and "--scenario" not in argv:
            argv += ["--scenario", self.scenario]
        if budget.per == "checkpoint":
            argv = with_flags(argv, {"--checkpoint": str(policy)}, out)
        scenario = flag_value(tuple(argv), "--scenario")
        if budget.control and scenario and load_spec(ROOT / scenario if (ROOT / scenario).is_file() else scenario
                                                     ).system.kind == "control":
            argv = with_flags(argv, budget.control, out)
        return with_flags(argv, budget.set, out)

    def reason(self, entry: str | dict | None) -> str | None:
        """A slow or xfail reason of the budget: one for every case, or the first of a dict
        whose key's words all occur among the case's scenario and arguments."""
        if not isinstance(entry, dict):
            return entry
        words = set(self.command.argv) | {self.scenario}
        return next((r for k, r in entry.items() if set(k.split()) <= words), None)


def cases() -> list:
    params, seen = [], set()
    for cmd in documented_commands():
        budget = BUDGETS.get(cmd.program)
        scenarios: list[str | None] = [None]
        if budget is not None and budget.per == "scenario":
            given = flag_value(cmd.argv, "--scenario")
            scenarios = [given] if given else list(HEADLINE)
        elif budget is not None and budget.per == "checkpoint":
            scenarios = list(HEADLINE)
        for scenario in scenarios:
            case, marks = Case(cmd, budget, scenario), []
            if budget is not None and not budget.skip:  # one case per distinct command line run
                same = tuple(case.argv(Path("{out}"), Path(f"<{scenario} policy>")))
                if same in seen:
                    continue
                seen.add(same)
            if budget is not None and case.reason(budget.slow):
                marks.append(pytest.mark.slow)
            if budget is not None and case.reason(budget.xfail):
                marks.append(pytest.mark.xfail(strict=True, reason=case.reason(budget.xfail)))
            params.append(pytest.param(case, id=case.id, marks=marks))
    return params


# ------------------------------------------------------------------ running
def scratch(folder: Path) -> Path:
    """A folder that looks like the repository root to a documented command: experiments/ and
    envs/ linked, checkpoints/ holding links to the shipped policies (so runs/ written there
    stays in the scratch folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("experiments", "envs"):
        if not (folder / name).exists():
            (folder / name).symlink_to(ROOT / name)
    (folder / "checkpoints").mkdir(exist_ok=True)
    for name in SHIPPED:
        if not (folder / "checkpoints" / name).exists():
            (folder / "checkpoints" / name).symlink_to(ROOT / "checkpoints" / name)
    return folder


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg", WANDB_MODE="offline")
    return env


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=TIMEOUT)


def failure(proc: subprocess.CompletedProcess, argv: list[str]) -> str:
    return f"{shlex.join(argv)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-5000:]}"


@pytest.fixture(scope="session")
def headline_policies(tmp_path_factory) -> dict[str, Path]:
    """A policy file per headline scenario: the shipped one, else a tiny trained network. The
    pools network is guarded by the action pool1-replicate@0 (full replication, stable at this
    load) with an infinite bias, so an untrained network cannot make the evaluation unstable."""
    from drl_ac import TrainConfig, Trainer
    from drl_ac.checkpoint import save_atomic

    folder = tmp_path_factory.mktemp("policies")
    out = {}
    for scenario in HEADLINE:
        if scenario in SHIPPED:
            out[scenario] = ROOT / "checkpoints" / scenario / "policy.pt"
            continue
        trainer = Trainer(TrainConfig(scenario=scenario, steps=640, num_envs=64, device="cpu", seed=0))
        trainer.train()
        section = trainer.policy_section()
        if scenario == "pools":
            section["default_action"] = list(trainer.spec.actions).index("pool1-replicate@0")
            section["bias"] = 1e9
        out[scenario] = save_atomic(section, folder / f"{scenario}.pt")
    return out


@pytest.mark.parametrize("case", cases())
def test_documented_command(case: Case, tmp_path, request):
    cmd, budget = case.command, case.budget
    assert budget is not None, (f"{cmd.where}: no entry for {cmd.program!r} in BUDGETS of tests/test_docs.py: "
                                "add one (tiny budget flags, what it writes, slow or skip reason)")
    if budget.skip:
        pytest.skip(budget.skip)
    cwd, out = scratch(tmp_path / "root"), tmp_path / "out"
    policy = request.getfixturevalue("headline_policies")[case.scenario] if budget.per == "checkpoint" else None
    argv = case.argv(out, policy)
    if argv[0] == "python":
        argv[0] = sys.executable
    proc = run(argv, cwd)
    assert proc.returncode == 0, failure(proc, argv)
    for pattern in budget.writes:
        path = Path(pattern.format(out=out, scenario=case.scenario))
        path = path if path.is_absolute() else cwd / path
        assert path.is_file() and path.stat().st_size > 0, f"{shlex.join(argv)} did not write {path}"
    if budget.stdout:
        assert proc.stdout.strip(), f"{shlex.join(argv)} printed nothing"
        if "--json" in argv:
            json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_python_budget_still_applies():
    """A budget whose text left the docs would let that block run at full size (60 s for PPO)."""
    texts = [text for page in PAGES for _, text in blocks(page, "python")]
    unused = [old for old in PYTHON_BUDGETS if not any(old in text for text in texts)]
    assert not unused, f"PYTHON_BUDGETS entries matching no python block: {unused}: update them to the docs"


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks(page: Path, tmp_path):
    """The page's python blocks, in order, each in a fresh interpreter, in one scratch folder
    (the README's ONNX block reads what its quickstart wrote, and must run without drl_ac or
    torch: checked after its last line)."""
    cwd = scratch(tmp_path)
    found = blocks(page, "python")
    for n, (start, text) in enumerate(found):
        for old, new in PYTHON_BUDGETS.items():
            text = text.replace(old, new)
        if page.name == "README.md" and n == 0:
            assert text != found[0][1], "the quickstart's budget line changed: update PYTHON_BUDGETS"
        if page.name == "README.md" and "onnxruntime" in text:
            text += ("\nimport sys\nassert not [m for m in sys.modules if m.split('.')[0] in ('drl_ac', 'envs', 'torch')]"
                     ", 'the ONNX example needs drl_ac or torch'\n")
        script = cwd / f"block_{start}.py"
        script.write_text(text + "\n")
        proc = run([sys.executable, script.name], cwd)
        assert proc.returncode == 0, f"{page.relative_to(ROOT)}:{start}\n" + failure(proc, [script.name])
    if page.name == "README.md":
        for name in ("policy.pt", "metrics.json", "policy.pt2", "policy.onnx"):
            assert (cwd / "runs/quickstart" / name).is_file(), f"the quickstart did not write runs/quickstart/{name}"


# ------------------------------------------------------------------ checks without running
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "yaml")], ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_blocks_load(page: Path):
    """A yaml block with a ``name`` is a whole system and must load; others must parse."""
    for start, text in blocks(page, "yaml"):
        where = f"{page.relative_to(ROOT)}:{start}"
        try:
            cfg = yaml.safe_load(text)
            if isinstance(cfg, dict) and "name" in cfg:
                NetworkSpec.from_dict(cfg, base_dir=page.parent)
        except (yaml.YAMLError, ValueError) as exc:
            pytest.fail(f"{where}: {exc}")


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page: Path):
    """Relative links and images point at files that exist, and anchors at headings there."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.relative_to(ROOT)}: link to missing {target}"
        if anchor and file.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), flags=re.M)}
            assert anchor in slugs, f"{page.relative_to(ROOT)}: no heading #{anchor} in {path or page.name}"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; keep it near 200, the rest in docs/"


def test_every_documented_program_has_a_budget():
    """Listed on its own so that a missing entry shows up even when the slow cases are skipped."""
    missing = sorted({f"{c.program} ({c.where})" for c in documented_commands() if c.program not in BUDGETS})
    assert not missing, f"no entry in BUDGETS for: {', '.join(missing)}"
