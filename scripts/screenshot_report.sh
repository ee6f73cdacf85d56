#!/usr/bin/env bash
# Render a parity HTML report in headless Chromium and save a PNG of it, to check the page by eye
# (what a reader sees first: verdict, environment line, failing cases; the case table collapsed).
#
#   scripts/screenshot_report.sh [REPORT_DIR] [OUT_PNG] [WIDTHxHEIGHT]
#
# REPORT_DIR defaults to parity/reports (the last `python -m parity run`), OUT_PNG to
# REPORT_DIR/report.png, the window to 1280x2000. Needs Chromium (Debian: apt-get install chromium;
# CHROMIUM=/path/to/chrome picks another binary) and the `report` extra (matplotlib).
set -euo pipefail

report_dir=${1:-parity/reports}
out_png=${2:-$report_dir/report.png}
size=${3:-1280x2000}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [[ -z "$browser" ]]; then
    echo "error: no Chromium found; install it (apt-get install chromium) or set CHROMIUM=/path/to/chrome" >&2
    exit 2
fi

page=$(mktemp --suffix=.html)
profile=$(mktemp -d)
trap 'rm -rf "$page" "$profile"' EXIT
python -m parity report --report-dir "$report_dir" --html "$page" >/dev/null
# --no-sandbox: containers often lack the user namespaces Chromium's sandbox needs; the page is
# local, self-contained and has no script.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size="${size/x/,}" --screenshot="$(realpath -m "$out_png")" "file://$page" >/dev/null 2>&1
echo "wrote $out_png (page: python -m parity report --report-dir $report_dir --html PATH)"
