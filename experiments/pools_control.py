"""Two pools, control, at loads 0.5, 0.8 and 0.95 of the best threshold rule's stability bound
(reroute after tau in service on the signalled pool, tau at its best: 0.9932 on the scenario
pools, exact): a study (drl_ac.study.run) with the settings below. Every constant action of
the scenario (full replication included) and the signalled-pool rule with its policy and tau
tuned; one learner that learns the values of the best rule that can guard (acting as it with
5% random actions: more overloads the instances), guarded by it at three quantiles, and the
rule itself; chosen on the validation seed; compared in steady state with stability
verdicts; the chosen policy per load in checkpoints/pools/load-X.

    python experiments/pools_control.py                                 # the study below
    python experiments/pools_control.py --loads 0.8 --budget smoke      # any flag of experiments/study.py

The same as:

    python experiments/study.py --scenario pools --loads 0.5 0.8 0.95 --reset-backlog 50 \\
        --base-exploration 0.05 --snapshots 1 --out checkpoints/pools

The stability bounds of each fixed policy (formula, and replication's simulated limit with
one server per pool) are experiments/pools.py's.
"""

from pathlib import Path

from drl_ac.study.run import StudyConfig, main

PRESET = StudyConfig(scenario="pools", loads=(0.5, 0.8, 0.95), snapshots=1, base_exploration=0.05,
                     reset_backlog=50, out=Path("checkpoints/pools"))

if __name__ == "__main__":
    main(preset=PRESET, description=__doc__)
