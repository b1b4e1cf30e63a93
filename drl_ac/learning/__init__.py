"""Learning: delayed-completion store, replay, differential Q-network and learner, multiplier, trainer."""
