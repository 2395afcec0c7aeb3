"""The estimator interface: the ``ShapleyEstimate`` result, the ``BaseEstimator`` front, ``ExactShapley``."""
