"""Redundancy-d control at loads 0.3, 0.5, 0.7 and 0.9 of lambda*(d = 1) on redundancy_ps: a
study (drl_ac.study.run) with the settings below. Every fixed d (an unstable one reported so,
not simulated), d by a load threshold and the own-server threshold (copies on the job's next
servers while they hold at most m jobs), tuned; one learner that improves the best rule by
rollout targets (the default command's learner, the scenario's training block: each action
simulated and then the rule, drl_ac.learning.lookahead), guarded by that rule at three
quantiles, and the rule itself; chosen on the validation seed; compared in
steady state with stability verdicts; the chosen policy per load in
checkpoints/redundancy_ps/load-X.

    python experiments/redundancy.py                                    # the study below
    python experiments/redundancy.py --loads 0.9 --budget smoke         # any flag of experiments/study.py

The same as:

    python experiments/study.py --scenario redundancy_ps --loads 0.3 0.5 0.7 0.9 --reset-backlog 200 \\
        --snapshots 1 --out checkpoints/redundancy_ps
"""

from pathlib import Path

from drl_ac.study.run import StudyConfig, main

PRESET = StudyConfig(scenario="redundancy_ps", loads=(0.3, 0.5, 0.7, 0.9), snapshots=1, reset_backlog=200,
                     out=Path("checkpoints/redundancy_ps"))

if __name__ == "__main__":
    main(preset=PRESET, description=__doc__)
