#!/usr/bin/env bash
# The walkthrough behind `make demo`: starts the projector on embedded
# defaults (in-process JetStream + the embedded table store, in a fresh data
# folder), publishes commands with the writer, and travels in time with
# replay, and serves the web console (docs/console.md). Everything runs on
# loopback and stops at the end; with DEMO_KEEP=1 the projector and its
# console keep running and the script prints the URL and how to stop them.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=$(mktemp -d)
data=$(mktemp -d)
port=${DEMO_PORT:-14222}
console_port=${DEMO_CONSOLE_PORT:-8089}
console="http://127.0.0.1:$console_port"
export TABLEJOURNAL_NATS="nats://127.0.0.1:$port"
export TABLEJOURNAL_DATA="$data"

echo "== building projector, writer and replay"
go build -o "$bin/" ./cmd/projector ./cmd/writer ./cmd/replay

echo "== starting the projector: embedded JetStream on 127.0.0.1:$port, embedded store, data in $data"
echo "   with the web console on $console"
# Kept running, the projector must not hold this script's output open.
plog=/dev/stderr
if [ "${DEMO_KEEP:-}" = 1 ]; then
	plog="$data/projector.log"
fi
env -u TABLEJOURNAL_NATS "$bin/projector" --nats-listen "127.0.0.1:$port" --log-level error --console-addr "127.0.0.1:$console_port" >>"$plog" 2>&1 &
projector=$!
cleanup() {
	if [ "${DEMO_KEEP:-}" = 1 ]; then
		return
	fi
	kill -INT "$projector" 2>/dev/null && wait "$projector" 2>/dev/null || true
	rm -rf "$bin" "$data"
}
trap cleanup EXIT

# The projector creates the journal on start; wait until it answers.
for _ in $(seq 1 100); do
	"$bin/writer" upsert --table demo --pk warmup --rk ping --set ok:bool=true --id warmup --wait >/dev/null 2>&1 && break
	sleep 0.1
done

step() { echo; echo "\$ $*"; "$@"; }
w() { step writer "$@"; }
writer() { "$bin/writer" "$@"; }
replay() { "$bin/replay" "$@"; }

echo; echo "== publishing commands (each waits for the projector's outcome)"
w insert --table orders --pk customer-42 --rk order-7 --id c1 --wait \
	--set status=new --set total:double=12.5 --set qty:int64=9007199254740993 --set placed:datetime=2026-11-21T10:00:00.1234567Z
w merge --table orders --pk customer-42 --rk order-7 --id c2 --wait --set status=paid
w upsert --table orders --pk customer-42 --rk order-8 --id c3 --wait --set status=new --set total:double=3
w replace --table orders --pk customer-42 --rk order-7 --id c4 --wait --if-version 1 --set status=shipped --set total:double=12.5
w delete --table orders --pk customer-42 --rk order-7 --id c5 --wait
w insert --table orders --pk customer-42 --rk order-7 --id c6 --wait --set status=reordered
echo; echo "# an insert of a row that exists is rejected (exit status 3) and changes nothing:"
w insert --table orders --pk customer-42 --rk order-8 --id c7 --wait --set status=dup || echo "(exit status $?)"

echo; echo "== the current rows, one range query over the tip rows"
step replay asof --table orders --pk customer-42

echo; echo "== every version of order-7, with the commands that wrote them"
step replay history --table orders --pk customer-42 --rk order-7

echo; echo "== time travel: the partition just after command c2, and what c4 did"
step replay asof --table orders --pk customer-42 --cmd c2
step replay blame --cmd c4

echo; echo "== undo: c5 (the delete) conflicts with the later re-insert c6, so the dry run refuses; undo c6 instead, through the journal"
step replay undo --cmd c5 || true
step replay undo --cmd c6 --apply || echo "(exit status $?)"
step replay asof --table orders --pk customer-42 --rk order-7

echo; echo "== the web console: the same history in a browser"
curl -fsS -o /dev/null "$console/journal" && echo "console answering on $console"
echo "  journal:      $console/journal"
echo "  blame of c4:  $console/command?id=c4"
echo "  order-7:      $console/row?table=orders&pk=customer-42&rk=order-7"
echo "  as of c2:     $console/asof?table=orders&pk=customer-42&at=cmd:c2"
echo "  the rejection: $console/journal?status=rejected"
echo "  health:       $console/health"

if [ "${DEMO_KEEP:-}" = 1 ]; then
	echo; echo "== DEMO_KEEP=1: the projector (pid $projector) and its console stay up"
	echo "console: $console/"
	echo "projector log: $plog"
	echo "stop with: kill -INT $projector; rm -rf $bin $data"
	disown "$projector"
	exit 0
fi
echo; echo "== done: stopping the projector"
