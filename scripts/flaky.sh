#!/usr/bin/env bash
# The flakiness census behind `make flaky`: runs each package's tests COUNT
# times under -race, PARALLEL packages at once and each run at every -cpu
# value in CPU, so tests meet a busy, slow scheduler, then prints every test
# that failed at least once with its runs, failures, failure rate and the
# first line of its first failure, and how long the census took.
#
# Settings (environment):
#   PKGS      packages to run, as go list patterns (default: ./...)
#   SKIP      extended regexp of import paths to leave out (default: none),
#             e.g. SKIP='/projection$' for everything but projection
#   COUNT     runs of each test per -cpu value (default 10)
#   CPU       the -cpu list (default 1,2: every test runs COUNT times
#             with GOMAXPROCS=1 and COUNT times with GOMAXPROCS=2)
#   PARALLEL  packages tested at once (default 2)
#   TIMEOUT   -timeout of each package's go test (default 60m)
#   OUT       folder for the raw `go test -json` output (default: a temp dir)
#   FIRST     import path suffixes started first, in this order: the
#             slowest packages, so none of them runs alone at the end
#
# Exits 1 when any test failed. Example, journal alone 50 times:
#   PKGS=./journal COUNT=50 make flaky
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=${PKGS:-./...}
SKIP=${SKIP:-}
COUNT=${COUNT:-10}
CPU=${CPU:-1,2}
PARALLEL=${PARALLEL:-2}
TIMEOUT=${TIMEOUT:-60m}
OUT=${OUT:-$(mktemp -d -t flaky.XXXXXX)}
FIRST=${FIRST:-/projection /tests/system /replay /journal /cmd/internal/cli /cmd/tests /cmd/replay/replaycmd /cmd/projector/projectorcmd}
mkdir -p "$OUT"

# shellcheck disable=SC2086 # PKGS is a list of patterns
pkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $PKGS)
if [ -n "$SKIP" ]; then
	pkgs=$(grep -Ev -- "$SKIP" <<<"$pkgs" || true)
fi
first=
for suffix in $FIRST; do
	first+=$(grep -E -- "${suffix}\$" <<<"$pkgs" || true)$'\n'
done
pkgs=$({ printf '%s' "$first"; grep -vxF -f <(printf '%s' "$first" | sed '/^$/d') <<<"$pkgs" || true; } | sed '/^$/d')
if [ -z "$pkgs" ]; then
	echo "flaky: no packages with tests in PKGS=$PKGS (SKIP=$SKIP)" >&2
	exit 2
fi

echo "flaky: $(wc -l <<<"$pkgs") packages, -count=$COUNT -cpu=$CPU, $PARALLEL at once, output in $OUT"
go test -race -count=1 -run '^$' $pkgs >/dev/null # build (and cache) every test binary first

start=$(date +%s)
export COUNT CPU TIMEOUT OUT
xargs -P "$PARALLEL" -I{} bash -c '
	pkg={}
	file="$OUT/$(tr / _ <<<"$pkg").json"
	t0=$(date +%s)
	go test -race -json -count="$COUNT" -cpu="$CPU" -timeout="$TIMEOUT" "$pkg" >"$file" 2>&1 || true
	echo "flaky: $pkg done in $(( $(date +%s) - t0 ))s"
' <<<"$pkgs"
elapsed=$(( $(date +%s) - start ))

echo
status=0
go run ./scripts/flakyreport "$OUT"/*.json || status=$?
printf 'flaky: ran for %dm%02ds (-count=%s -cpu=%s, %s packages at once)\n' $((elapsed / 60)) $((elapsed % 60)) "$COUNT" "$CPU" "$PARALLEL"
exit "$status"
