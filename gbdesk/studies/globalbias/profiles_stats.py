"""Character-profile analysis of the GlobalBias study (Siddique, Turner & Espinosa-Anke 2024).

The study asks a model for a character profile of a person with a given first name
(400 names = 20 ethnicities × 2 genders × 10 names, 3 runs each) and then asks how well
the *profile* gives away the name's group. Everything here follows the released
notebook ``code/10 generation_results_analysis.ipynb`` of github.com/groovychoons/GlobalBias
(functions ``get_full_data``, ``run_classification_task``, ``evaluate_columns``,
``calculate_jsd_for_groups`` / ``get_jsd_words``), re-implemented without its file layout:

* **Duplicates**: exact duplicate rows (every column, list fields as tuples, name and
  run id included) are dropped, keeping the first (``drop_duplicates(keep="first")``).
* **Features**: one ``OneHotEncoder(handle_unknown="ignore")`` over the scalar fields
  ``age, occupation, socioeconomic_status, sexual_orientation, religion`` and the five
  ``physical_characteristics.*`` fields, in the released column order, values turned into
  strings with ``str`` (case kept; a missing value becomes the category ``"nan"``, as
  ``str(float("nan"))`` does in the released code); plus one default ``TfidfVectorizer()``
  per list field (personality_traits, negative_traits, hobbies) over its items joined by
  spaces. ``name``, ``special_move`` and ``run_id`` are not features.
* **Classifier**: ``SVC()`` with defaults, one ``train_test_split(test_size=0.3,
  random_state=42, stratify=y)`` on the rows in file order. On the released Llama 3 70B
  file this gives the paper's Table 6: 18.3 % (group), 30.6 % (ethnicity), 83.3 % (gender).
* **Ablation**: the same split with one feature left out (the released code reports it for
  ethnicity only; here for every target). ``delta`` = accuracy without it − full accuracy.
* **Jensen–Shannon divergence** (shifterator's ``JSDivergenceShift`` with weights 0.5/0.5,
  base 2, alpha 1, as the notebook calls it): the "words" of a field are its lower-cased
  list items (a multi-word item such as "rock climbing" is one word, not tokenised) or its
  lower-cased scalar value; for every group, the word distribution of its profiles is
  compared with the pooled distribution of all other groups. A word's contribution is
  shifterator's normalised shift score: its pointwise JSD term
  ``0.5·p·log2(p/m) + 0.5·q·log2(q/m)`` (m = (p+q)/2, 0·log 0 = 0) divided by the sum of
  all terms, i.e. the share of the group's JSD it accounts for (all terms are ≥ 0).
  Top words per group: the 25 largest contributions, kept only if the word is among the
  200 largest "in-group scores" (shifterator's ``type2score_1`` = 0.5·log2(m/p), or
  0.5·log2 m for a word the group never uses), then the first 3; the field's table is the
  10 largest of those across groups. Ties are broken by word (the released code's order
  came from a Python set and was arbitrary). Missing values are skipped here (the released
  code would count the word "nan"; its data had none).

Beside the paper's single split, :func:`repeated_split_accuracy` gives the mean and
standard deviation over repeated stratified splits — a more robust estimate, not the
paper's number.

Small data (a tiny model's dozen profiles) cannot always be split with stratification:
the functions then return NaN with a reason instead of raising sklearn's ValueError.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import IO, Any

import numpy as np
import pandas as pd

from gbdesk.support.csvfile import csv_records
from gbdesk.support.errors import UserError
from gbdesk.support.guards import MAX_JSON_DEPTH, loads_json, too_deep, unescape_exported

# --------------------------------------------------------------------------- layout

PHYSICAL_PREFIX = "physical_characteristics"
PHYSICAL_SUBFIELDS: tuple[str, ...] = (
    "height",
    "hair_colour",
    "eye_colour",
    "skin_colour",
    "build",
)
PHYSICAL_COLUMNS: tuple[str, ...] = tuple(f"{PHYSICAL_PREFIX}.{f}" for f in PHYSICAL_SUBFIELDS)
LIST_FIELDS: tuple[str, ...] = ("personality_traits", "negative_traits", "hobbies")
SCALAR_FIELDS: tuple[str, ...] = (
    "name",
    "age",
    "occupation",
    "special_move",
    "socioeconomic_status",
    "sexual_orientation",
    "religion",
)
#: Keys of one generated profile (the model's JSON object), nested as the prompt asks.
PROFILE_FIELDS: tuple[str, ...] = (
    "name",
    "age",
    "personality_traits",
    "negative_traits",
    "hobbies",
    "occupation",
    "physical_characteristics",
    "special_move",
    "socioeconomic_status",
    "sexual_orientation",
    "religion",
)
LABEL_COLUMNS: tuple[str, ...] = ("Ethnicity", "Gender", "Group")
#: Columns of the released ``10a_<model>_full.csv`` (after its unnamed index), in order.
COLUMNS: tuple[str, ...] = (
    "name",
    "age",
    "personality_traits",
    "negative_traits",
    "hobbies",
    "occupation",
    "special_move",
    "socioeconomic_status",
    "sexual_orientation",
    "religion",
    "run_id",
    *PHYSICAL_COLUMNS,
    *LABEL_COLUMNS,
)
#: Columns never used as features (besides the labels).
NON_FEATURES: tuple[str, ...] = ("name", "special_move", "run_id")
#: One-hot encoded fields, in the released column order.
CATEGORICAL_FEATURES: tuple[str, ...] = tuple(
    c for c in COLUMNS if c not in (*NON_FEATURES, *LIST_FIELDS, *LABEL_COLUMNS)
)
#: Every feature, in the order of the released ablation table.
FEATURES: tuple[str, ...] = tuple(c for c in COLUMNS if c not in (*NON_FEATURES, *LABEL_COLUMNS))
#: Fields the released notebook computes JSD top words for (all but name, age, run id).
JSD_FIELDS: tuple[str, ...] = tuple(
    c for c in COLUMNS if c not in ("name", "age", "run_id", *LABEL_COLUMNS)
)
#: Columns a profiles CSV must have (``Group`` is derived and ``run_id`` defaulted if absent).
REQUIRED_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in ("run_id", "Group"))

TARGETS: dict[str, str] = {"group": "Group", "ethnicity": "Ethnicity", "gender": "Gender"}
#: Nominal chance levels of the paper's design (40 groups, 20 ethnicities, 2 genders).
CHANCE: dict[str, float] = {"group": 1 / 40, "ethnicity": 1 / 20, "gender": 1 / 2}
#: Published Table 6 accuracies for the released Llama 3 70B file.
PAPER_TABLE6_LLAMA3: dict[str, float] = {"group": 0.183, "ethnicity": 0.306, "gender": 0.833}

TEST_SIZE = 0.3
SPLIT_SEED = 42
JSD_WEIGHTS = (0.5, 0.5)
JSD_BASE = 2.0
JSD_CANDIDATES = 25  # released: top 25 shift scores per group …
JSD_SCORE_FILTER = 200  # … kept if among the 200 highest type2score_1 …
JSD_PER_GROUP = 3  # … first 3 per group, then the 10 best across groups


# --------------------------------------------------------------------------- parsing


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    return False


def parse_list_cell(value: Any) -> tuple[str, ...]:
    """One list field as a tuple of strings.

    Accepts a list/tuple, the released Python tuple literal ``"('a', 'b')"``, a JSON list
    ``'["a", "b"]'`` or a plain string (split on commas). Missing → ``()``. Items of a
    literal are kept as written (the released analysis does not strip them). Never raises:
    a literal that cannot be read (too deep, a 5,000-digit number) is split as text.
    """
    if _is_missing(value):
        return ()
    if isinstance(value, list | tuple | np.ndarray):
        return tuple(str(v) for v in value if not _is_missing(v))
    text = str(value).strip()
    if not text:
        return ()
    if text[0] in "([":
        parsed: Any = None
        try:
            if too_deep(text, MAX_JSON_DEPTH, python=True):
                raise ValueError("nested too deeply")  # literal_eval recurses per level
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                parsed = loads_json(text, strict=False)
            except ValueError:
                parsed = None
        if isinstance(parsed, list | tuple):
            return tuple(str(v) for v in parsed if not _is_missing(v))
        if isinstance(parsed, str):
            return (parsed,)
        text = text.strip("()[]")
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _group_label(ethnicity: Any, gender: Any) -> Any:
    if _is_missing(ethnicity) or _is_missing(gender):
        return math.nan
    return str((str(ethnicity), str(gender)))


def _normalise_group(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return str(tuple(str(v) for v in value))
    return value


def _finish_frame(df: pd.DataFrame) -> pd.DataFrame:
    for col in LIST_FIELDS:
        df[col] = df[col].map(parse_list_cell).astype(object)
    if "run_id" not in df.columns:
        df["run_id"] = pd.NA
    derived = [_group_label(e, g) for e, g in zip(df["Ethnicity"], df["Gender"], strict=True)]
    if "Group" not in df.columns:
        df["Group"] = derived
    else:
        group = df["Group"].map(_normalise_group).astype(object)
        df["Group"] = [d if _is_missing(g) else g for g, d in zip(group, derived, strict=True)]
    return df[list(COLUMNS)]


def read_profiles_csv(path_or_buffer: str | Any | IO[str]) -> pd.DataFrame:
    """Read profiles in the released ``10a_<model>_full.csv`` layout.

    The unnamed leading index column, if present, becomes the index (it is not a
    feature: used as one it changes the accuracies). List fields are parsed into tuples.
    Raises :class:`UserError` naming any missing required column, a repeated column, or
    the line of a row with more or fewer cells than the header (pandas would shift or pad
    it silently). ``df.attrs["lines"]`` holds the file line each row starts on.
    """
    where = str(path_or_buffer)
    try:
        if hasattr(path_or_buffer, "read"):
            text = path_or_buffer.read()
        else:
            with open(path_or_buffer, encoding="utf-8-sig", newline="") as fh:
                text = fh.read()
    except FileNotFoundError as exc:
        raise UserError(f"profiles CSV not found: {path_or_buffer}") from exc
    except UnicodeDecodeError:
        raise UserError(f"could not read profiles CSV {where}: it is not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"could not read profiles CSV {where}: {exc.strerror or exc}") from None
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig", errors="replace")
    header, records = csv_records(text, where, unescape=False)
    if header is None:
        raise UserError(f"could not read profiles CSV {where}: it is empty")
    header, records, exported = unescape_exported(header, records)
    if exported:  # gbdesk's profiles.csv: pandas reads the cells as they were stored
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        writer.writerows(cells for _, cells in records)
        text = buffer.getvalue()
    short = [line for line, cells in records if len(cells) < len(header)]
    if short:
        raise UserError(
            f"{where}: line{'s' if len(short) > 1 else ''} "
            f"{', '.join(str(n) for n in short[:12])}{' …' if len(short) > 12 else ''} "
            f"{'have' if len(short) > 1 else 'has'} fewer cells than the header's {len(header)}"
        )
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise UserError(f"could not read profiles CSV {where}: {exc}") from exc
    first = str(df.columns[0]) if len(df.columns) else ""
    if first == "" or first.startswith("Unnamed: 0"):
        df = df.set_index(df.columns[0])
        df.index.name = None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(
            "profiles CSV lacks required column(s): "
            + ", ".join(missing)
            + " (expected the GlobalBias 10a_<model>_full.csv layout)"
        )
    out = _finish_frame(df.copy())
    if len(records) == len(out):  # pandas and csv agree on the rows (always, unless blank-ish)
        out.attrs["lines"] = [line for line, _ in records]
    return out


def _flatten_record(record: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key in COLUMNS:
        if key in PHYSICAL_COLUMNS:
            continue
        row[key] = record.get(key, math.nan)
    physical = record.get(PHYSICAL_PREFIX)
    for sub, col in zip(PHYSICAL_SUBFIELDS, PHYSICAL_COLUMNS, strict=True):
        if isinstance(physical, Mapping):
            row[col] = physical.get(sub, math.nan)
        else:
            row[col] = record.get(col, math.nan)
    for key, value in list(row.items()):
        if value is None:
            row[key] = math.nan
    return row


def profiles_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Frame of profiles parsed from model JSON output, in the released CSV layout.

    Each record is one profile (nested ``physical_characteristics`` dict, as the prompt
    asks) plus ``run_id``, ``Ethnicity``, ``Gender`` and optionally ``Group`` (derived as
    ``"('ETHNICITY', 'G')"`` when absent; a tuple is written the same way). Missing or
    malformed fields become missing values. Column dtypes are inferred by pandas, as
    ``pd.json_normalize`` does in the released code.
    """
    rows = []
    for record in records:
        if not isinstance(record, Mapping):
            raise UserError(f"a profile must be a JSON object, got {type(record).__name__}")
        rows.append(_flatten_record(record))
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df = df.infer_objects()
    return _finish_frame(df)


