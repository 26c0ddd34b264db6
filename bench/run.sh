#!/usr/bin/env bash
# bench/run.sh — the gateway benchmark (`make bench`). One run measures, on this
# machine and in this invocation:
#   (a) the mock upstream directly, (b) a bare httputil reverse proxy,
#   (c1) the gateway on SQLite, (c2) the gateway on PostgreSQL (skipped with a
#   notice when Postgres is unreachable),
# each for max throughput (closed loop), latency at a fixed rate (open loop,
# from the scheduled send time), CPU per request, streaming time to first
# chunk, idle RSS and RSS per held stream; then prints a markdown table with
# ratios against (a) and (b) and PASS/MISS per target, also written to
# bench/last-run.md. See docs/BENCHMARKS.md.
#
# Knobs (environment): BENCH_DURATION (10s), BENCH_WARMUP (2s), BENCH_CONNS (50),
# BENCH_RATE (500), BENCH_STREAM_RATE (100), BENCH_STREAM_DURATION (5s),
# BENCH_HOLD (1000), BENCH_HOLDFOR (5s), BENCH_PG_HOST (127.0.0.1),
# BENCH_PG_USER (postgres), BENCH_SKIP_PG=1, BENCH_KEEP=1 (keep the work dir).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BIN=$ROOT/bin

