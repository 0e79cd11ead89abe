#!/bin/sh
# Build the one-folder app into dist/gbdesk/ and smoke-test it headlessly.
set -eu
cd "$(dirname "$0")/.."
python -m pip install "pyinstaller>=6.5"
python -m PyInstaller --noconfirm --clean build_installer.spec
app="dist/gbdesk/gbdesk"
"$app" --version
tmp="$(mktemp -d)"
GBDESK_DATA_DIR="$tmp" "$app" run --probe inventories --limit 1 --attempts 1 --max-tokens 32 \
    --db "$tmp/smoke.sqlite" --json
echo "built: dist/gbdesk/ ($(du -sh dist/gbdesk | cut -f1))"