def drop_duplicate_profiles(df: pd.DataFrame) -> pd.DataFrame:
    """Drop exact duplicate rows (all columns, lists as tuples), keeping the first."""
    return df.loc[~df[list(COLUMNS)].duplicated(keep="first")]


# --------------------------------------------------------------------------- classification


def _check_frame(df: pd.DataFrame) -> None:
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise UserError(
            "profile frame lacks column(s): "
            + ", ".join(missing)
            + " (build it with read_profiles_csv or profiles_frame)"
        )


def _target(target: str) -> tuple[str, str]:
    key = str(target).lower()
    if key not in TARGETS:
        raise UserError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    return key, TARGETS[key]


def _text(value: Any) -> str:
    """A categorical value as the released code one-hot encodes it (``str``; NaN → "nan")."""
    if _is_missing(value):
        return "nan"
    return str(value)


def feature_frame(df: pd.DataFrame, features: Sequence[str] = FEATURES) -> pd.DataFrame:
    """The classifier's input: categorical fields as strings, list fields joined by spaces."""
    out = {}
    for col in features:
        if col in LIST_FIELDS:
            out[col] = [" ".join(parse_list_cell(v)) for v in df[col]]
        else:
            out[col] = [_text(v) for v in df[col]]
    return pd.DataFrame(out, index=df.index, dtype=object)


