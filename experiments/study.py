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
metrics.json, comparison.json, report.md; and OUT/study.json, study.md, study.png. The
settings of experiments/redundancy.py and pools_control.py are studies too (their presets).
"""

from drl_ac.study.run import main

if __name__ == "__main__":
    main(description=__doc__)
