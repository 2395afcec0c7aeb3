"""Games with exact ground truth, the benchmark harness, plots and the ``shapleig`` command."""
