"""A 5G cell: the admission rules operators run, each tuned, against learned controllers,
overall, per UE type and per hour of the day: a study (drl_ac.study.run) with the settings
below. Every rule of the cell (envs.systems.cell.rules: accept-all, PRB threshold, per-type
thresholds, per-type thresholds re-tuned per hour, guard channel, fractional guard channel)
tuned on the tuning seed for the lowest blocking at dropping <= eps with its one-sided 95%
bound; two learners (the scenario's training block), each snapshot calibrated on the
validation seed to the same bound (randomised at the margin); the one with the lowest
blocking there chosen; all compared on the evaluation seed over whole days. Per load folder:
the policy files, comparison.json, report.md (with the per-type table) and by_phase.png
(blocking and dropping per hour, 95% intervals).

    python experiments/cell.py                                              # the study below
    python experiments/cell.py --scenario tiny.yaml --budget smoke --out /tmp/c  # any flag of experiments/study.py
    python experiments/evaluate.py --checkpoint checkpoints/cell_5g/policy.pt --baselines  # a saved policy

The same as:

    python experiments/study.py --scenario cell_5g --seeds 0 1 --out results/cell
"""

from pathlib import Path

from drl_ac.study.run import StudyConfig, main

PRESET = StudyConfig(scenario="cell_5g", seeds=(0, 1), out=Path("results/cell"))

if __name__ == "__main__":
    main(preset=PRESET, description=__doc__)
