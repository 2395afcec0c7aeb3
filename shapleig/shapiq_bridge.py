"""The shapiq bridge under its first name: ``shapleig.shapiq_bridge``, deprecated (``shapleig._deprecated``).

It lives in :mod:`shapleig.interop.shapiq_bridge`; needs the extra ``shapleig[shapiq]``. Importing
this name warns (before the bridge's own import, so the warning comes even where the extra is missing).
"""

from shapleig._deprecated import warn_deprecated

warn_deprecated("shapleig.shapiq_bridge")

from shapleig.interop.shapiq_bridge import *  # noqa: E402, F403
from shapleig.interop.shapiq_bridge import __all__  # noqa: E402, F401
