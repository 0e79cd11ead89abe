"""GlobalBias result views: the searchable association table and the flag heat map."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
)

from gbdesk.contract import Probe
from gbdesk.people.review import ReviewItem
from gbdesk.support.guards import html_text
from gbdesk.ui.result_views import ResultView
from gbdesk.ui.review_views import TextReviewView
from gbdesk.ui.theme import MUTED

COLUMNS = [
    ("group", "Group"),
    ("descriptor", "Descriptor"),
    ("set", "Set"),
    ("bias_score", "Bias score"),
    ("mean", "Descriptor mean"),
    ("threshold", "Threshold"),
    ("flagged", "Flagged"),
]
FLAG_FILL = QColor("#fde2e1")


class AssociationModel(QAbstractTableModel):
    """Rows of the association table (tens of thousands: a model, not a widget table)."""

    def __init__(self, rows: list[dict[str, Any]], parent=None):
        super().__init__(parent)
        self.rows = rows

    def rowCount(self, parent: QModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | None = None) -> int:
        return len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section][1]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        row = self.rows[index.row()]
        key = COLUMNS[index.column()][0]
        value = row.get(key)
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "flagged":
                return "yes" if value else ("not tested" if not row.get("tested") else "")
            if isinstance(value, float):
                return "—" if math.isnan(value) else f"{value:.3f}"
            return "" if value is None else str(value)
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return value if not isinstance(value, bool) else int(value)
        if role == Qt.ItemDataRole.BackgroundRole and row.get("flagged"):
            return FLAG_FILL
        return None


class _Filter(QSortFilterProxyModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.text = ""
        self.flagged_only = True
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def filterAcceptsRow(self, source_row, source_parent) -> bool:
        row = self.sourceModel().rows[source_row]
        if self.flagged_only and not row.get("flagged"):
            return False
        if not self.text:
            return True
        hay = f"{row.get('group', '')} {row.get('descriptor', '')} {row.get('set', '')}".casefold()
        return all(word in hay for word in self.text.casefold().split())


class AssociationsView(ResultView):
    """Per-descriptor group associations (search, flagged highlighted) and a heat map of
    flagged pairs per group × descriptor set."""

    def __init__(self, extra: dict[str, Any], open_review, run_id: int, parent=None):
        super().__init__(extra, open_review, run_id, parent)
        layout = self.box
        rows = extra.get("associations", [])
        n_flag = sum(1 for r in rows if r.get("flagged"))
        layout.addWidget(
            _note(
                f"<b>Group associations</b> — {n_flag:,} flagged of {len(rows):,} group × "
                "descriptor pairs (1 % one-tailed: bias score below the descriptor's mean − "
                "2.326 SD; lower = more associated; age axis not tested)"
            )
        )
        controls = QHBoxLayout()
        self.search = QLineEdit(placeholderText="Search groups, descriptors, sets…")
        self.search.setClearButtonEnabled(True)
        self.flagged_only = QCheckBox("&Flagged only")
        self.flagged_only.setChecked(True)
        controls.addWidget(self.search, 1)
        controls.addWidget(self.flagged_only)
        layout.addLayout(controls)
        self.model = AssociationModel(rows, self)
        self.proxy = _Filter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(3, Qt.SortOrder.AscendingOrder)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setMinimumHeight(260)
        layout.addWidget(self.table)
        self.count = QLabel()
        self.count.setStyleSheet(f"color:{MUTED}")
        layout.addWidget(self.count)
        self.search.textChanged.connect(self._refilter)
        self.flagged_only.toggled.connect(self._refilter)
        self._refilter()

        heat = extra.get("heatmap") or {}
        if heat.get("groups") and heat.get("sets"):
            layout.addWidget(
                _note("<b>Flagged pairs per group × descriptor set</b> (darker = more flags)")
            )
            layout.addWidget(self._heatmap(heat))

    def _refilter(self) -> None:
        self.proxy.text = self.search.text()
        self.proxy.flagged_only = self.flagged_only.isChecked()
        self.proxy.invalidate()
        self.count.setText(f"{self.proxy.rowCount():,} rows shown")

    @staticmethod
    def _heatmap(heat: dict[str, Any]) -> pg.PlotWidget:
        counts = np.asarray(heat["counts"], dtype=float)  # groups × sets
        plot = pg.PlotWidget()
        plot.setMinimumHeight(max(360, 16 * len(heat["groups"])))
        image = pg.ImageItem(counts.T)  # x = set index, y = group index
        top = max(1.0, float(counts.max()))
        image.setLookupTable(
            pg.ColorMap([0.0, 1.0], [(255, 255, 255), (153, 27, 27)]).getLookupTable(nPts=64)
        )
        image.setLevels((0, top))
        plot.addItem(image)
        plot.getAxis("left").setTicks(
            [[(i + 0.5, _short(g)) for i, g in enumerate(heat["groups"])]]
        )
        plot.getAxis("bottom").setTicks([[(i + 0.5, s) for i, s in enumerate(heat["sets"])]])
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        for gi in range(counts.shape[0]):
            for si in range(counts.shape[1]):
                if counts[gi, si]:
                    label = pg.TextItem(f"{counts[gi, si]:.0f}", color="#111827", anchor=(0.5, 0.5))
                    label.setPos(si + 0.5, gi + 0.5)
                    plot.addItem(label)
        return plot


def _note(text: str) -> QLabel:
    """A wrapping label (long captions must not widen the results pane)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


