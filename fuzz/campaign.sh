#!/usr/bin/env bash
# Long fuzz campaign: each target until RUNS executions (default 10M; -1 for
# no limit) or SECONDS_EACH (default 1 hour), whichever first, PARALLEL
# targets at a time (default 2), niced. Logs in
# fuzz/work/logs/<target>.log, a summary line per target (executions, wall
# and CPU seconds: the CPU share is lower when targets outnumber cores) in
# fuzz/work/campaign.txt.
set -u
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1 ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
mkdir -p work/logs
run() {
  t=$1
  mkdir -p work/corpus/$t artifacts/$t
  start=$(date +%s)
  nice -n 10 /usr/bin/time -f '%U %S' -o work/logs/$t.cpu cargo fuzz run -O "$t" work/corpus/$t corpus/$t -- \
    -runs=${RUNS:-10000000} -max_total_time=${SECONDS_EACH:-3600} -artifact_prefix=artifacts/$t/ \
    -print_final_stats=1 2>&1 | grep -av 'AddressSanitizer failed to allocate' > work/logs/$t.log
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  execs=$(grep -a 'stat::number_of_executed_units' work/logs/$t.log | awk '{print $2}')
  # The last line: /usr/bin/time first notes a non-zero exit status.
  cpu=$(tail -n 1 work/logs/$t.cpu 2>/dev/null | awk '{printf "%d", $1 + $2}')
  echo "$t rc=$rc execs=${execs:-?} seconds=$((end - start)) cpu_seconds=${cpu:-?}" >> work/campaign.txt
}
queue=("$@")
[ ${#queue[@]} -eq 0 ] && queue=($(basename -s .rs src/bin/*.rs))
parallel=${PARALLEL:-2}
for ((i = 0; i < ${#queue[@]}; i += parallel)); do
  for t in "${queue[@]:i:parallel}"; do run "$t" & done
  wait
done
echo "campaign done $(date -u +%FT%TZ)" >> work/campaign.txt
