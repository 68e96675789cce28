#!/usr/bin/env bash
# The steps of the sonnx-check GitHub Action (action.yml), as one script so that CI can run exactly what
# a workflow runs. Inputs arrive as environment variables, as the composite action passes them:
#   SONNX_CHECK_SOURCE   what to install: the action's own checkout (pinned by the tag a workflow names)
#   SONNX_CHECK_PATHS    models and folders to check, separated by white space (default: .)
#   SONNX_CHECK_FORMAT   the log's format (default: github, annotations on the pull request)
#   SONNX_CHECK_SARIF    a SARIF file to write beside the log (empty: none)
#   SONNX_CHECK_ARGS     more options, split as a shell splits words (e.g. "--compare --fail-on warning")
#   SONNX_CHECK_INSTALL  "true" (default) installs with the pinned constraints; "false" uses the
#                        sonnx-check already on PATH
# It exits with sonnx-check's own code (0 conforms, 1 findings, 2 usage or unreadable model, 3 internal).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="${SONNX_CHECK_SOURCE:-$(dirname "$here")}"

if [ "${SONNX_CHECK_INSTALL:-true}" = "true" ]; then
  python3 -m venv "${RUNNER_TEMP:-/tmp}/sonnx-check-venv"
  venv="${RUNNER_TEMP:-/tmp}/sonnx-check-venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    --constraint "$here/constraints.txt" "$source_dir"
  command=("$venv/bin/sonnx-check")
else
  command=(sonnx-check)
fi

read -r -a paths <<< "${SONNX_CHECK_PATHS:-.}"
read -r -a extra <<< "${SONNX_CHECK_ARGS:-}"
options=(--format "${SONNX_CHECK_FORMAT:-github}")
if [ -n "${SONNX_CHECK_SARIF:-}" ]; then
  options+=(--output-format "sarif:${SONNX_CHECK_SARIF}")
fi

"${command[@]}" --version
exec "${command[@]}" "${options[@]}" "${extra[@]}" -- "${paths[@]}"
