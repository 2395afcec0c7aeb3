"""The surrogate's kernels: the kernel-spec protocol, the concrete kernels and the registry of named surrogates.

Every kernel is a :class:`~shapleig.gp.kernels.spec.KernelSpec` (:mod:`~shapleig.gp.kernels.spec`), composed
with ``+``: :class:`Hamming` (docs/math.md §3, :mod:`~shapleig.gp.kernels.hamming`), :class:`SizeKernel`
(docs/math.md §15, :mod:`~shapleig.gp.kernels.size`), :class:`Graded` (docs/math.md §16,
:mod:`~shapleig.gp.kernels.graded`, with :mod:`~shapleig.gp.kernels.graded_walsh` and the learned noise of
:mod:`~shapleig.gp.kernels.noise`), :class:`Rough` and :class:`Additive`. The surrogate's string names meet
these objects in one place, :mod:`~shapleig.gp.kernels.registry`. :func:`check_kernel`
(:mod:`~shapleig.gp.kernels.contract`) runs the checks every kernel passes on any spec, a user's too.
Nothing outside this package names a concrete kernel: the engine asks a spec (:attr:`KernelSpec.per_player`, :attr:`KernelSpec.learned_noise`,
:attr:`KernelSpec.twin`, :meth:`KernelSpec.describe`) or the registry (``tests/project/test_kernel_names.py``).

>>> spec = Hamming(ard=False) + SizeKernel(trend=True, jumps=False)
>>> spec.name, [part.name for part in spec.parts]
('shared+size', ['shared', 'size'])
"""

from shapleig.gp.kernels.spec import DENSE_MAX_PLAYERS, FitTerms, KernelSpec, SumKernel  # isort: skip
from shapleig.gp.kernels.additive import Additive, AdditiveParams
from shapleig.gp.kernels.contract import KernelContractError, KernelReport, check_kernel
from shapleig.gp.kernels.graded import Graded, GradedParams
from shapleig.gp.kernels.hamming import Hamming, HammingFit, HammingParams
from shapleig.gp.kernels.noise import LearnedNoise
from shapleig.gp.kernels.registry import (
    BASE_KERNELS,
    EVIDENCE,
    SURROGATES,
    check_size_trend,
    check_surrogate,
    plain_hamming,
    register_kernel,
    surrogate_evidence,
    surrogate_kernels,
)
from shapleig.gp.kernels.rough import Rough, RoughParams
from shapleig.gp.kernels.size import SizeFit, SizeKernel, SizeParams, n_extremes, size_kernel_info, size_kernel_matrix

__all__ = [
    "BASE_KERNELS", "DENSE_MAX_PLAYERS", "EVIDENCE", "SURROGATES", "Additive", "AdditiveParams", "FitTerms", "Graded",
    "GradedParams", "Hamming", "HammingFit", "HammingParams", "KernelContractError", "KernelReport", "KernelSpec",
    "LearnedNoise", "Rough", "RoughParams", "SizeFit", "SizeKernel", "SizeParams", "SumKernel", "check_kernel",
    "check_size_trend", "check_surrogate", "n_extremes", "plain_hamming", "register_kernel", "size_kernel_info",
    "size_kernel_matrix", "surrogate_evidence", "surrogate_kernels",
]
