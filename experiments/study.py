"""A study of one system: rules tuned, learners trained and chosen on a validation seed, the
chosen one compared with the best rule in steady state on a fresh seed, a verdict, and the
policy exported with its comparison (drl_ac.study.run). One flag per StudyConfig field.

    python experiments/study.py --scenario redundancy_ps --loads 0.3 0.5 0.7 0.9 --seeds 0 1 \\
        --steps 1500000 --budget full --out checkpoints/redundancy_ps
    python experiments/study.py --scenario pools --loads 0.5 0.8 0.95 --budget full
    python experiments/study.py --scenario paper_tandem --steps 4000000 --budget full
    python experiments/study.py --scenario pools --budget smoke --steps 2000 --num-envs 16 --snapshots 1 \\
        --out /tmp/pools      # the wiring, in seconds (decides nothing)

Writes, per load, OUT/load-X (OUT itself without --loads): policy.pt, policy.pt2, policy.onnx,
metrics.json, comparison.json, report.md; and OUT/study.json, study.md, study.png.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing

from drl_ac.cli import HelpFormatter, progress_printer
from drl_ac.study.run import StudyConfig, field_docs, field_types, run_study
from envs import SpecError


def _argument(name: str, hint: object, default: object, doc: str) -> tuple[list[str], dict]:
    """argparse's flags and options of one field from its type: X | None reads X, a tuple
    reads one or more values, a bool is --flag / --no-flag."""
    flag = "--" + name.replace("_", "-")
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        hint = next(a for a in args if a is not type(None))
    options: dict = {"default": default, "help": doc.replace("%", "%%")}
    if hint is bool:
        options["action"] = argparse.BooleanOptionalAction
    elif typing.get_origin(hint) is tuple:
        options.update(type=typing.get_args(hint)[0], nargs="+")
        if default is not None:
            options["help"] += f" (default: {' '.join(map(str, default))})"
    else:
        options["type"] = hint
    if name == "ray":  # --ray alone: a fresh local Ray
        options.update(nargs="?", const="local", metavar="ADDRESS")
    return [flag], options


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    docs, hints = field_docs(StudyConfig), field_types(StudyConfig)
    for f in dataclasses.fields(StudyConfig):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        flags, options = _argument(f.name, hints[f.name], default, docs.get(f.name, ""))
        p.add_argument(*flags, **options)
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    try:
        config = StudyConfig(**vars(args))
        result = run_study(config, progress_printer(config.quiet))
    except (ValueError, SpecError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(result["table"])
    print("\n".join(entry["verdict_line"] for entry in result["loads"]))
    print(f"wrote {config.folder()}")
    return result


if __name__ == "__main__":
    main()
