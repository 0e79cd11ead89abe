"""The Runs pane's launcher: planning and starting runs (one per wording), resuming,
labelling passes, pause and cancel, the progress line and bar, the streamed text, and what
other processes run on the same database."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPushButton,
)

from gbdesk.contract import get_probe
from gbdesk.contract.running import wording_kwargs
from gbdesk.support.guards import one_line
from gbdesk.ui.tasks import LabelThread, RunThread
from gbdesk.ui.theme import duration
from gbdesk.workflows.runs import (
    NEW_TEXT,
    plan_run,
    resolve_model,
)

#: how often the Runs pane looks for runs and audits of other processes (their jobs beat
#: every 15 s, `gbdesk.store.jobs`)
ELSEWHERE_MS = 5000


def elsewhere(store) -> list[dict[str, Any]]:
    """What other processes do on this database now (a command-line run or audit), from
    their jobs' heartbeat: {"text": the job in words with its run's progress, "run_id",
    "done", "total"} each, oldest first."""
    from gbdesk.store.jobs import live_jobs

    out = []
    for job in live_jobs(store, others_only=True):
        item: dict[str, Any] = {"text": job.describe(command_chars=40), "run_id": job.run_id}
        if job.run_id is not None:
            try:
                run = store.get_run(job.run_id)
            except Exception:  # the run went meanwhile: the job's words are enough
                run = None
            if run is not None:
                item.update(done=run["attempts_done"], total=run["attempts_total"])
                try:
                    title = get_probe(run["probe"]).card.title
                except Exception:  # a study no longer installed: its key
                    title = run["probe"]
                item["text"] += (
                    f" — run {run['id']} ({title}): {run['attempts_done']:,} of "
                    f"{run['attempts_total']:,} generations"
                )
        out.append(item)
    return out


class RunLauncher:
    """Starting, following and stopping runs (a part of `RunsPane`)."""

    def _build_controls(self) -> QHBoxLayout:
        """Start, pause and cancel."""
        self.start_button = QPushButton("&Start run")
        self.start_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.start_button.setToolTip("Start (Ctrl+Enter)")
        self.pause_button = QPushButton("&Pause")
        self.pause_button.setToolTip("Pause after the current generation (Ctrl+P)")
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setToolTip("Stop now; the run stays resumable (Ctrl+.)")
        controls = QHBoxLayout()
        for b in (self.start_button, self.pause_button, self.cancel_button):
            controls.addWidget(b)
        controls.addStretch(1)
        return controls

    def start(self) -> None:
        if self.ctx.running:
            self.banner.warn("A run is already in progress.")
            return
        m = self.selected_model()
        if m is None:
            self.banner.error("No model available — add one in Models.")
            return
        if not self._model_allowed():
            self.banner.error(
                f"{m['name']} may not fit in memory; tick “Load anyway” in "
                "Models if you want to try."
            )
            return
        probe = self.probe_name()
        params = self.parameters()
        empty = [k for k, v in params["options"].items() if not v]
        if empty:
            titles = {o.key: o.title for o in get_probe(probe).options}
            self.banner.error(
                f"Choose at least one value for {', '.join(titles[k] for k in empty)}."
            )
            return
        self.banner.info("Planning the run…")
        self.start_button.setEnabled(False)

        wordings = self.chosen_wordings()

        def plan(store):
            model = resolve_model(store, m["path"])
            return [
                plan_run(
                    store,
                    probe,
                    model,
                    attempts=params["attempts"],
                    seed=params["seed"],
                    temperature=params["temperature"],
                    max_tokens=params["max_tokens"],
                    batch_size=params["batch_size"],
                    template=None if w else params["template"],
                    limit=params["limit"],
                    sample=params["sample"],
                    **params["options"],
                    **wording_kwargs(w),
                )
                for w in wordings
            ]

        def failed(message: str) -> None:
            self.banner.error(message)
            self._set_running(False)

        self.ctx.tasks.with_store(self.ctx.db_path, plan, on_done=self._launch_all, on_error=failed)

    def _launch_all(self, run_ids: list[int]) -> None:
        """The first run now, the others (other wordings) one after another."""
        self.queued = list(run_ids[1:])
        if self.queued:
            self.banner.info(
                f"Runs {', '.join(map(str, run_ids))}: one per wording, one after another."
            )
        self._launch(run_ids[0])

    def resume_selected(self) -> None:
        run = self.selected_history()
        if run is None:
            return
        if run["status"] == "done":
            self.banner.info(f"Run {run['id']} is already complete.")
            return
        if run["source"] != "generated":
            self.banner.info(f"Run {run['id']} was imported; there is nothing to generate.")
            return
        self._launch(run["id"])

    def _launch(self, run_id: int) -> None:
        if self.ctx.running:
            return
        self.current_run = run_id
        self._stored_shown = 0
        self.live.clear()
        self.live_caption.clear()
        m = self.selected_model() or {}
        self.banner.info(
            f"Run {run_id}: connecting to the endpoint…"
            if m.get("endpoint")
            else f"Run {run_id}: loading the model in a worker process…"
        )
        thread = RunThread(self.ctx.db_path, run_id, self.ctx.backend_factory, self)
        thread.progress.connect(self._on_progress)
        thread.token.connect(self._on_token)
        thread.completed.connect(self._on_completed)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_finished)
        self.thread = thread
        self.ctx.run_thread = thread
        self._set_running(True)
        thread.start()
        self.ctx.runs_changed.emit()

    def label_selected(self) -> None:
        """Run the selected run's labelling pass with the selected model as labeler."""
        run, m = self.selected_history(), self.selected_model()
        if run is None or m is None or self.ctx.running or self.label_pass is None:
            return
        if not self._model_allowed():
            self.banner.error(f"{m['name']} may not fit in memory; tick “Load anyway” in Models.")
            return
        factory = self.ctx.backend_factory
        thread = LabelThread(
            self.ctx.db_path,
            run["id"],
            m["path"],
            (lambda model: factory(model, {})) if factory else None,
            self,
            pass_name=self.label_pass,
        )
        thread.progress.connect(self._on_label_progress)
        thread.completed.connect(self._on_labelled)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_finished)
        self.current_run = run["id"]
        self.thread = thread
        self.ctx.run_thread = thread
        self.banner.info(
            f"Run {run['id']}: labelling with {m['name']} (loading it in a worker process)…"
        )
        self._set_running(True)
        thread.start()

    def _on_label_progress(self, p) -> None:
        self._set_bar(p.done, p.total)
        eta = f" · about {duration(p.eta_s)} left" if p.eta_s is not None else ""
        self.progress_label.setText(
            f"Run {p.run_id}: labelled {p.done:,} / {p.total:,} attempts{eta}"
        )

    def _on_labelled(self, result: dict[str, Any]) -> None:
        run_id = result["run_id"]
        if result["status"] == "done":
            self.banner.ok(
                f"Run {run_id}: {result['labelled']:,} {result.get('unit', 'attempts')} labelled "
                f"by {result['source']}"
                + (
                    f" ({result['fallbacks']:,} unreadable answers fell back to the built-in "
                    "labeller)"
                    if result.get("fallbacks")
                    else ""
                )
                + ". Its metrics now use these labels."
            )
        else:
            self.banner.info(
                f"Run {run_id}: labelling {result['status']} after {result['labelled']:,} "
                f"{result.get('unit', 'attempts')}; press the button again to continue where it "
                "stopped."
            )
        self.ctx.labels_changed.emit(run_id)

    def toggle_pause(self) -> None:
        if not self.ctx.running or self.thread is None:
            return
        control = self.thread.control
        if control.paused:
            control.resume()
            self.pause_button.setText("&Pause")
            self.banner.info(f"Run {self.current_run} resumed.")
        else:
            control.pause()
            self.pause_button.setText("&Resume")
            self.banner.info(f"Run {self.current_run} will pause after the current generation.")

    def cancel(self) -> None:
        if self.ctx.running and self.thread is not None:
            self.thread.control.cancel(now=True)
            self.banner.info(f"Cancelling run {self.current_run}…")

    def _on_progress(self, p) -> None:
        self._set_bar(p.done, p.total)
        if p.waiting:  # an endpoint is silent: said until its next answer
            self.progress_label.setText(f"Run {p.run_id}: {p.waiting}")
            return
        if p.status == "loading":
            self.progress_label.setText(f"Run {p.run_id}: loading the model…")
            return
        if p.loaded_s is not None:  # loaded: generating from now on
            at_once = f", {p.slots} generations at once" if p.slots > 1 else ""
            self.banner.info(
                f"Run {p.run_id} is running: the model loaded in {p.loaded_s:.1f} s{at_once}."
            )
        parts = [f"Run {p.run_id}: {p.done:,} / {p.total:,} generations"]
        speed = self._rate.update(p)  # the last seconds' speed; tokens so far never drop
        if p.in_flight:
            parts.append(p.in_flight_words(self._rate.tokens))
        if speed:
            rate = f"{speed:.1f}" if speed < 10 else f"{speed:.0f}"
            parts.append(f"{rate} {p.rate_unit}")
        if p.status == "running":
            left = "measuring the speed" if p.eta_s is None else f"about {duration(p.eta_s)} left"
            parts.append(left)
        if p.status != "running":
            parts.append(p.status)
        self.progress_label.setText(" · ".join(parts))
        stored = p.session_done != self._stored_shown  # not an in-flight report
        self._stored_shown = p.session_done
        if p.last and stored:
            at_once = f" {p.slots} generations at once; the newest:" if p.slots > 1 else ""
            what = p.last.get("title") or p.last["item"]
            self.live_caption.setText(
                f"Last: {what} attempt {p.last['attempt'] + 1} → detected "
                f"{p.last['label']} ({p.last['tokens_out']} tokens)."
                + (at_once or " Next generation:")
            )
            if p.slots <= 1:  # batched: the streamed text is another sequence's
                self.live.clear()
        if p.status == "paused":
            self.banner.info(f"Run {p.run_id} is paused. Press Resume (Ctrl+P) to continue.")
        if stored:
            self.ctx.answers_stored(p.run_id)

    def _on_token(self, text: str) -> None:
        if text.startswith(NEW_TEXT):  # continuous batching: another sequence's text
            self.live.clear()
            text = text[len(NEW_TEXT) :]
        self.live.moveCursor(self.live.textCursor().MoveOperation.End)
        self.live.insertPlainText(text)

    def _on_completed(self, outcome) -> None:
        if outcome.status != "done":
            self.queued = []  # paused or cancelled: the other wordings wait for Start
        if outcome.status == "done":
            self.banner.ok(
                f"Run {outcome.run_id} is complete: {outcome.attempts_done:,} "
                "generations. Its metrics are in Results."
            )
        else:
            self.banner.info(
                f"Run {outcome.run_id} {outcome.status} after "
                f"{outcome.attempts_done:,} of {outcome.attempts_total:,} "
                "generations; select it in the history and Resume to continue."
            )
        self.ctx.labels_changed.emit(outcome.run_id)

    def _on_failed(self, message: str, resumable: bool) -> None:
        text = message
        if resumable and "resume" not in message.lower():
            text += " The run is saved; select it below and press Resume to continue."
        self.banner.error(text)

    def _on_thread_finished(self) -> None:
        self.ctx.run_thread = None
        self.thread = None
        self.pause_button.setText("&Pause")
        self._set_running(False)
        self.ctx.runs_changed.emit()
        if self.queued:  # the next wording's run
            self._launch(self.queued.pop(0))

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running and self.selected_model() is not None)
        self.pause_button.setEnabled(running)
        self.cancel_button.setEnabled(running)
        self._history_selection()

    # -- runs and audits of other processes ------------------------------------------------
    def look_elsewhere(self) -> None:
        """Ask (off the UI thread) what other processes run on this database."""
        if self.ctx.running:
            return  # this window's own run fills the progress line
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            elsewhere,
            on_done=self._show_elsewhere,
            on_error=lambda message: None,  # the next look tries again
            key="runs.elsewhere",
        )

    def _show_elsewhere(self, jobs: list[dict[str, Any]]) -> None:
        """The progress line and bar of an idle window: another process's run or audit
        (from its heartbeat), else "No run in progress."."""
        self.elsewhere = jobs
        if self.ctx.running:
            return
        if not jobs:
            # the bar keeps this window's last run (its 100 %) until something else runs
            if self._elsewhere_shown or self.current_run is None:
                self.progress_label.setText("No run in progress.")
                self._idle_bar()
            self._elsewhere_shown = False
            return
        self._elsewhere_shown = True
        # the command cut, the process and the run's progress kept; the whole of them: gbdesk jobs
        shown = [one_line(j["text"], 260) for j in jobs[:2]]
        more = f"\n… and {len(jobs) - 2} more (gbdesk jobs lists them)" if len(jobs) > 2 else ""
        self.progress_label.setText(
            "In progress in another process (from its heartbeat):\n" + "\n".join(shown) + more
        )
        with_run = [j for j in jobs if j.get("total")]
        if with_run:
            self._set_bar(with_run[-1]["done"], with_run[-1]["total"])

    def _set_bar(self, done: int, total: int) -> None:
        """The bar at `done` of `total`, its figures with thousands separators."""
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        share = done / total if total else 0.0
        self.progress.setFormat(f"{done:,} / {total:,} ({share:.0%})")

    def _idle_bar(self) -> None:
        """No run: an empty bar without figures (not "0 / 1 (0%)")."""
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("")
