#!/usr/bin/env bash
# bash fuzz/run.sh [SECONDS [FUZZER...]]: builds kiln's libFuzzer targets (cmake/fuzz.cmake,
# fuzz/) in their own build folder, runs each for SECONDS (default 60) from its seeds, prints a
# table (fuzzer, executions, coverage, crashes) and exits 1 if any fuzzer crashed, leaked, ran
# out of memory or timed out on an input. An input that did is saved under
# $BUILD/fuzz-artifacts/NAME/: fix the bug, then commit the input under tests/fuzz_regressions/
# with a test of the normal build that reads it (tests/CMakeLists.txt, the fuzz regressions).
#
# Environment: KILN_FUZZ_BUILD (build folder, default build-fuzz), KILN_FUZZ_PARALLEL (fuzzers
# run at once, default 2: the development machines have 2 cores), KILN_FUZZ_RSS_MB (memory
# limit of one fuzzer, default 2048), KILN_FUZZ_TIMEOUT (seconds one input may take, default 10).
# The corpus each run grows is kept in $BUILD/fuzz-corpus/NAME and seeds the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
build=${KILN_FUZZ_BUILD:-build-fuzz}
parallel=${KILN_FUZZ_PARALLEL:-2}
rss_mb=${KILN_FUZZ_RSS_MB:-2048}
timeout_s=${KILN_FUZZ_TIMEOUT:-10}

# libFuzzer comes with clang's runtime libraries; kiln uses LLVM 16, so clang 16.
if ! command -v clang++-16 >/dev/null || [ ! -e /usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-16 libclang-rt-16-dev >/dev/null
  else
    echo "fuzz/run.sh: needs clang-16 and libclang-rt-16-dev (apt-get install clang-16 libclang-rt-16-dev)" >&2
    exit 2
  fi
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
        -DCMAKE_BUILD_TYPE=Release -DKILN_CROSS_AARCH64=OFF >/dev/null
fi
nice -n 10 cmake --build "$build" -j2 --target kiln_fuzzers
bash fuzz/collect_seeds.sh "$build/fuzz-seeds"

mapfile -t names < "$build/fuzzers.txt"
[ $# -gt 0 ] && names=("$@")
export ASAN_OPTIONS=${ASAN_OPTIONS:-symbolize=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
logs=$build/fuzz-logs
mkdir -p "$logs"

run_one() {
  local name=$1 corpus=$build/fuzz-corpus/$1 artifacts=$build/fuzz-artifacts/$1/
  mkdir -p "$corpus" "$artifacts"
  local args=(-max_total_time="$secs" -rss_limit_mb="$rss_mb" -timeout="$timeout_s" -print_final_stats=1
              -artifact_prefix="$artifacts")
  [ -f "fuzz/$name.dict" ] && args+=(-dict="fuzz/$name.dict")
  local seeds=("$build/fuzz-seeds/$name")
  [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
  # The first folder receives what the run finds; the seeds are only read.
  set +e
  nice -n 10 "$build/bin/fuzz_$name" "${args[@]}" "$corpus" "${seeds[@]}" >"$logs/$name.log" 2>&1
  echo $? >"$logs/$name.status"
  set -e
}

echo "running ${#names[@]} fuzzers for ${secs} s each, ${parallel} at a time (logs in $logs)"
running=0
for name in "${names[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0
printf '\n%-14s %12s %10s %10s %8s  %s\n' fuzzer execs exec/s coverage features crashes
for name in "${names[@]}"; do
  log=$logs/$name.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  status=$(cat "$logs/$name.status")
  verdict=none
  if [ "$status" != 0 ]; then
    failed=1
    verdict="$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+|runtime error|fuzz: [a-z ]+' "$log" || echo "exit $status"); input: $(grep -m1 -o "Test unit written to .*" "$log" | cut -d' ' -f5)"
  fi
  printf '%-14s %12s %10s %10s %8s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$verdict"
done
[ "$failed" = 0 ] || { echo "fuzz/run.sh: a fuzzer found a crash (logs in $logs)"; exit 1; }
