"""Why a manager's process exits non-zero, said once where the operator reads it.

Role: :meth:`~aioinformer.operator.Manager.run_until_signal` and
:meth:`~aioinformer.operator.Manager.main` turn a failure (caches that did not sync,
leadership lost, a runnable's or the setup's error) into exit code 1, and
:func:`report_exit` says why. It logs the cause at ERROR on the manager's logger, and
writes it to stderr as well only when that record does not reach stderr already: a
pod's log, which is its containers' stderr, shows it exactly once, whether the program
configured logging or not.

Input: the message. Output: one log record, and, when no handler writes it to stderr
(a stream handler on the logger or on an ancestor it propagates to, or, with no handler
at all, logging's last resort), one line on stderr.

Task model: a synchronous call, on the event loop, as the manager's run ends.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["report_exit"]

# The manager's own logger: the exit is its run's last word.
logger = logging.getLogger("aioinformer.operator.manager")


def report_exit(message: str) -> None:
    """The cause of a non-zero exit, logged, and on stderr for the operator reading the
    pod's logs: written there only when the log does not already reach it, so it shows
    once."""
    logger.error("%s", message)
    if not _logs_reach_stderr(logging.ERROR):
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


def _logs_reach_stderr(level: int) -> bool:
    """Whether a record of ``level`` from the manager's logger is written to stderr: by
    a stream handler on it or on an ancestor it propagates to, or, with no handler at
    all, by logging's last resort."""
    if not logger.isEnabledFor(level):
        return False
    current: logging.Logger | None = logger
    found = False
    while current is not None:
        for handler in current.handlers:
            found = True
            stream = getattr(handler, "stream", None)
            to_stderr = type(handler) is logging.StreamHandler and stream is sys.stderr
            if to_stderr and level >= handler.level:
                return True
        if not current.propagate:
            break
        current = current.parent
    last_resort = logging.lastResort
    return not found and last_resort is not None and level >= last_resort.level
