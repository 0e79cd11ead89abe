"""The report's end matter: probe cards, glossary, configuration and datasets, the
test log and the sign-off.
"""

from __future__ import annotations

from gbdesk.report.content import ReportData, chat_template, configuration
from gbdesk.report.pdf_blocks import _block
from gbdesk.report.pdf_layout import _Doc, e, model_name


def _cards(data: ReportData, doc: _Doc) -> None:
    doc.add("<h2 style='page-break-before: always'>Probe cards</h2>")
    seen = set()
    for section in data.runs:
        probe = section.probe
        if probe.name in seen:
            continue
        seen.add(probe.name)
        card = probe.card
        harms = "".join(f"<li>{e(h)}</li>" for h in card.harms)
        limits = "".join(f"<li>{e(x)}</li>" for x in card.limitations)
        doc.add(
            f"<h3>{e(card.title)} ({e(probe.name)})</h3><p>{e(card.measures)}</p>"
            f"<p><b>Harms</b></p><ul>{harms}</ul><p><b>Method.</b> {e(card.method)}</p>"
            f"<p><b>Data.</b> {e(card.data_source)} <b>Size.</b> {e(card.size)} "
            f"<b>Licence.</b> {e(card.licence)}</p>"
            f"<p><b>Limitations</b></p><ul>{limits}</ul>"
            f"<p class='muted'>{e(card.citation)}</p>"
        )


def _card_table(data: ReportData, doc: _Doc) -> None:
    """An audit's probe cards in one table: what each probe measures, its data, licence
    and citation (the whole cards: `gbdesk probes --card`)."""
    seen, rows = set(), []
    for section in data.runs:
        probe = section.probe
        if probe.name in seen:
            continue
        seen.add(probe.name)
        card = probe.card
        rows.append(
            f"<tr><td class='m'><b>{e(card.title)}</b><br><span class='muted'>"
            f"{e(card.citation)}</span></td><td class='m'>{e(card.measures)}</td>"
            f"<td class='m'>{e(card.data_source)} <span class='muted'>{e(card.licence)}"
            "</span></td></tr>"
        )
    doc.add(
        "<h2 style='page-break-before: always'>Probe cards</h2><p class='muted'>Each "
        "probe's card in one line; its harms, method and limitations: gbdesk probes --card "
        "PROBE.</p><table width='100%'><tr><th class='m' width='30%'>Probe "
        "<span class='muted'>(citation)</span></th><th class='m' width='42%'>Measures</th>"
        f"<th class='m' width='28%'>Data, licence</th></tr>{''.join(rows)}</table>"
    )


def _audit_appendix(data: ReportData, doc: _Doc) -> None:
    """An audit's appendix B: each model's chat template once, the datasets (each run's
    settings, seeds and versions are in the test log)."""
    doc.add("<h2 style='page-break-before: always'>Appendix B: templates and datasets</h2>")
    seen = set()
    for section in data.runs:
        template = chat_template(section)
        if not template or section.model_label in seen:
            continue
        seen.add(section.model_label)
        doc.add(
            f"<p><b>Chat template of {model_name(section.model_label)}</b> (from the GGUF "
            f"file)</p><pre class='mono'>{e(template, 20_000, 'the model file')}</pre>"
        )
    _datasets(data, doc, small=True)


def _glossary(doc: _Doc) -> None:
    from gbdesk.support.glossary import GLOSSARY

    rows = "".join(
        f"<tr><th width='18%'>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in GLOSSARY.items()
    )
    doc.add(f"<h2>Glossary</h2><table width='100%'>{rows}</table>")


def _appendix(data: ReportData, doc: _Doc) -> None:
    doc.add("<h2 style='page-break-before: always'>Appendix: configuration</h2>")
    for section in data.runs:
        rows = "".join(
            f"<tr><th width='28%'>{e(k)}</th><td>{e(v)}</td></tr>"
            for k, v in configuration(section)
        )
        doc.add(f"<h3>Run {section.run_id}</h3><table width='100%'>{rows}</table>")
        template = chat_template(section)
        if template:
            doc.add(
                "<p><b>Chat template</b> (from the GGUF file)</p>"
                f"<pre class='mono'>{e(template, 20_000, 'the model file')}</pre>"
            )
    _datasets(data, doc)


def _datasets(data: ReportData, doc: _Doc, small: bool = False) -> None:
    """The datasets shipped with gbdesk: title, source, licence (`small`: small print)."""
    if data.datasets:
        rows = "".join(
            f"<tr><td>{e(d.get('title', k))}</td><td>{e(d.get('source', ''))}</td>"
            f"<td>{e(d.get('licence', ''))}</td></tr>"
            for k, d in data.datasets.items()
        )
        table = f"<tr><th>Dataset</th><th>Source</th><th>Licence</th></tr>{rows}"
        if small:
            table = table.replace("<td>", "<td class='m'>").replace("<th>", "<th class='m'>")
        doc.add(f"<h3>Datasets shipped with gbdesk</h3><table width='100%'>{table}</table>")


#: the sign-off after the test log: the reviewer's conclusion, then who signs
SIGN_OFF = (
    "<h2 style='page-break-before: always'>Sign-off</h2><p>Reviewer's conclusion (what the "
    "audit shows about this model, and what it does not):</p><table width='100%'><tr><td>"
    + "&nbsp;<br>"
    * 9
    + "</td></tr>"
    "</table><p></p><table width='100%'><tr><th width='22%'></th><th width='26%'>Name</th>"
    "<th width='20%'>Role</th><th width='12%'>Date</th><th width='20%'>Signature</th></tr>"
    + "".join(
        f"<tr><td>{who}</td><td>&nbsp;<br>&nbsp;</td><td></td><td></td><td></td></tr>"
        for who in ("Reviewer responsible", "Second reviewer", "Approved by")
    )
    + "</table>"
)


def _test_log(data: ReportData, doc: _Doc) -> None:
    """The final section: the dated test log (`report.test_log`), then the sign-off."""
    from gbdesk.report.test_log import log_blocks

    if data.test_log is None:
        return
    doc.add("<h2 style='page-break-before: always'>Test log</h2>")
    for block in log_blocks(data.test_log):
        _block(block, doc)
    doc.add(SIGN_OFF)
