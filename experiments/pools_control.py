"""Two pools, control, at loads 0.5, 0.8 and 0.95 of the best threshold rule's stability bound
(reroute after tau in service on the signalled pool, tau at its best: 0.9932 on the scenario
pools, exact): a study (drl_ac.study.run) with the settings below. Every constant action of
the scenario (full replication included) and the signalled-pool rule with its policy and tau
tuned; learners (seeds 0 and 1), four snapshots each, each also guarded by the best constant
action; chosen on the validation seed; compared in steady state with stability verdicts; the
chosen policy per load in checkpoints/pools/load-X.

    python experiments/pools_control.py                                 # the study below
    python experiments/pools_control.py --loads 0.8 --budget quick      # any flag of experiments/study.py

The same as:

    python experiments/study.py --scenario pools --loads 0.5 0.8 0.95 --seeds 0 1 --steps 1000000 \\
        --num-envs 256 --updates-per-step 4 --exploration-start 0.1 --reset-backlog 50 --snapshots 4 \\
        --quantiles 0.5 0.9 --budget full --out checkpoints/pools

The stability bounds of each fixed policy (formula, and replication's simulated limit with
one server per pool) are experiments/pools.py's.
"""

from pathlib import Path

from drl_ac.study.run import StudyConfig, main

PRESET = StudyConfig(scenario="pools", loads=(0.5, 0.8, 0.95), seeds=(0, 1), steps=1_000_000, num_envs=256,
                     updates_per_step=4, exploration_start=0.1, reset_backlog=50, snapshots=4, quantiles=(0.5, 0.9),
                     budget="full", out=Path("checkpoints/pools"))

if __name__ == "__main__":
    main(preset=PRESET, description=__doc__)
