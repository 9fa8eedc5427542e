#!/usr/bin/env bash
# Runs the benchmark suite, summarises it with benchstat and writes
# RESULTS.md (the method is in README.md).
#
#   ./run.sh                        # 6 passes, -benchtime 500ms, the benchmarks of the tables below
#   COUNT=10 BENCHTIME=1s ./run.sh  # more samples, longer runs
#   BENCH='Zipfian|Stampede' ./run.sh
#   BENCH=. ./run.sh                # also the lock, stock, codec, compression,
#                                   # Bloom and promotion benchmarks, which the
#                                   # generated tables do not show (RESULTS.md
#                                   # lists the commands for their figures)
#   COUNT=3 BENCHTIME=1x BENCH='Stampede|MassExpiry' RESULTS=/tmp/RESULTS.md OUT=/tmp/results \
#     CHART=/tmp/curves.svg ./run.sh # a check of the whole pipeline that leaves
#                                   # RESULTS.md, curves.svg and results/ alone
#   CEILING=0 ./run.sh              # without the server's ceiling (redis-benchmark)
#
# After each pass, redis-benchmark measures the server's own ceiling (its
# pipelined GET rate) on the same server; the rate goes into raw.txt as a
# benchmark line (Ceiling/...), so benchstat summarises it with the rest.
#
# The suite runs COUNT times in a row (-count 1 each time) rather than once
# with -count COUNT: each sample of a benchmark then comes from a different
# pass, so a slow stretch of a shared machine spreads over all benchmarks
# instead of spoiling all samples of one. Within a pass, the scenarios that
# run in rounds (stampede, mass expiry) run every library in one loop, taking
# turns, and report each library's median (interleave_test.go); benchstat then
# gives the median of the passes and its interval, and the headline marks a
# row ahead or behind only when the intervals do not overlap. All passes use one redis-server
# started here, so the zipfian rows are written to Redis once.
#
# Needs go and redis-server on PATH. The raw output, benchstat's summaries
# and the machine description are kept in results/.
set -euo pipefail
cd "$(dirname "$0")"

# Six passes: the fewest for which benchstat gives a 95 % interval, and
# enough for a 90 % one on every row.
COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-500ms}
# The benchmarks the report turns into tables (report/main.go, tables).
BENCH=${BENCH:-'^Benchmark(RedisHit|RedisHitSerial|Paired|LockUncontendedPaired|LocalHit|LocalHitRatio|LocalStoreMemory|RedisMemory|Zipfian|Stampede|Penetration|MassExpiry|InvalidationRace|ColdStorm|FaultStorm|CPUPerGet|Curve|CurveCluster|BatchRead|HotKeyCluster|ReplicaReads)$'}
# The server's ceiling after each pass (1) or not (0).
CEILING=${CEILING:-1}
RESULTS=${RESULTS:-RESULTS.md}
# The chart of the concurrency curves (report/curves.go).
CHART=${CHART:-curves.svg}
out=${OUT:-results}
# benchstat, pinned (golang.org/x/perf has no tagged releases).
BENCHSTAT=${BENCHSTAT:-golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}

command -v redis-server >/dev/null || { echo "run.sh: redis-server is not on PATH" >&2; exit 1; }
if [ "$CEILING" = 1 ] && ! command -v redis-benchmark >/dev/null; then
	echo "run.sh: redis-benchmark is not on PATH (CEILING=0 runs without the server's ceiling)" >&2
	exit 1
fi

mkdir -p "$out"

# One redis-server for every pass, on a free loopback port, without
# persistence; stopped on exit.
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 16379)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --loglevel warning >/dev/null 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.1
done
export CACHEGUARD_BENCH_REDIS=127.0.0.1:$port

pass="go test -run '^\$' -bench '$BENCH' -benchtime $BENCHTIME -count 1 -timeout 60m ."
cmd="for i in \$(seq $COUNT); do $pass; done   # against one redis-server (CACHEGUARD_BENCH_REDIS)"
if [ "$CEILING" = 1 ]; then
	cmd="$cmd; after each pass: redis-benchmark -P 16 -t get -n 1000000 -r 10000 --csv"
fi

# The server's ceiling (report/ceiling.go: the command is written there
# too): 10 000 keys of 130 bytes (about a row's size) set once, then
# redis-benchmark's GET rate with 16 commands per pipeline, as a benchmark
# line for raw.txt.
ceiling_fill="redis-benchmark -h 127.0.0.1 -p $port -P 16 -t set -n 200000 -r 10000 -d 130 -q"
ceiling_get="redis-benchmark -h 127.0.0.1 -p $port -P 16 -t get -n 1000000 -r 10000 --csv"
ceiling() {
	local rps
	rps=$($ceiling_get | awk -F'"' '$2 == "GET" { print $4 }') || true
	if [ -z "$rps" ]; then
		echo "run.sh: redis-benchmark gave no GET rate" >&2
		return
	fi
	awk -v r="$rps" 'BEGIN { printf "BenchmarkCeiling/tool=redis-benchmark/pipeline=16\t1\t%.1f ns/op\t%.0f gets/s\n", 1e9 / r, r }'
}

machine() {
	local cpu
	cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
	echo "CPU: ${cpu:-unknown}, $(nproc) cores (GOMAXPROCS $(nproc))"
	echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo 2>/dev/null || echo unknown)"
	echo "OS: $(uname -sr)"
	echo "Go: $(go env GOVERSION)"
	echo "Redis: $(redis-server --version | sed 's/ sha=.*//')"
	echo "load average when the run started: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
}
machine >"$out/machine.txt"
# go-redis's own log lines, kept out of the benchmark output (server_test.go).
export CACHEGUARD_BENCH_CLIENT_LOG=$out/client-log.txt
: >"$CACHEGUARD_BENCH_CLIENT_LOG"

start=$(date +%s)
: >"$out/raw.txt"
[ "$CEILING" = 1 ] && $ceiling_fill >/dev/null
for i in $(seq "$COUNT"); do
	echo "pass $i of $COUNT: $pass" >&2
	eval "$pass" | tee -a "$out/raw.txt"
	if [ "$CEILING" = 1 ]; then
		echo "pass $i of $COUNT: the server's ceiling: $ceiling_get" >&2
		ceiling | tee -a "$out/raw.txt"
	fi
done
echo "load average when the run ended: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >>"$out/machine.txt"
echo "duration: $(($(date +%s) - start)) s" >>"$out/machine.txt"

# With 5 samples benchstat can give a 90 % confidence interval, not a 95 % one.
go run "$BENCHSTAT" -confidence 0.9 "$out/raw.txt" >"$out/benchstat.txt"
go run "$BENCHSTAT" -confidence 0.9 -format csv "$out/raw.txt" >"$out/benchstat.csv" 2>/dev/null

go run ./report -csv "$out/benchstat.csv" -machine "$out/machine.txt" -command "$cmd" -out "$RESULTS" -chart "$CHART"
echo "$RESULTS written; benchstat's summary is in $out/benchstat.txt" >&2
