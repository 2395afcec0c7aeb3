"""Explaining a model's prediction: the interventional imputer game, ``explain`` and its plot."""
