"""The shapiq bridge under its first name: ``shapleig.shapiq_bridge``, so code written against it keeps working.

It lives in :mod:`shapleig.interop.shapiq_bridge`; needs the extra ``shapleig[shapiq]``.
"""

from shapleig.interop.shapiq_bridge import *  # noqa: F403
from shapleig.interop.shapiq_bridge import __all__  # noqa: F401