DUR=${BENCH_DURATION:-10s}
WARM=${BENCH_WARMUP:-2s}
CONNS=${BENCH_CONNS:-50}
RATE=${BENCH_RATE:-500}
STREAM_RATE=${BENCH_STREAM_RATE:-100}
STREAM_DUR=${BENCH_STREAM_DURATION:-5s}
HOLD=${BENCH_HOLD:-1000}
HOLDFOR=${BENCH_HOLDFOR:-5s}
PG_HOST=${BENCH_PG_HOST:-127.0.0.1}
PG_USER=${BENCH_PG_USER:-postgres}
MASTER=sk-admin-bench
MOCK_KEY=sk-mock
MODEL=gpt-4o-mini
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- build
log "building bin/gateway, bin/mockupstream, bin/loadgen, bin/bareproxy"
mkdir -p "$BIN"
# The gateway as `make build` builds it (release flags live in the Makefile).
make -s build || die "make build failed"
go build -o "$BIN/mockupstream" ./cmd/mockupstream || die "go build ./cmd/mockupstream failed"
go build -o "$BIN/loadgen" ./bench/loadgen
go build -o "$BIN/bareproxy" ./bench/bareproxy
LG=$BIN/loadgen

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gwbench.XXXXXX")
PIDS=()
PG_DB=""
cleanup() {
	local p
	for p in "${PIDS[@]}"; do stop_pid "$p"; done
	if [[ -n $PG_DB ]]; then
		dropdb -h "$PG_HOST" -U "$PG_USER" --if-exists "$PG_DB" >/dev/null 2>&1 || true
	fi
	if [[ ${BENCH_KEEP:-0} == 1 ]]; then
		log "work dir kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
# stop_pid sends SIGTERM, waits up to 15 s, then SIGKILL. Only our own children.
stop_pid() {
	local p=$1 i
	kill -0 "$p" 2>/dev/null || return 0
	kill -TERM "$p" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		kill -0 "$p" 2>/dev/null || { wait "$p" 2>/dev/null || true; return 0; }
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r MOCK_PORT BARE_PORT GW_PORT < <("$LG" freeport -n 3)

# ---------------------------------------------------------------- upstreams
log "starting the mock upstream on 127.0.0.1:$MOCK_PORT and the bare proxy on :$BARE_PORT"
"$BIN/mockupstream" --addr "127.0.0.1:$MOCK_PORT" ${MOCK_EXTRA_FLAGS:-} >"$WORK/mock.log" 2>&1 &
MOCK_PID=$!
PIDS+=("$MOCK_PID")
"$BIN/bareproxy" -addr "127.0.0.1:$BARE_PORT" -upstream "http://127.0.0.1:$MOCK_PORT" >"$WORK/bare.log" 2>&1 &
BARE_PID=$!
PIDS+=("$BARE_PID")

CHAT=/v1/chat/completions
# The mock takes per-request directives in the model name: SLOW_MODEL streams
# 300 one-word chunks 200 ms apart (60 s), long enough to hold streams open.
SLOW_MODEL="$MODEL+chunks-300+gap-200"
body() { # body MODEL [stream [MAX_TOKENS]]
	if [[ ${2:-} == stream ]]; then
		printf '{"model":"%s","messages":[{"role":"user","content":"Hello"}],"max_tokens":%s,"stream":true}' "$1" "${3:-16}"
	else
		printf '{"model":"%s","messages":[{"role":"user","content":"Hello"}],"max_tokens":16}' "$1"
	fi
}
wait_ready() { # wait_ready URL WHAT LOG
	"$LG" wait -url "$1" -timeout 30s 2>/dev/null && return 0
	printf 'bench: %s did not come up; last lines of its log:\n' "$2" >&2
	tail -n 20 "$3" >&2 || true
	return 1
}
# The mock answers model calls only; readiness = a chat completion returning 200.
wait_mock() { # wait_mock PORT LOG
	local i
	for ((i = 0; i < 100; i++)); do
		if "$LG" -url "http://127.0.0.1:$1$CHAT" -body "$(body "$MODEL")" -header "Authorization: Bearer $MOCK_KEY" \
			-c 1 -duration 50ms -warmup 0s -json 2>/dev/null | grep -q '"requests":[1-9][0-9]*,"errors":0,"non2xx":0'; then
			return 0
		fi
		sleep 0.1
	done
	printf 'bench: mock on :%s not answering; log:\n' "$1" >&2
	tail -n 20 "$2" >&2 || true
	return 1
}
wait_mock "$MOCK_PORT" "$WORK/mock.log" || die "mock upstream failed"
wait_mock "$BARE_PORT" "$WORK/bare.log" || die "bare proxy failed"

# ---------------------------------------------------------------- measuring
# suite NAME BASEURL MODEL AUTH PID: fixed rate (latency, CPU), streaming first
# chunk, then max throughput.
suite() {
	local name=$1 base=$2 model=$3 auth=$4 pid=$5
	local common=(-url "$base$CHAT" -header "Authorization: Bearer $auth")
	"$LG" "${common[@]}" -name "$name-rate" -body "$(body "$model")" -rate "$RATE" -c "$CONNS" \
		-duration "$DUR" -warmup "$WARM" -pid "$pid" -clktck "$CLK_TCK" -json >"$WORK/$name-rate.json" || return 1
	"$LG" "${common[@]}" -name "$name-stream" -body "$(body "$model" stream)" -stream -rate "$STREAM_RATE" -c "$CONNS" \
		-duration "$STREAM_DUR" -warmup 1s -json >"$WORK/$name-stream.json" || return 1
	"$LG" "${common[@]}" -name "$name-max" -body "$(body "$model")" -c "$CONNS" \
		-duration "$DUR" -warmup "$WARM" -pid "$pid" -clktck "$CLK_TCK" -json >"$WORK/$name-max.json" || return 1
}
# memory NAME BASEURL MODEL SLOWMODEL AUTH PID: idle RSS after a short warm-up
# and idle, then RSS per held stream. Runs before the heavy load so the heap
# has no slack left by it that held streams could hide in.
memory() {
	local name=$1 base=$2 model=$3 slow=$4 auth=$5 pid=$6
	"$LG" -name "$name-warm" -url "$base$CHAT" -header "Authorization: Bearer $auth" -body "$(body "$model")" \
		-c 4 -duration 2s -warmup 0s -json >"$WORK/$name-warm.json" || return 1
	sleep 2
	"$LG" rss -pid "$pid" >"$WORK/$name-idle.json" || return 1
	"$LG" -name "$name-hold" -url "$base$CHAT" -header "Authorization: Bearer $auth" -body "$(body "$slow" stream 1000)" \
		-hold "$HOLD" -holdfor "$HOLDFOR" -timeout 30s -pid "$pid" -json >"$WORK/$name-hold.json" || return 1
	sleep 1
}

# The machine is shared: record how busy it was as each target started, so a
# noisy figure can be told from a slow one. Our own previous runs count too.
loadavg() { cut -d' ' -f1 /proc/loadavg >"$WORK/$1-loadavg.txt"; }
read -r LOAD1 _ </proc/loadavg
if awk -v l="$LOAD1" 'BEGIN { exit !(l > 1.0) }'; then
	log "NOTICE: 1-min load average is $LOAD1 before the run: other work on this machine will add noise"
fi

log "(a) direct to the mock"
loadavg direct
suite direct "http://127.0.0.1:$MOCK_PORT" "$MODEL" "$MOCK_KEY" "$MOCK_PID" || die "direct runs failed"

log "(b) bare httputil reverse proxy"
loadavg bare
memory bare "http://127.0.0.1:$BARE_PORT" "$MODEL" "$SLOW_MODEL" "$MOCK_KEY" "$BARE_PID" || die "bare proxy memory runs failed"
suite bare "http://127.0.0.1:$BARE_PORT" "$MODEL" "$MOCK_KEY" "$BARE_PID" || die "bare proxy runs failed"

# gateway NAME DRIVER DSN: start, configure through the admin API, measure, stop.
gateway() {
	local name=$1 driver=$2 dsn=$3 key pid rc=0
	log "(c) gateway, $driver"
	loadavg "$name"
	GATEWAY_SERVER_PORT=$GW_PORT \
		GATEWAY_DATABASE_DRIVER=$driver \
		GATEWAY_DATABASE_DSN=$dsn \
		GATEWAY_ADMIN_MASTER_KEY=$MASTER \
		GATEWAY_SERVER_MODE=release \
		GATEWAY_LOG_LEVEL=warn \
		"$BIN/gateway" >"$WORK/gateway-$name.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	if ! wait_ready "http://127.0.0.1:$GW_PORT/health" "gateway ($driver)" "$WORK/gateway-$name.log"; then
		stop_pid "$pid"
		echo "gateway did not become healthy (see its log)" >"$WORK/$name-skipped.txt"
		return 1
	fi
	if ! key=$("$LG" setup -admin "http://127.0.0.1:$GW_PORT" -master "$MASTER" \
		-upstream "http://127.0.0.1:$MOCK_PORT/v1" -upstream-key "$MOCK_KEY" \
		-model "$MODEL" -slow-model "$SLOW_MODEL"); then
		stop_pid "$pid"
		echo "admin API setup failed" >"$WORK/$name-skipped.txt"
		return 1
	fi
	memory "$name" "http://127.0.0.1:$GW_PORT" bench-model bench-model-slow "$key" "$pid" || rc=1
	suite "$name" "http://127.0.0.1:$GW_PORT" bench-model "$key" "$pid" || rc=1
	stop_pid "$pid"
	if [[ $rc != 0 ]]; then
		echo "a load run failed (see above)" >"$WORK/$name-skipped.txt"
	fi
	return $rc
}

status=0
gateway sqlite sqlite "$WORK/bench.db" || status=1

if [[ ${BENCH_SKIP_PG:-0} == 1 ]]; then
	echo "BENCH_SKIP_PG=1" >"$WORK/pg-skipped.txt"
	log "PostgreSQL run skipped: BENCH_SKIP_PG=1"
elif ! pg_isready -q -h "$PG_HOST" -t 3 >/dev/null 2>&1 ||
	! psql -h "$PG_HOST" -U "$PG_USER" -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
	echo "PostgreSQL unreachable at $PG_HOST as $PG_USER" >"$WORK/pg-skipped.txt"
	log "NOTICE: PostgreSQL unreachable at $PG_HOST as $PG_USER: PostgreSQL run skipped"
else
	PG_DB=gwbench_$$_$RANDOM
	createdb -h "$PG_HOST" -U "$PG_USER" "$PG_DB" || die "createdb $PG_DB failed"
	gateway pg postgres "host=$PG_HOST user=$PG_USER dbname=$PG_DB sslmode=disable" || status=1
fi

# ---------------------------------------------------------------- report
echo
"$LG" report -dir "$WORK" -out "$ROOT/bench/last-run.md" -go "$(go env GOVERSION)" -cmd "${BENCH_CMD:-make bench}"
log "table written to bench/last-run.md"
exit $status
