"""Evaluation: the common harness and metrics, tuned baseline rules, calibration, sweeps."""
