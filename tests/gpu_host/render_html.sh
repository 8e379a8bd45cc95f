#!/usr/bin/env bash
# Renders executed notebooks (the ones tests/gpu_host/run_interop.sh brings back from the GPU host)
# as HTML under docs/notebooks/, with nbconvert's JupyterLab template, for readers who want to see
# results without running anything:
#
#   bash tests/gpu_host/render_html.sh FOLDER        # the folder that holds the executed .ipynb files
#
# Uses Debian's nbconvert (python3-nbconvert, with jupyter-notebook) for /usr/bin/python3.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
from=${1:?usage: render_html.sh FOLDER_WITH_EXECUTED_NOTEBOOKS}
mkdir -p "$repo/docs/notebooks"
for notebook in "$from"/*.ipynb; do
  /usr/bin/python3 -m nbconvert --to html --template lab --output-dir "$repo/docs/notebooks" "$notebook"
done
ls -la "$repo/docs/notebooks"