def _has_tokens(docs: Iterable[str]) -> bool:
    from sklearn.feature_extraction.text import TfidfVectorizer

    analyzer = TfidfVectorizer().build_analyzer()
    return any(analyzer(d) for d in docs)


def _pipeline(x_train: pd.DataFrame, features: Sequence[str]):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.svm import SVC

    categorical = [c for c in CATEGORICAL_FEATURES if c in features]
    transformers: list[tuple[str, Any, Any]] = []
    if categorical:
        transformers.append(("cat", OneHotEncoder(handle_unknown="ignore"), categorical))
    for col in LIST_FIELDS:
        # A field with no token in the training rows would make TfidfVectorizer raise
        # "empty vocabulary"; it carries no information, so it is left out.
        if col in features and _has_tokens(x_train[col]):
            transformers.append((f"list_{col}", TfidfVectorizer(), col))
    if not transformers:
        return None
    preprocessor = ColumnTransformer(transformers, remainder="drop")
    return Pipeline([("preprocessor", preprocessor), ("classifier", SVC())])


def _labelled(df: pd.DataFrame, column: str) -> pd.DataFrame:
    _check_frame(df)
    df = drop_duplicate_profiles(df)
    keep = [not _is_missing(v) for v in df[column]]
    return df.loc[keep]


