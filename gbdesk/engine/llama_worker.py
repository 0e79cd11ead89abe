"""The llama.cpp worker process.

Started by `LlamaCppBackend` as `python -m gbdesk _worker` (or `gbdesk _worker` in a
frozen build). It speaks JSON lines: requests on stdin, events on a private copy of
stdout; the real fd 1 is pointed at stderr so that nothing llama.cpp prints can
corrupt the protocol. A segfault or out-of-memory kill here ends only this
process; the caller sees the pipe close and reports it.

Protocol (one JSON object per line):
  → {"op": "load", "model_path": …, "n_ctx": …, "n_threads": …, "n_batch": …,
     "prompt_mode": "auto"|"chat"|"completion", "scoring": bool, "score_batch": n}
  ← {"event": "ready", "info": {...}}   or   {"event": "error", "message": …}
  → {"op": "generate", "id": n, "request": {...GenerationRequest...}, "stream": bool}
  ← {"event": "token", "id": n, "text": …}*  then  {"event": "result", "id": n, "result": {...}}
  → {"op": "generate_batch", "id": n, "requests": [{...GenerationRequest...}, ...]}
  ← {"event": "result", "id": n, "result": {"results": [{...as for generate...}, ...]}}
  → {"op": "score", "id": n, "texts": [str, ...]}
  ← {"event": "result", "id": n,
     "result": {"scores": [[n_tokens, logprob_sum], ...], "settings": {...}}}
  → {"op": "shutdown"}

Scoring (`gbdesk.engine.scoring.BatchScorer`) runs in a second llama.cpp context on the
same loaded model (weights shared; its own small KV cache, flash attention, at most
`score_batch` tokens per decode call, the load's n_threads). The context is created on
the first "score" request, or at load when "scoring" is true, in which case the load
info carries its settings under "scoring". "settings" in a score result are the same
settings: the numbers depend on them. Both load keys are optional (defaults: false,
512). Generation never touches the scoring context, and vice versa.

Continuous batching (`gbdesk.engine.continuous.ContinuousBatcher`, a third context
created on first use and kept between streams):
  → {"op": "stream_open", "id": n, "slots": k, "watch": bool, "min_shared": m?}
  ← {"event": "stream_open", "id": n, "info": {"slots": k, "settings": {...}}}
  → {"op": "stream_add", "id": n, "items": [[key, {...GenerationRequest...}], ...]}  (any time)
  ← {"event": "token", "id": n, "key": key, "text": …}   (with "watch": one sequence at a
     time: the most recently admitted once the previous watched one finished)
  ← {"event": "item", "id": n, "key": key, "result": {...as for generate...}}  (as each
     request finishes) or {"event": "item_error", "id": n, "key": key, "message": …}
  → {"op": "stream_close", "id": n}   no more requests; the stream ends when they are done
  → {"op": "stream_drain", "id": n}   admit nothing more: queued requests are dropped,
                                      live sequences finish and are delivered
  → {"op": "stream_abort", "id": n}   drop queued and live requests at once
  ← {"event": "stream_end", "id": n, "dropped": [key, ...], "stats": {...}}
  ← {"event": "error", "id": n, "message": …}   llama_decode failed; the stream is gone
Between two decode steps the worker reads every message waiting on stdin (a reader
thread queues them), so drain and new requests take effect within one step. One stream
at a time; "generate" and "score" still work while a stream is open (they run between
its steps). "generate_batch" runs its requests through the same engine with one slot
per request and answers with every result at once, in request order: its texts are the
stream's texts (they depend only on each request and seed, not on the batch) but differ
from "generate"'s (other arithmetic settings; see `gbdesk.engine.continuous`).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
import time
import traceback
from typing import Any, TextIO

#: The worker's environment: the id of the process that started it (`llama_backend.
#: start_worker`), and "1" when the kernel may kill it with that process (Linux).
PARENT_ENV = "GBDESK_WORKER_PARENT"
PDEATHSIG_ENV = "GBDESK_WORKER_PDEATHSIG"
#: How often the worker checks that the process that started it is still there.
PARENT_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> None:
    """Linux: have the kernel SIGKILL this process when its parent (thread) ends."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    except (OSError, AttributeError) as exc:  # the parent watch below still works
        print(f"gbdesk worker: {exc}", file=sys.stderr)


