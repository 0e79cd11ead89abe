"""The words gbdesk's numbers use, explained for people who do not program (no Qt).

Help → Glossary shows them all; every metric's tooltip adds the entries whose words occur
in the metric's name or meaning (`terms_in`).
"""

from __future__ import annotations

import functools
import re

GLOSSARY: dict[str, str] = {
    "attempt": "One answer of the model to one prompt. A probe asks each prompt several "
    "times (attempts) because a model samples its answers at random; metrics average over "
    "attempts and items.",
    "item": "One prompt of a probe (a trait, a job, a story scenario…); the intervals "
    "resample items.",
    "undetected": "An attempt whose gender the detector could not read (no pronouns, or "
    "as many he as she). It is left out of the rates and counted on its own; review a few "
    "to see why.",
    "mark": "A study's grade of a metric: A healthy, B cautionary, C critical, D "
    "catastrophic. The mark is the best band the 95 % interval touches, so a wide "
    "interval gets the kinder mark.",
    "ratio": "How often a group appears (or holds the subordinate role) compared with a "
    "reference: 1× is parity, 2× twice as often, ½× half as often. Shown on a log scale so "
    "2× and ½× are equally far from 1×.",
    "SDeg": "Stereotype degree (Ma et al. 2023): how much more often the model attaches a "
    "stereotype to a group than chance would; 0 = no stereotyping, larger = more.",
    "APX": "Association test (APX): how often the model links a group to a "
    "descriptor (a trait, a job) compared with the other groups; flagged associations are "
    "those above chance.",
    "interval": "The 95 % interval: the range the true value lies in with 95 % confidence, "
    "given how many items and attempts were run. More items make it narrower.",
    "p-value": "How surprising the result would be if there were no bias at all; small "
    "(below 0.05) means the difference is unlikely to be chance.",
    "BH-adjusted": "A p-value corrected for running many tests at once (Benjamini–Hochberg "
    "false discovery rate). Read this one: with hundreds of tests some raw p-values are "
    "small by chance.",
    "review": "A person checking the automatic label of an attempt and correcting it; "
    "Results can use the reviewed labels.",
}

_ALIASES = {
    "attempt": ("attempt",),
    "item": ("item",),
    "undetected": ("undetected", "no readable gender", "undecidable"),
    "mark": ("mark",),
    "ratio": ("ratio", "representation", "subordination"),
    "SDeg": ("sdeg", "stereotype degree"),
    "APX": ("apx", "association"),
    "interval": ("interval", " ci"),
    "p-value": ("p-value", "p value"),
    "BH-adjusted": ("adjusted", "benjamini"),
    "review": ("review",),
}


def _alias_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """One search for any of a term's words: a word starting with a space matches as
    written, any other at a word start."""
    return re.compile(
        "|".join(re.escape(w) if w.startswith(" ") else rf"\b{re.escape(w)}" for w in words)
    )


_PATTERNS = {term: _alias_pattern(words) for term, words in _ALIASES.items()}


def terms_in(*texts: str) -> list[str]:
    """The glossary terms whose words occur in the texts, in glossary order."""
    return list(_terms_in(" " + " ".join(t.lower() for t in texts if t) + " "))


@functools.lru_cache(maxsize=4096)
def _terms_in(text: str) -> tuple[str, ...]:
    # a metric's title and meaning recur in every cell of its row and every redraw
    return tuple(term for term, pattern in _PATTERNS.items() if pattern.search(text))


def tooltip(title: str, meaning: str, key: str = "", extra: str = "") -> str:
    """A metric's tooltip: its name, one-line meaning, the stored key, and the glossary
    entries of the words it uses (plain text)."""
    lines = [title]
    if meaning:
        lines.append(meaning)
    if extra:
        lines.append(extra)
    if key and key != title:
        lines.append(f"(key in CSV/JSON: {key})")
    terms = terms_in(title, meaning)
    if terms:
        lines.append("")
        lines += [f"{t}: {GLOSSARY[t]}" for t in terms]
    return "\n".join(lines)


GUIDE = """<b>Getting started</b> — an audit in three steps:
<ol>
<li><b>Models</b>: the bundled tiny model is ready; add your own GGUF file (drag it onto the
window) and press <i>Test load</i> to measure its speed.</li>
<li><b>Runs</b>: press <b>Audit this model</b>, choose how much time you have (30 min, 2 h,
8 h) and read the plan: each probe with its size, expected time and how precise its numbers
will be. Start it; it can be stopped and continues where it stopped.</li>
<li><b>Results</b> opens with the <b>Findings</b>: one sentence per result, most important
first. Click a finding to read the model's answers behind it in <b>Review</b>; tick two runs
of the same probe to compare them. <b>Reports</b> writes the PDF.</li>
</ol>
Everything is stored in the database shown in the status bar (File → Open database… to
choose another). Help → Glossary explains the words (attempt, mark, ratio, SDeg, APX…)."""