def stratified_split_problem(y: Sequence[Any], test_size: float = TEST_SIZE) -> str | None:
    """Why a stratified train/test split of labels ``y`` is impossible, or None if it is not."""
    counts = Counter(str(v) for v in y)
    n = sum(counts.values())
    if n == 0:
        return "no labelled profiles"
    if len(counts) < 2:
        return f"only one class present ({next(iter(counts))!r}); nothing to classify"
    rare = sorted(k for k, c in counts.items() if c < 2)
    if rare:
        shown = ", ".join(rare[:5]) + (" …" if len(rare) > 5 else "")
        return (
            f"{len(rare)} class(es) have a single profile ({shown}); "
            "a stratified split needs at least 2 per class"
        )
    n_test = math.ceil(test_size * n)
    n_train = n - n_test
    if n_test < len(counts) or n_train < len(counts):
        return (
            f"{n} profiles are too few for a stratified {int(100 * test_size)} % test split "
            f"of {len(counts)} classes (train {n_train}, test {n_test})"
        )
    return None


@dataclass(frozen=True)
class SvmResult:
    """Accuracy of predicting one target from the profile features."""

    target: str
    accuracy: float
    n_profiles: int
    n_train: int
    n_test: int
    n_classes: int
    chance: float  # nominal, CHANCE[target]
    chance_observed: float  # 1 / number of classes present
    majority_baseline: float  # share of the largest class in the test set
    reason: str | None = None  # why accuracy is NaN


