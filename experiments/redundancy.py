"""Redundancy-d control at loads 0.3, 0.5, 0.7 and 0.9 of lambda*(d = 1) on redundancy_ps: a
study (drl_ac.study.run) with the settings below. Every fixed d (an unstable one reported so,
not simulated) and d by a load threshold, tuned; learners (seeds 0 and 1, holding and own
cost), three snapshots each, each also guarded by the best fixed d; chosen on the validation
seed; compared in steady state with stability verdicts; the chosen policy per load in
checkpoints/redundancy_ps/load-X.

    python experiments/redundancy.py                                    # the study below
    python experiments/redundancy.py --loads 0.9 --budget quick         # any flag of experiments/study.py

The same as:

    python experiments/study.py --scenario redundancy_ps --loads 0.3 0.5 0.7 0.9 --seeds 0 1 \\
        --costs holding own --steps 1500000 --num-envs 256 --updates-per-step 4 \\
        --exploration-start 0.1 --reset-backlog 200 --hidden 64 64 --quantiles 0.5 0.9 --budget full \\
        --out checkpoints/redundancy_ps
"""

from pathlib import Path

from drl_ac.study.run import StudyConfig, main

PRESET = StudyConfig(scenario="redundancy_ps", loads=(0.3, 0.5, 0.7, 0.9), seeds=(0, 1), costs=("holding", "own"),
                     steps=1_500_000, num_envs=256, updates_per_step=4, exploration_start=0.1, reset_backlog=200,
                     hidden=(64, 64), quantiles=(0.5, 0.9), budget="full", out=Path("checkpoints/redundancy_ps"))

if __name__ == "__main__":
    main(preset=PRESET, description=__doc__)
