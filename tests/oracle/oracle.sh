# Sourced by the regen scripts: sets ROOT (the repository), ORACLE (the reference CLI,
# .oracle/bin/pt-snap unless ORACLE=... is given; checked to be pt-snap-cli 0.4.1) and
# PYTHON (python3 unless PYTHON=... is given); `oracle_tmp NAME` sets TMP to a fresh
# directory "$TMPDIR/NAME.XXXXXX" (its physical path) removed when the script exits.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/oracle.sh"
#   oracle_tmp pt-snap-report
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ORACLE="${ORACLE:-$ROOT/.oracle/bin/pt-snap}"
PYTHON="${PYTHON:-python3}"

[ -x "$ORACLE" ] || { echo "oracle not found: $ORACLE" >&2; exit 1; }
"$ORACLE" --version | grep -q '0\.4\.1' || { echo "oracle is not pt-snap-cli 0.4.1" >&2; exit 1; }

oracle_tmp() {
  TMP="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  TMP="$(cd "$TMP" && pwd -P)"
}