def _parent_alive_check(parent: int) -> Any:
    """A function telling whether the process `parent` is still this worker's parent:
    POSIX re-parents an orphan (its parent id changes); elsewhere the process must
    still exist with the start time it had (ids are reused)."""
    import psutil

    if os.name == "posix":
        return lambda: os.getppid() == parent
    try:
        started = psutil.Process(parent).create_time()
    except psutil.Error:
        return lambda: False

    def alive() -> bool:
        try:
            return psutil.Process(parent).create_time() == started
        except psutil.Error:
            return False

    return alive


def watch_parent(input_closed: threading.Event | None = None) -> None:
    """End this worker (`os._exit`) as soon as the process that started it is gone, even
    while the main thread is inside llama.cpp: a thread checks every `PARENT_POLL_S`, and
    at once when the parent's end of stdin closes (`input_closed`). On Linux, when the
    parent allows it, the kernel kills the worker with its parent as well
    (PR_SET_PDEATHSIG). Without `PARENT_ENV` (started by hand) nothing is watched."""
    raw = os.environ.get(PARENT_ENV, "")
    if not raw.isdigit():
        return
    parent = int(raw)
    if sys.platform.startswith("linux") and os.environ.get(PDEATHSIG_ENV) == "1":
        _die_with_parent()
    alive = _parent_alive_check(parent)
    if not alive():  # it died before we could ask to die with it
        os._exit(3)
    closed = input_closed or threading.Event()

    def watch() -> None:
        while True:
            if closed.is_set():  # looked already: the main loop ends on its own
                time.sleep(PARENT_POLL_S)
            else:
                closed.wait(PARENT_POLL_S)
            if not alive():
                print(f"gbdesk worker: process {parent} is gone; ending", file=sys.stderr)
                os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _open_protocol_stream() -> TextIO:
    proto_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed to fd 1 from now on lands on stderr
    sys.stdout = sys.stderr
    return os.fdopen(proto_fd, "w", encoding="utf-8", buffering=1)


PROMPT_CHUNK = 32