def _short(group: str) -> str:
    """('ENGLISH', 'F') → ENGLISH F; other labels unchanged."""
    text = group.strip()
    if text.startswith("(") and text.endswith(")"):
        text = " ".join(p.strip(" '\"") for p in text[1:-1].split(","))
    return text


# -- character profiles ---------------------------------------------------------------------
class ProfileReviewView(TextReviewView):
    """A profile answer: its raw text, and each parsed profile's fields beside its name's
    group (parse failures stated, never hidden)."""

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.header.setText("")
            self.text.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")
            return
        data = item.auto_data or {}
        people = item.metadata.get("people") or []
        who = ", ".join(f"{p['name']} {_short(p['group'])}" for p in people)
        error = data.get("error")
        self.header.setText(
            f"<b>{html_text(who)}</b>, run {item.attempt + 1} — "
            f"{len(data.get('profiles') or [])} of {len(people)} profile(s) parsed"
            + (f" <span style='color:#b91c1c'>({html_text(error)})</span>" if error else "")
        )
        blocks = []
        for profile in data.get("profiles") or []:
            rows = "".join(
                f"<tr><td style='color:{MUTED}; padding-right:12px'>{html_text(k)}</td>"
                f"<td>{html_text(_field(v))}</td></tr>"
                for k, v in profile.items()
                if k != "position"
            )
            blocks.append(f"<table>{rows}</table>")
        self.text.setHtml(
            "<h4>Parsed fields</h4>"
            + ("<hr>".join(blocks) or f"<p style='color:{MUTED}'>No profile could be parsed.</p>")
            + "<h4>Raw answer</h4>"
            f"<pre style='white-space:pre-wrap'>{html_text(item.response)}</pre>"
        )


def _field(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_field(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_field(v) for v in value)
    return "" if value is None else str(value)


class ProfileResultsView(ResultView):
    """SVM accuracy against chance, the drop-one-feature ablation and the Jensen–Shannon
    top words per field."""

    def __init__(self, extra: dict[str, Any], open_review, run_id: int, parent=None):
        super().__init__(extra, open_review, run_id, parent)
        layout = self.box
        rows = extra.get("ablation") or []
        if rows:
            layout.addWidget(
                _note(
                    "<b>Drop-one-feature ablation</b> — change in accuracy (percentage points) "
                    "when a field is left out; negative = the field gives the group away"
                )
            )
            targets = list(dict.fromkeys(r["target"] for r in rows))
            features = list(dict.fromkeys(r["feature"] for r in rows))
            plot = pg.PlotWidget()
            plot.setMinimumHeight(300)
            plot.addLegend(offset=(-10, 10))
            width = 0.8 / max(1, len(targets))
            colors = ["#1f5fbf", "#c2410c", "#15803d"]
            for ti, target in enumerate(targets):
                values = {r["feature"]: r["delta"] for r in rows if r["target"] == target}
                xs = [i + (ti - (len(targets) - 1) / 2) * width for i in range(len(features))]
                ys = [100 * (values.get(f) or 0.0) for f in features]
                plot.addItem(
                    pg.BarGraphItem(x=xs, height=ys, width=width, brush=colors[ti % 3], name=target)
                )
                plot.plot([], [], pen=pg.mkPen(colors[ti % 3], width=6), name=target)
            plot.getAxis("bottom").setTicks(
                [[(i, f.replace("physical_characteristics.", "")) for i, f in enumerate(features)]]
            )
            plot.setLabel("left", "Δ accuracy (points)")
            plot.setMouseEnabled(x=False, y=False)
            layout.addWidget(plot)
        top = extra.get("top_words") or {}
        if top:
            layout.addWidget(
                _note(
                    "<b>Top differentiating words</b> (Jensen–Shannon divergence of a group's "
                    "words against all other groups; in-group and out-group shares show the "
                    "direction)"
                )
            )
            self.field = QComboBox()
            self.field.addItems(list(top))
            layout.addWidget(self.field)
            self.words = QTableWidget()
            self.words.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            self.words.verticalHeader().setVisible(False)
            self.words.setMinimumHeight(240)
            layout.addWidget(self.words)
            self.field.currentTextChanged.connect(self._show_words)
            self._show_words(self.field.currentText())

    def _show_words(self, field: str) -> None:
        rows = (self.extra.get("top_words") or {}).get(field) or []
        headers = ["Group", "Word", "Contribution", "Group JSD", "In group", "Elsewhere"]
        self.words.setColumnCount(len(headers))
        self.words.setHorizontalHeaderLabels(headers)
        self.words.setRowCount(len(rows))
        for i, r in enumerate(rows):
            values = [
                _short(str(r.get("group", ""))),
                str(r.get("word", "")),
                f"{r.get('contribution', math.nan):.3f}",
                f"{r.get('jsd', math.nan):.3f}",
                f"{100 * r.get('share_in', math.nan):.1f} %",
                f"{100 * r.get('share_out', math.nan):.1f} %",
            ]
            for j, v in enumerate(values):
                self.words.setItem(i, j, QTableWidgetItem(v))
        self.words.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
