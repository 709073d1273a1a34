"""Kinds that come and go, permissions that change: whether one kind can be read now, and when to ask again.

A kind the API server does not serve (a 404 on its list or watch, or absent from discovery: its CRD is not
installed yet, or was deleted) or refuses (a 403: RBAC) is not given up. The kind's watch loop (``watching``) asks
again with a back-off from ``RETRY_INITIAL`` seconds doubling to a cap, with ±20 % jitter, for as long as the run
lasts, so that a CRD re-created by an upgrade or a grant applied later is recorded soon after:

- not served: asked again at most ``NOT_SERVED_RECHECK`` seconds apart (24 s with the jitter): a kind is listed and
  watched within 30 s of being served (the list itself takes the rest);
- forbidden: asked again at most ``FORBIDDEN_RETRY`` seconds apart (48 s with the jitter): a grant is recorded within
  60 s.

Each retry is one request (a discovery document, or the first page of a list), a few a minute at most per kind. The
loop tells its sink once per change of state (``Access.refused`` says when the state changed), never once per
retry, so a person reads one line when a kind stops being readable and one when it is back (``session``).

Pure: the state and its delays. The caps are read when a state begins, so tests shorten the module's constants.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kubectl_sktrace.model import CAUSE_FORBIDDEN as FORBIDDEN
from kubectl_sktrace.model import CAUSE_NOT_SERVED as NOT_SERVED

__all__ = ["FORBIDDEN", "NOT_SERVED", "Access", "Backoff", "longest_wait", "retry_cap"]

RETRY_INITIAL = 1.0
NOT_SERVED_RECHECK = 20.0
FORBIDDEN_RETRY = 40.0

BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
BACKOFF_JITTER = 0.2


@dataclass
class Backoff:
    """0.8 s doubling to 30 s, with jitter; Retry-After wins when it asks for longer."""

    rng: random.Random
    initial: float = BACKOFF_INITIAL
    cap: float = BACKOFF_MAX
    jitter: float = BACKOFF_JITTER
    attempt: int = 0

    def next_delay(self, retry_after: float | None = None) -> float:
        base = min(self.cap, self.initial * 2.0 ** min(self.attempt, 32))  # bounded: a day-long outage must not overflow
        self.attempt += 1
        delay = base * (1 + self.rng.uniform(-self.jitter, self.jitter))
        if retry_after is not None and retry_after > delay:
            return min(retry_after, 10 * self.cap)
        return delay

    def reset(self) -> None:
        self.attempt = 0


class Access:
    """One kind's readability: None while it can be read, else ``NOT_SERVED`` or ``FORBIDDEN``, with the back-off of
    its retries."""

    def __init__(self, rng: random.Random) -> None:
        self.state: str | None = None
        self._rng = rng
        self._backoff = Backoff(rng)

    def refused(self, state: str) -> bool:
        """The kind answered 404 (``NOT_SERVED``) or 403 (``FORBIDDEN``): True when that is news (another state
        before), which starts the retries' back-off over."""
        if state == self.state:
            return False
        self.state = state
        self._backoff = Backoff(self._rng, initial=RETRY_INITIAL, cap=retry_cap(state))
        return True

    def next_delay(self) -> float:
        """Seconds until the next try."""
        return self._backoff.next_delay()

    def readable(self) -> str | None:
        """The kind was listed: it can be read again. Returns the state it leaves (None: it could be read)."""
        was, self.state = self.state, None
        return was


def retry_cap(state: str) -> float:
    """The longest wait between two tries in ``state`` (before jitter)."""
    return NOT_SERVED_RECHECK if state == NOT_SERVED else FORBIDDEN_RETRY


def longest_wait(state: str) -> float:
    """The longest wait between two tries in ``state``, jitter included: what a person is told."""
    return retry_cap(state) * (1 + BACKOFF_JITTER)
