"""Learning side of drl_ac: delayed-completion store, replay, differential Q-learning, checkpoints."""

__version__ = "0.1.0"

from drl_ac.checkpoint import CheckpointError, load_policy  # noqa: E402
from drl_ac.evaluation.metrics import evaluate  # noqa: E402
from drl_ac.learning.learner import DifferentialQLearner, LearnerConfig  # noqa: E402
from drl_ac.learning.trainer import TrainConfig, Trainer  # noqa: E402
from envs.reward import reward  # noqa: E402

__all__ = ["CheckpointError", "DifferentialQLearner", "LearnerConfig", "TrainConfig", "Trainer",
           "evaluate", "load_policy", "reward"]
