"""The kernel-spec protocol's former path, kept for code written against it: see :mod:`shapleig.gp.kernels.spec`."""

from shapleig.gp.kernels.spec import DENSE_MAX_PLAYERS, FitTerms, KernelSpec, SumKernel

__all__ = ["DENSE_MAX_PLAYERS", "FitTerms", "KernelSpec", "SumKernel"]
