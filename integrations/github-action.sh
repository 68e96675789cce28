#!/usr/bin/env bash
# The steps of the sonnx-check GitHub Action (action.yml), as one script so that CI can run exactly what
# a workflow runs. Inputs arrive as environment variables, as the composite action passes them:
#   SONNX_CHECK_SOURCE   what to install: the action's own checkout (pinned by the tag a workflow names)
#   SONNX_CHECK_PATHS    models and folders to check, split with shell rules (default: .)
#   SONNX_CHECK_FORMAT   the log's format (default: github, annotations on the pull request)
#   SONNX_CHECK_SARIF    a SARIF file to write beside the log (empty: none)
#   SONNX_CHECK_ARGS     more options, split with shell rules: quotes group words, as in
#                        --runtime-command "python run.py --board 3"; nothing is expanded or run
#   SONNX_CHECK_EXTRAS   extras to install with it, separated by commas (e.g. "report" for html:PATH)
#   SONNX_CHECK_INSTALL  "true" (default) installs with the pinned constraints; "false" uses the
#                        sonnx-check already on PATH
# It exits with sonnx-check's own code (0 conforms, 1 findings, 2 usage or unreadable model, 3 internal);
# an input that cannot be split (an unclosed quote) or an invalid extra is a usage error, exit 2.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="${SONNX_CHECK_SOURCE:-$(dirname "$here")}"

# Shell rules without a shell: Python's shlex (POSIX mode) splits the words and prints them NUL-separated,
# so a quoted value stays one argument and $(...), ;, * and ~ stay characters.
split() {  # split NAME VALUE: the words of VALUE, NUL-terminated, or one error line naming the input
  python3 -c '
import shlex, sys
try:
    words = shlex.split(sys.argv[2])
except ValueError as error:
    sys.exit(f"sonnx-check action: error: input {sys.argv[1]}: {error} (quote with \"...\" or escape with \\)")
sys.stdout.write("".join(word + "\0" for word in words))
' "$1" "$2"
}

paths_words="$(split paths "${SONNX_CHECK_PATHS:-.}" | base64 -w0)" || exit 2
args_words="$(split args "${SONNX_CHECK_ARGS:-}" | base64 -w0)" || exit 2
mapfile -d '' -t paths < <(printf '%s' "$paths_words" | base64 -d)
mapfile -d '' -t extra < <(printf '%s' "$args_words" | base64 -d)
if [ "${#paths[@]}" -eq 0 ]; then
  paths=(.)
fi

extras="${SONNX_CHECK_EXTRAS:-}"
extras="${extras// /}"
if [ -n "$extras" ] && ! [[ "$extras" =~ ^[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*$ ]]; then
  echo "sonnx-check action: error: input extras: '${extras}' is not a comma-separated list of extras (e.g. report)" >&2
  exit 2
fi

if [ "${SONNX_CHECK_INSTALL:-true}" = "true" ]; then
  venv="${RUNNER_TEMP:-/tmp}/sonnx-check-venv"
  python3 -m venv "$venv"
  target="$source_dir"
  if [ -n "$extras" ]; then
    target="${source_dir}[${extras}]"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    --constraint "$here/constraints.txt" "$target"
  command=("$venv/bin/sonnx-check")
else
  command=(sonnx-check)
fi

options=(--format "${SONNX_CHECK_FORMAT:-github}")
if [ -n "${SONNX_CHECK_SARIF:-}" ]; then
  options+=(--output-format "sarif:${SONNX_CHECK_SARIF}")
fi

"${command[@]}" --version
exec "${command[@]}" "${options[@]}" "${extra[@]}" -- "${paths[@]}"