class LlamaGenerator:
    """Generation on a loaded `llama_cpp.Llama`, mirroring `create_chat_completion`.

    The loop drives `Llama.generate` directly so that token counts, finish reasons
    and streaming are exact.

    Reproducibility: llama-cpp-python reuses the KV cache of the previous call for a
    shared prompt prefix, so the same prompt and seed can give different texts
    depending on what ran before (the re-evaluated suffix is a batch of another size,
    and CPU kernels round differently per batch shape). gbdesk instead evaluates every
    prompt in fixed chunks of `PROMPT_CHUNK` tokens at fixed positions and reuses only
    whole chunks the previous prompt shares; the chunk holding the last prompt token
    is always evaluated. Every decode call is then the same as in a fresh evaluation,
    so an attempt's text depends only on its prompt, seed and settings — never on what
    was generated before it — while prompts sharing a template prefix still skip most
    of the prompt work.
    """

    def __init__(self, llm: Any, prompt_mode: str):
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llm = llm
        self.llama_cpp = llama_cpp
        template = llm.metadata.get("tokenizer.chat_template")
        if prompt_mode == "auto":
            prompt_mode = "chat" if template else "completion"
        if prompt_mode == "chat" and not template:
            raise ValueError("this model has no chat template; use completion mode")
        self.prompt_mode = prompt_mode
        self.formatter = None
        eos_id = llm.token_eos()
        self.eos_text = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        if prompt_mode == "chat":
            bos_id = llm.token_bos()
            bos_text = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
            self.formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=self.eos_text,
                bos_token=bos_text,
                stop_token_ids=[eos_id],
            )

    def prompt_tokens(self, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
        from gbdesk.engine.base import COMPLETION_STOP, completion_frame

        if self.formatter is not None:
            formatted = self.formatter(messages=messages)
            tokens = self.llm.tokenize(
                formatted.prompt.encode("utf-8"),
                add_bos=not formatted.added_special,
                special=True,
            )
            stops = [formatted.stop] if isinstance(formatted.stop, str) else list(formatted.stop)
            return tokens, [s for s in stops if s]
        prompt = completion_frame(messages)
        return self.llm.tokenize(prompt.encode("utf-8"), special=True), list(COMPLETION_STOP)

    def generate(self, request: dict[str, Any], emit=None) -> dict[str, Any]:
        llm = self.llm
        tokens, stops = self.prompt_tokens(request["messages"])
        n_ctx = llm.n_ctx()
        if len(tokens) >= n_ctx:
            raise ValueError(
                f"the prompt has {len(tokens)} tokens but the context holds {n_ctx}; "
                "raise n_ctx or shorten the prompt"
            )
        max_tokens = int(request["max_tokens"])
        max_tokens = min(max_tokens, n_ctx - len(tokens))
        grammar = None
        if request.get("json_schema"):
            from llama_cpp.llama_grammar import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(
                json.dumps(request["json_schema"]), verbose=False
            )
        stop_bytes = [s.encode("utf-8") for s in stops]
        self._eval_prompt(tokens)
        llm.set_seed(int(request["seed"]))
        started = time.perf_counter()
        completion: list[int] = []
        finish_reason = "length"
        text_bytes = b""
        streamed = 0  # characters already emitted
        if max_tokens > 0:
            for token in llm.generate(
                tokens,
                top_k=int(request.get("top_k", 0)),
                top_p=float(request["top_p"]),
                min_p=float(request.get("min_p", 0.0)),
                temp=float(request["temperature"]),
                repeat_penalty=1.0,
                grammar=grammar,
            ):
                if self.llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    finish_reason = "stop"
                    break
                completion.append(token)
                text_bytes = llm.detokenize(completion, prev_tokens=tokens)
                hit = next((s for s in stop_bytes if s in text_bytes), None)
                if hit is not None:
                    text_bytes = text_bytes[: text_bytes.index(hit)]
                    finish_reason = "stop"
                    break
                if emit is not None:
                    streamed = self._emit_delta(text_bytes, streamed, stop_bytes, emit)
                if len(completion) >= max_tokens:
                    break
        latency = time.perf_counter() - started
        text = text_bytes.decode("utf-8", errors="ignore")
        if emit is not None and len(text) > streamed:
            emit(text[streamed:])
        return {
            "text": text,
            "tokens_in": len(tokens),
            "tokens_out": len(completion),
            "latency_s": latency,
            "finish_reason": finish_reason,
            "prompt_mode": self.prompt_mode,
        }

    def _eval_prompt(self, tokens: list[int]) -> None:
        """Evaluate the prompt in fixed chunks, reusing whole cached chunks."""
        import numpy as np

        llm = self.llm
        cached = np.asarray(llm.input_ids[: min(llm.n_tokens, len(tokens))])
        differs = np.nonzero(cached != np.asarray(tokens[: len(cached)]))[0]
        common = int(differs[0]) if len(differs) else len(cached)
        last_chunk = (len(tokens) - 1) // PROMPT_CHUNK * PROMPT_CHUNK
        reuse = min(common // PROMPT_CHUNK * PROMPT_CHUNK, last_chunk)
        llm.n_tokens = reuse  # eval() drops the KV cells from here on
        for start in range(reuse, len(tokens), PROMPT_CHUNK):
            llm.eval(tokens[start : start + PROMPT_CHUNK])
        self.reused_tokens = reuse

    @staticmethod
    def _emit_delta(text_bytes: bytes, streamed: int, stop_bytes: list[bytes], emit) -> int:
        """Send the newly completed characters, holding back a possible stop prefix."""
        try:
            text = text_bytes.decode("utf-8")
        except UnicodeDecodeError:
            return streamed  # a multi-byte character is still incomplete
        hold = 0
        for stop in stop_bytes:
            stop_text = stop.decode("utf-8", errors="ignore")
            for k in range(min(len(stop_text), len(text)), 0, -1):
                if text.endswith(stop_text[:k]):
                    hold = max(hold, k)
                    break
        safe = len(text) - hold
        if safe > streamed:
            emit(text[streamed:safe])
            return safe
        return streamed


class Scorer:
    """The worker's lazily created `BatchScorer` for the loaded model."""

    def __init__(self, llm: Any, n_threads: int, n_batch: int):
        self.llm = llm
        self.n_threads = n_threads
        self.n_batch = n_batch
        self._scorer: Any = None

    def get(self) -> Any:
        if self._scorer is None:
            from gbdesk.engine.scoring import BatchScorer

            self._scorer = BatchScorer(self.llm, n_threads=self.n_threads, n_batch=self.n_batch)
        return self._scorer

    def score(self, texts: list[str]) -> dict[str, Any]:
        if not isinstance(texts, list):
            raise ValueError("'texts' must be a list of strings")
        scorer = self.get()
        scores = scorer.score(texts)
        return {"scores": [[n, lp] for n, lp in scores], "settings": scorer.settings()}

    def close(self) -> None:
        if self._scorer is not None:
            self._scorer.close()
            self._scorer = None


def _load(message: dict[str, Any]) -> tuple[Any, LlamaGenerator, dict[str, Any]]:
    import llama_cpp
    import llama_cpp._logger

    from gbdesk.engine.llama_compat import load_llama

    started = time.perf_counter()
    llm = load_llama(
        message["model_path"],
        n_ctx=int(message["n_ctx"]),
        n_threads=int(message["n_threads"]),
        n_threads_batch=int(message["n_threads"]),
        n_batch=int(message.get("n_batch", 512)),
        seed=int(message.get("seed", 0)),
        # verbose while loading: llama-cpp-python otherwise silences stderr during the
        # load, and with it the reason a bad file fails (read by the backend on error).
        verbose=True,
    )
    llm.verbose = False
    llama_cpp._logger.set_verbose(False)
    generator = LlamaGenerator(llm, message.get("prompt_mode", "auto"))
    info = {
        "prompt_mode": generator.prompt_mode,
        "load_time_s": time.perf_counter() - started,
        "llama_cpp_python": llama_cpp.__version__,
        "n_ctx": llm.n_ctx(),
        "n_threads": int(message["n_threads"]),
        "chat_template": llm.metadata.get("tokenizer.chat_template"),
        "model_name": llm.metadata.get("general.name"),
    }
    with contextlib.suppress(Exception):
        info["llama_cpp_system"] = llama_cpp.llama_print_system_info().decode(errors="replace")
    return llm, generator, info


class _Inbox:
    """Protocol lines from stdin, read by a thread so that the main loop can poll
    between decode steps (portable: no select() on pipes)."""

    def __init__(self, stream: TextIO):
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.closed = threading.Event()  # set at end of input (`watch_parent` looks then)
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: TextIO) -> None:
        for line in stream:
            if line.strip():
                self._queue.put(line)
        self._queue.put(None)
        self.closed.set()

    def get(self, block: bool) -> str | bool | None:
        """The next line; None at end of input; False if `block` is off and none waits."""
        try:
            return self._queue.get(block=block)
        except queue.Empty:
            return False


class _StreamSession:
    """The open continuous-batching stream: its id, what happens when it runs dry."""

    def __init__(self, stream_id: Any, batcher: Any):
        self.id = stream_id
        self.batcher = batcher
        self.closing = False  # no more requests will come: end when the work is done
        self.dropped: list[Any] = []
        self.started = time.perf_counter()


def main() -> int:
    out = _open_protocol_stream()

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")

    inbox = _Inbox(sys.stdin)
    watch_parent(inbox.closed)
    generator = None
    scorer: Scorer | None = None
    batcher: Any = None  # the ContinuousBatcher, kept between streams (its context)
    session: _StreamSession | None = None
    n_threads = 1

    def get_batcher(slots: int, watch: bool = False, **kw: Any) -> Any:
        nonlocal batcher
        from gbdesk.engine.continuous import ContinuousBatcher

        if batcher is not None and batcher.slots == batcher.clamp_slots(slots) and not kw:
            batcher.reset(watch=watch)
            return batcher
        if batcher is not None:
            batcher.close()
            batcher = None
        batcher = ContinuousBatcher(generator, slots=slots, n_threads=n_threads, watch=watch, **kw)
        return batcher

    def end_session(reason: str | None = None) -> None:
        nonlocal session
        assert session is not None
        stats = dict(session.batcher.stats)
        stats["wall_s"] = time.perf_counter() - session.started
        message = {"event": "stream_end", "id": session.id, "dropped": session.dropped}
        message["stats"] = stats
        if reason:
            message["reason"] = reason
        send(message)
        session = None

    def handle(message: dict[str, Any]) -> int | None:
        nonlocal generator, scorer, n_threads, session, batcher
        op = message.get("op")
        if op == "load":
            from gbdesk.engine.scoring import DEFAULT_N_BATCH

            llm, generator, info = _load(message)
            n_threads = int(message["n_threads"])
            score_batch = int(message.get("score_batch", DEFAULT_N_BATCH))
            scorer = Scorer(llm, int(message["n_threads"]), score_batch)
            if message.get("scoring"):
                info["scoring"] = scorer.get().settings()
            send({"event": "ready", "info": info})
        elif op == "generate":
            if generator is None:
                raise RuntimeError("no model loaded")
            request_id = message["id"]
            emit = None
            if message.get("stream"):

                def emit(text: str, request_id=request_id) -> None:
                    send({"event": "token", "id": request_id, "text": text})

            result = generator.generate(message["request"], emit)
            send({"event": "result", "id": request_id, "result": result})
        elif op == "generate_batch":
            if generator is None:
                raise RuntimeError("no model loaded")
            if session is not None:
                raise RuntimeError("a generation stream is open")
            requests = message.get("requests")
            if not isinstance(requests, list):
                raise ValueError("'requests' must be a list of requests")
            results = get_batcher(max(1, len(requests))).generate_all(requests)
            send({"event": "result", "id": message["id"], "result": {"results": results}})
        elif op == "stream_open":
            if generator is None:
                raise RuntimeError("no model loaded")
            if session is not None:
                raise RuntimeError("a generation stream is already open")
            extra = {}
            if message.get("min_shared") is not None:
                extra["min_shared"] = int(message["min_shared"])
            b = get_batcher(
                int(message.get("slots") or 1), watch=bool(message.get("watch")), **extra
            )
            session = _StreamSession(message["id"], b)
            send({"event": "stream_open", "id": message["id"], "info": b.info()})
        elif op in ("stream_add", "stream_drain", "stream_close", "stream_abort"):
            if session is None or session.id != message.get("id"):
                raise RuntimeError(f"no open generation stream with id {message.get('id')!r}")
            if op == "stream_add":
                for key, request in message.get("items") or []:
                    session.batcher.add(key, request)
            elif op == "stream_drain":
                session.dropped.extend(session.batcher.drain())
                session.closing = True
            elif op == "stream_close":
                session.closing = True
            else:
                session.dropped.extend(session.batcher.abort())
                session.closing = True
        elif op == "score":
            if scorer is None:
                raise RuntimeError("no model loaded")
            result = scorer.score(message.get("texts"))
            send({"event": "result", "id": message["id"], "result": result})
        elif op == "shutdown":
            if scorer is not None:
                scorer.close()
            if batcher is not None:
                batcher.close()
            return 0
        else:
            raise ValueError(f"unknown op {op!r}")
        return None

    while True:
        busy = session is not None and session.batcher.has_work
        line = inbox.get(block=not busy)
        while line:  # every message that is waiting, before the next decode step
            message = json.loads(line)
            try:
                code = handle(message)
            except Exception as exc:  # reported to the caller; the worker stays usable
                traceback.print_exc(file=sys.stderr)
                send({"event": "error", "id": message.get("id"), "message": str(exc) or repr(exc)})
                if message.get("op") == "load":
                    return 1
                code = None
            if code is not None:
                return code
            line = inbox.get(block=False)
        if line is None:  # the parent closed our stdin
            return 0
        if session is None:
            continue
        if session.batcher.has_work:
            try:
                events = session.batcher.step()
            except Exception as exc:  # llama_decode failed: the stream cannot go on
                traceback.print_exc(file=sys.stderr)
                send({"event": "error", "id": session.id, "message": str(exc) or repr(exc)})
                batcher.close()
                batcher = None
                session = None
                continue
            for event in events:
                kind, key, payload = event
                if kind == "token":
                    send({"event": "token", "id": session.id, "key": key, "text": payload})
                elif kind == "item":
                    send({"event": "item", "id": session.id, "key": key, "result": payload})
                else:
                    send({"event": "item_error", "id": session.id, "key": key, "message": payload})
        if session.closing and not session.batcher.has_work:
            end_session()


if __name__ == "__main__":
    raise SystemExit(main())
