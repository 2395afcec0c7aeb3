"""Bayesian experimental design: options, initial design, acquisition, refit schedules, the loop and the GP estimators."""
