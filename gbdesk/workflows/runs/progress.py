"""What a run reports while it runs: progress, recent speed, pace and time left (no Qt)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass
class Progress:
    """One progress report of a run (to `execute_run`'s on_progress).

    ``status`` "loading" comes before the model is loaded, then "running" (the first one
    with ``loaded_s``: the model is loaded, nothing is done yet), then one per stored
    attempt and, while continuous batching has answers under way, about one a second
    with ``in_flight`` sequences holding ``tokens_in_flight`` tokens. ``tokens_per_s``
    counts every token decoded this session (answers in flight included); ``eta_s`` is
    None until the speed is known (`Pace`). ``last`` is the last stored attempt: item
    key, attempt (0-based, as stored), its ``title`` in words (`Presentation.item_title`),
    label, prompt, response, tokens. ``waiting`` (an endpoint's silence) comes between
    them, at least once a minute while the server says nothing."""

    run_id: int
    status: str
    done: int
    total: int
    session_done: int = 0
    tokens_per_s: float = 0.0
    eta_s: float | None = None
    elapsed_s: float = 0.0
    last: dict[str, Any] | None = None
    rate_unit: str = "tokens/s"  # "sentences/s" for perplexity probes
    slots: int = 1  # sequences decoded at once (continuous batching when > 1)
    in_flight: int = 0  # sequences being generated now (continuous batching)
    tokens_in_flight: int = 0  # tokens those sequences hold so far
    tokens: int = 0  # tokens (sentences) made this session, in-flight answers included
    loaded_s: float | None = None  # the model's load time, on the first report after it
    #: the engine waits for its server: "waiting 45 s for the server at … — it has answered
    #: 0 of the last 16 requests" (reported from the engine's thread while it is silent)
    waiting: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def last_text(self) -> str:
        """The last stored attempt in words, its attempt number 1-based as everywhere a
        reader sees one: "“is affectionate” (BSRI, female trait) #1 → female"."""
        if not self.last:
            return ""
        what = self.last.get("title") or self.last["item"]
        return f"{what} #{self.last['attempt'] + 1} → {self.last['label']}"

    @property
    def in_flight_text(self) -> str:
        """ "16 sequences in flight (1,204 tokens so far)" — the tokens made this session,
        finished answers included — or "" when none is reported."""
        return self.in_flight_words(max(self.tokens, self.tokens_in_flight))

    def in_flight_words(self, tokens_so_far: int) -> str:
        """`in_flight_text` with the caller's count of the tokens so far (a view keeps it
        from going down between two reports, `RecentRate.tokens`)."""
        if not self.in_flight:
            return ""
        unit = "sequence" if self.in_flight == 1 else "sequences"
        return f"{self.in_flight} {unit} in flight ({tokens_so_far:,} tokens so far)"


#: seconds of progress the speed shown is measured over
RECENT_S = 20.0


class RecentRate:
    """The speed a progress view shows: the work of the last `RECENT_S` seconds per second
    (the session's average, `Progress.tokens_per_s`, until that long has passed), and the
    tokens so far, never going down (a stream may report its answers' tokens a moment
    after they left the in-flight count)."""

    def __init__(self, window_s: float = RECENT_S) -> None:
        self.window_s = window_s
        self._points: list[tuple[float, float]] = []  # (elapsed s, work so far)
        self._run: int | None = None
        self.tokens = 0

    def update(self, p: Progress) -> float:
        """The speed to show after report `p` (work per second)."""
        if p.run_id != self._run:  # another run: start again
            self._run, self._points, self.tokens = p.run_id, [], 0
        self.tokens = max(self.tokens, int(p.tokens), int(p.tokens_in_flight))
        now, work = float(p.elapsed_s), float(max(p.tokens, p.tokens_in_flight))
        if self._points and now < self._points[-1][0]:
            self._points = []
        self._points.append((now, work))
        # the oldest point still inside the window, and the last one before it
        while len(self._points) > 2 and now - self._points[1][0] >= self.window_s:
            self._points.pop(0)
        t0, w0 = self._points[0]
        if now - t0 < self.window_s or now <= t0:
            return p.tokens_per_s
        return max(0.0, work - w0) / (now - t0)


@dataclass
class Tally:
    """What this session of a run did: attempts stored, work produced (tokens, or
    sentences for scoring probes) and seconds the model spent on it."""

    done: int = 0
    work: float = 0.0
    busy_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.work / self.busy_s if self.busy_s > 0 else 0.0


#: answers of the longest allowed length that the expected answer length starts from: they
#: weigh as much as this many measured answers (times the sequences decoded at once: with
#: continuous batching the short answers finish first, and the mean of the first few
#: would promise too little)
PACE_PRIOR_ANSWERS = 2
#: seconds over which a shown ETA follows a change of the raw estimate (exponential
#: smoothing; the estimate moves ~5 % toward a new figure per one-second report)
ETA_SMOOTHING_S = 20.0
#: an ETA more than this factor away from the new raw figure is replaced, not smoothed
ETA_RESET_FACTOR = 2.0
#: busy seconds before a first ETA (the first second is mostly prompt decoding)
ETA_WARMUP_S = 2.0


@dataclass
class Pace:
    """Speed and time left of one run session, from the work done so far.

    The speed is the work (tokens, or sentences for scoring probes) made this session —
    answers still in flight included — per busy second (loading and pauses excluded),
    measured from `measure_from` on: continuous batching starts with every slot's prompt
    at once, seconds in which no answer token is made (a speed counted from there would
    promise several times the real time left; measured: 14 min shown for 4 min real).
    The work left is the attempts left × the expected work of one attempt: at first the
    most an attempt may take (`max_work`, e.g. max_tokens), corrected toward the mean of
    the finished attempts as they finish (`PACE_PRIOR_ANSWERS`), minus what the answers in
    flight already hold. The ETA shown follows the raw figure with exponential smoothing
    (`ETA_SMOOTHING_S`), counting down in between, so that it does not jump from line to
    line; a figure more than `ETA_RESET_FACTOR` off the new raw one is replaced at once."""

    attempts: int  # attempts this session has to make
    max_work: float | None  # work of one attempt at most; None: unknown (mean of the done)
    prior: float = PACE_PRIOR_ANSWERS
    eta_s: float | None = None
    #: continuous batching: no speed is known before the stream's first progress event
    #: (an answer that finishes first says nothing of the tokens the others hold)
    streaming: bool = False
    _at: float | None = None  # busy seconds of the last estimate
    _since: tuple[float, float] | None = None  # (busy seconds, work) the speed counts from

    def measure_from(self, busy_s: float, made: float) -> None:
        """Count the speed from here (the first progress of a stream: its prompts are
        decoded); the first ETA comes `ETA_WARMUP_S` later."""
        self._since = (busy_s, made)

    def update(
        self, busy_s: float, done: int, work: float, in_flight_work: float = 0.0
    ) -> tuple[float, float | None]:
        """(work per second, smoothed seconds left or None while unknown) after `done`
        attempts made `work` and the answers in flight hold `in_flight_work`."""
        made = work + in_flight_work
        if self._since is None and self.streaming:
            if done >= self.attempts:
                self.eta_s, self._at = 0.0, busy_s
            return 0.0, self.eta_s  # measuring: the stream has not reported yet
        since_s, since_made = self._since or (0.0, 0.0)
        window = busy_s - since_s
        if window >= ETA_WARMUP_S:
            rate = max(0.0, made - since_made) / window
        else:  # too short to tell: the whole session's, shown but not used for an ETA
            rate = made / busy_s if busy_s > 0 else 0.0
        if done >= self.attempts:
            self.eta_s, self._at = 0.0, busy_s
            return rate, 0.0
        if rate <= 0 or window < ETA_WARMUP_S:
            return rate, self.eta_s
        if self.max_work is not None and done + self.prior > 0:
            per_attempt = (work + self.prior * self.max_work) / (done + self.prior)
        elif self.max_work is not None:
            per_attempt = self.max_work
        elif done:
            per_attempt = work / done
        else:
            return rate, self.eta_s
        left = max(0.0, per_attempt * (self.attempts - done) - in_flight_work)
        raw = left / rate
        predicted = None
        if self.eta_s is not None and self._at is not None:
            predicted = max(0.0, self.eta_s - max(0.0, busy_s - self._at))
        if predicted is None or not raw / ETA_RESET_FACTOR <= predicted <= raw * ETA_RESET_FACTOR:
            self.eta_s = raw  # first estimate, or the last was far off: no slow decay from it
        else:
            dt = max(0.0, busy_s - self._at)
            self.eta_s = predicted + (1 - math.exp(-dt / ETA_SMOOTHING_S)) * (raw - predicted)
        self._at = busy_s
        return rate, self.eta_s