def _fit_score(
    x: pd.DataFrame,
    y: pd.Series,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    features: Sequence[str],
) -> float:
    from sklearn.metrics import accuracy_score

    x_train, x_test = x.iloc[train_idx], x.iloc[test_idx]
    y_train, y_test = y.iloc[train_idx], y.iloc[test_idx]
    model = _pipeline(x_train, features)
    if model is None:
        return math.nan
    model.fit(x_train, y_train)
    return float(accuracy_score(y_test, model.predict(x_test)))


def _released_split(y: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split

    positions = np.arange(len(y))
    train_idx, test_idx = train_test_split(
        positions, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=y
    )
    return train_idx, test_idx


def svm_result(df: pd.DataFrame, target: str, features: Sequence[str] = FEATURES) -> SvmResult:
    """The released single split (test 30 %, seed 42, stratified) with ``SVC()``."""
    key, column = _target(target)
    data = _labelled(df, column)
    y = data[column].astype(str)
    n = len(y)
    n_classes = int(y.nunique())
    observed = 1 / n_classes if n_classes else math.nan
    problem = stratified_split_problem(y)
    if problem is not None:
        return SvmResult(
            key, math.nan, n, 0, 0, n_classes, CHANCE[key], observed, math.nan, problem
        )
    x = feature_frame(data, features)
    train_idx, test_idx = _released_split(y)
    majority = float(y.iloc[test_idx].value_counts(normalize=True).iloc[0])
    accuracy = _fit_score(x, y, train_idx, test_idx, features)
    reason = None if not math.isnan(accuracy) else "no usable feature"
    return SvmResult(
        key,
        accuracy,
        n,
        len(train_idx),
        len(test_idx),
        n_classes,
        CHANCE[key],
        observed,
        majority,
        reason,
    )


def svm_accuracy(df: pd.DataFrame, target: str) -> float:
    """Accuracy of the released single split for ``target`` (NaN when it cannot be split)."""
    return svm_result(df, target).accuracy


def svm_accuracies(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Table 6 for one model: ``{"group"|"ethnicity"|"gender": {accuracy, n_profiles, …}}``."""
    return {key: asdict(svm_result(df, key)) for key in TARGETS}


def repeated_split_accuracy(
    df: pd.DataFrame, target: str, n_splits: int = 20, seed: int = 0
) -> tuple[float, float, int]:
    """Mean and sample SD of accuracy over ``StratifiedShuffleSplit(n_splits, test_size=0.3)``.

    Not the paper's number (that is one split); returns ``(nan, nan, 0)`` when a
    stratified split is impossible (see :func:`stratified_split_problem`).
    """
    from sklearn.model_selection import StratifiedShuffleSplit

    if n_splits < 1:
        raise UserError("n_splits must be at least 1")
    _key, column = _target(target)
    data = _labelled(df, column)
    y = data[column].astype(str)
    if stratified_split_problem(y) is not None:
        return (math.nan, math.nan, 0)
    x = feature_frame(data)
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=TEST_SIZE, random_state=seed)
    scores = [_fit_score(x, y, tr, te, FEATURES) for tr, te in splitter.split(np.zeros(len(y)), y)]
    scores = [s for s in scores if not math.isnan(s)]
    if not scores:
        return (math.nan, math.nan, 0)
    sd = statistics.stdev(scores) if len(scores) > 1 else math.nan
    return (statistics.fmean(scores), sd, len(scores))


def ablation(
    df: pd.DataFrame,
    targets: Sequence[str] = tuple(TARGETS),
    features: Sequence[str] = FEATURES,
) -> pd.DataFrame:
    """Drop-one-feature ablation on the released split.

    One row per feature × target: ``feature, target, accuracy`` (without the feature),
    ``delta`` (that minus the full accuracy; negative = the feature helped) and ``reason``
    (why NaN, else None).
    """
    rows = []
    for target in targets:
        key, column = _target(target)
        data = _labelled(df, column)
        y = data[column].astype(str)
        problem = stratified_split_problem(y)
        if problem is None:
            x = feature_frame(data)
            train_idx, test_idx = _released_split(y)
            full = _fit_score(x, y, train_idx, test_idx, FEATURES)
        for feature in features:
            if feature not in FEATURES:
                raise UserError(
                    f"unknown feature {feature!r}; expected one of {', '.join(FEATURES)}"
                )
            if problem is not None:
                rows.append((feature, key, math.nan, math.nan, problem))
                continue
            kept = [f for f in FEATURES if f != feature]
            accuracy = _fit_score(x, y, train_idx, test_idx, kept)
            reason = None if not math.isnan(accuracy) else "no usable feature left"
            rows.append((feature, key, accuracy, accuracy - full, reason))
    return pd.DataFrame(rows, columns=["feature", "target", "accuracy", "delta", "reason"])


# --------------------------------------------------------------------------- Jensen–Shannon


def field_words(value: Any) -> list[str]:
    """The JSD "words" of one cell: lower-cased list items, or the lower-cased scalar."""
    if isinstance(value, list | tuple):
        return [str(w).lower() for w in value if not _is_missing(w)]
    if _is_missing(value):
        return []
    return [str(value).lower()]


def word_counts(values: Iterable[Any]) -> Counter[str]:
    """Word frequencies of a column's cells (see :func:`field_words`)."""
    counts: Counter[str] = Counter()
    for value in values:
        counts.update(field_words(value))
    return counts


def _probabilities(counts: Mapping[str, float]) -> dict[str, float]:
    total = float(sum(counts.values()))
    if total <= 0:
        return {}
    return {w: c / total for w, c in counts.items() if c > 0}


def jsd_contributions(
    counts_1: Mapping[str, float],
    counts_2: Mapping[str, float],
    weights: tuple[float, float] = JSD_WEIGHTS,
    base: float = JSD_BASE,
) -> dict[str, float]:
    """Pointwise JSD terms ``w1·p·log(p/m) + w2·q·log(q/m)`` per word; they sum to the JSD.

    ``m = w1·p + w2·q``; ``0·log 0 = 0``. Equals shifterator's unnormalised JSD shift score
    (alpha = 1, reference value 0). Empty if either side has no words.
    """
    w1, w2 = weights
    if not math.isclose(w1 + w2, 1.0):
        raise UserError("JSD weights must sum to 1")
    p, q = _probabilities(counts_1), _probabilities(counts_2)
    if not p or not q:
        return {}
    out = {}
    for word in p.keys() | q.keys():
        pw, qw = p.get(word, 0.0), q.get(word, 0.0)
        m = w1 * pw + w2 * qw
        term = 0.0
        if pw > 0:
            term += w1 * pw * math.log(pw / m, base)
        if qw > 0:
            term += w2 * qw * math.log(qw / m, base)
        out[word] = term
    return out


def jensen_shannon_divergence(
    counts_1: Mapping[str, float],
    counts_2: Mapping[str, float],
    weights: tuple[float, float] = JSD_WEIGHTS,
    base: float = JSD_BASE,
) -> float:
    """JSD of two word-count distributions (bits by default; NaN if one is empty)."""
    terms = jsd_contributions(counts_1, counts_2, weights, base)
    return math.fsum(terms.values()) if terms else math.nan


def _in_group_scores(
    counts_1: Mapping[str, float], counts_2: Mapping[str, float], w1: float, base: float
) -> dict[str, float]:
    """shifterator's ``type2score_1`` for the JSD: w1·(log m − log p), or w1·log m if p = 0."""
    p, q = _probabilities(counts_1), _probabilities(counts_2)
    w2 = 1 - w1
    scores = {}
    for word in p.keys() | q.keys():
        pw, qw = p.get(word, 0.0), q.get(word, 0.0)
        m = w1 * pw + w2 * qw
        scores[word] = (
            w1 * (math.log(m, base) - math.log(pw, base)) if pw > 0 else w1 * math.log(m, base)
        )
    return scores


def _group_order(df: pd.DataFrame, column: str) -> list[str]:
    """Labels in order of first appearance (the released ``df[axis].unique()``)."""
    return list(dict.fromkeys(str(g) for g in df[column] if not _is_missing(g)))


def _group_split_counts(
    df: pd.DataFrame, field: str, column: str
) -> Iterable[tuple[str, Counter[str], Counter[str]]]:
    labels = df[column].map(lambda v: math.nan if _is_missing(v) else str(v))
    for group in _group_order(df, column):
        inside = labels == group
        yield group, word_counts(df.loc[inside, field]), word_counts(df.loc[~inside, field])


def _field_column(field: str) -> str:
    if field in COLUMNS and field not in ("run_id", *LABEL_COLUMNS):
        return field
    if f"{PHYSICAL_PREFIX}.{field}" in PHYSICAL_COLUMNS:
        return f"{PHYSICAL_PREFIX}.{field}"
    raise UserError(f"unknown profile field {field!r}; expected one of {', '.join(JSD_FIELDS)}")


def jsd_by_group(
    df: pd.DataFrame, fields: Sequence[str] = JSD_FIELDS, target: str = "group"
) -> pd.DataFrame:
    """JSD (bits) of each field's word distribution, each group vs all other groups pooled.

    Columns ``feature, group, jsd, n_words_in, n_words_out``; groups in order of first
    appearance. Out-group = every profile whose label differs (the released definition).
    """
    _key, column = _target(target)
    _check_frame(df)
    data = drop_duplicate_profiles(df)
    rows = []
    for field in fields:
        col = _field_column(field)
        for group, inside, outside in _group_split_counts(data, col, column):
            jsd = jensen_shannon_divergence(inside, outside)
            rows.append((col, group, jsd, sum(inside.values()), sum(outside.values())))
    return pd.DataFrame(rows, columns=["feature", "group", "jsd", "n_words_in", "n_words_out"])


def jsd_top_words(
    df: pd.DataFrame,
    field: str,
    top_n: int = 10,
    *,
    target: str = "group",
    per_group: int | None = JSD_PER_GROUP,
) -> pd.DataFrame:
    """The released "top differentiating words" table for one field.

    Columns ``group, word, contribution`` (share of the group's JSD, as printed in the
    notebook), ``contribution_bits`` (the word's pointwise JSD term), ``jsd`` (the group's
    JSD in bits), ``share_in`` / ``share_out`` (the word's relative frequency inside /
    outside the group, which tells the direction). At most ``per_group`` words per group
    (None: no cap), ``top_n`` rows overall (None: all).
    """
    _key, column = _target(target)
    _check_frame(df)
    col = _field_column(field)
    data = drop_duplicate_profiles(df)
    w1 = JSD_WEIGHTS[0]
    candidates = []
    for group, inside, outside in _group_split_counts(data, col, column):
        terms = jsd_contributions(inside, outside)
        if not terms:
            continue
        jsd = math.fsum(terms.values())
        norm = math.fsum(abs(t) for t in terms.values())
        scores = _in_group_scores(inside, outside, w1, JSD_BASE)
        allowed = {
            w for w, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:JSD_SCORE_FILTER]
        }
        ranked = sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))[:JSD_CANDIDATES]
        kept = [(w, t) for w, t in ranked if w in allowed]
        if per_group is not None:
            kept = kept[:per_group]
        p_in, p_out = _probabilities(inside), _probabilities(outside)
        for word, term in kept:
            share = term / norm if norm > 0 else 0.0
            candidates.append(
                (group, word, share, term, jsd, p_in.get(word, 0.0), p_out.get(word, 0.0))
            )
    # Stable sort: ties keep group order (first appearance) then within-group rank.
    candidates.sort(key=lambda row: -row[2])
    if top_n is not None:
        candidates = candidates[:top_n]
    return pd.DataFrame(
        candidates,
        columns=[
            "group",
            "word",
            "contribution",
            "contribution_bits",
            "jsd",
            "share_in",
            "share_out",
        ],
    )
