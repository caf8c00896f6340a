"""Leave the process once a command's work is done, without the native teardown that can abort it."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import NoReturn

# Arrow's C++ thread pools (used by pyarrow and through it by delta-rs) can abort the interpreter while it
# finalizes modules ("terminate called without an active exception", exit 134) after a command has printed
# everything: apache/arrow#34314, delta-io/delta-rs#2184. A command whose work is done must not fail then.
_NATIVE_POOLS = ("pyarrow", "deltalake")


def exit_process(code: object = 0) -> NoReturn:
    """`sys.exit(code)`, except that once a native pool is loaded the interpreter's finalization is skipped.

    Registered exit functions still run and the standard streams are flushed first, so nothing the command
    printed or scheduled is lost; only module teardown (which has nothing left to do) is skipped.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    if not any(name in sys.modules for name in _NATIVE_POOLS):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be delivered
            stream.flush()
    os._exit(status)
