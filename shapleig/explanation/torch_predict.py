"""A torch ``nn.Module`` as the prediction function of :func:`~shapleig.explanation.explain`.

torch is imported only when the object explained comes from torch
(:func:`shapleig.games.model_identity.is_torch_module`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class TorchPredict:
    """A torch ``nn.Module`` as ``float[n, d] -> float[n, ...]``.

    Rows converted to the dtype and device of its parameters, called without gradients, the output
    returned as a float64 array. The module is called as it is (its ``training`` flag is left alone;
    call ``module.eval()`` first for dropout or batch-norm layers). Picklable when the module is.

    Args:
        module: the torch module to call.
    """

    def __init__(self, module: Any) -> None:
        self.torch_module = module

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The module's output on ``float[n, d]`` rows, as a float64 array."""
        import torch

        first = next(iter(self.torch_module.parameters()), None)
        dtype = first.dtype if first is not None else torch.get_default_dtype()
        device = first.device if first is not None else torch.device("cpu")
        with torch.no_grad():
            out = self.torch_module(torch.as_tensor(np.asarray(rows, dtype=np.float64)).to(dtype=dtype, device=device))
        return out.detach().cpu().numpy().astype(np.float64)

    def __repr__(self) -> str:
        return f"TorchPredict({type(self.torch_module).__name__})"
