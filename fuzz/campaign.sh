#!/usr/bin/env bash
# Long fuzz campaign: each target until 10M executions or 1 hour, whichever
# first, two targets at a time, niced. Logs in fuzz/work/logs/<target>.log,
# a summary line per target in fuzz/work/campaign.txt.
set -u
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1 ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
mkdir -p work/logs
run() {
  t=$1
  mkdir -p work/corpus/$t artifacts/$t
  start=$(date +%s)
  nice -n 10 cargo fuzz run -O "$t" work/corpus/$t corpus/$t -- \
    -runs=10000000 -max_total_time=3600 -artifact_prefix=artifacts/$t/ \
    -print_final_stats=1 2>&1 | grep -av 'AddressSanitizer failed to allocate' > work/logs/$t.log
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  execs=$(grep -a 'stat::number_of_executed_units' work/logs/$t.log | awk '{print $2}')
  echo "$t rc=$rc execs=${execs:-?} seconds=$((end - start))" >> work/campaign.txt
}
queue=("$@")
[ ${#queue[@]} -eq 0 ] && queue=(bloom_header bloom_rdb cuckoo_header cuckoo_rdb args bloom_chunks cuckoo_chunks bloom_model cuckoo_model)
for ((i = 0; i < ${#queue[@]}; i += 2)); do
  run "${queue[$i]}" &
  [ -n "${queue[$((i + 1))]:-}" ] && run "${queue[$((i + 1))]}" &
  wait
done
echo "campaign done $(date -u +%FT%TZ)" >> work/campaign.txt
