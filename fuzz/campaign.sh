#!/usr/bin/env bash
# Runs fuzz targets (all the files of src/bin/ when none is named): each until
# RUNS executions (default 10M; -1 for no limit) or SECONDS_EACH (default
# 1 hour), whichever first, PARALLEL targets at a time (default 2), at
# NICE (default 10). `make fuzz` and `make fuzz-ci` are short campaigns.
# Logs in fuzz/work/logs/<target>.log, a summary line per target (executions,
# wall and CPU seconds: the CPU share is lower when targets outnumber cores)
# in fuzz/work/campaign.txt and on standard output. Exits non-zero, naming
# the targets, when one found something (reproducers in artifacts/<target>/).
set -u
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1 ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
mkdir -p work/logs
run() {
  t=$1
  mkdir -p work/corpus/$t artifacts/$t
  start=$(date +%s)
  # shellcheck disable=SC2086 # FUZZ_FLAGS: libFuzzer flags, word-split on purpose
  nice -n "${NICE:-10}" /usr/bin/time -f '%U %S' -o work/logs/$t.cpu cargo fuzz run -O "$t" work/corpus/$t corpus/$t -- \
    -runs=${RUNS:-10000000} -max_total_time=${SECONDS_EACH:-3600} -artifact_prefix=artifacts/$t/ \
    -print_final_stats=1 ${FUZZ_FLAGS:-} 2>&1 | grep -av 'AddressSanitizer failed to allocate' > work/logs/$t.log
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  execs=$(grep -a 'stat::number_of_executed_units' work/logs/$t.log | awk '{print $2}')
  # The last line: /usr/bin/time first notes a non-zero exit status.
  cpu=$(tail -n 1 work/logs/$t.cpu 2>/dev/null | awk '{printf "%d", $1 + $2}')
  echo "$t rc=$rc execs=${execs:-?} seconds=$((end - start)) cpu_seconds=${cpu:-?}" | tee -a work/campaign.txt
  echo "$rc" > work/logs/$t.rc
  [ "$rc" = 0 ] || grep -aE '^(==[0-9]+== ?ERROR|SUMMARY|thread .* panicked|artifact_prefix)' work/logs/$t.log
}
queue=("$@")
[ ${#queue[@]} -eq 0 ] && queue=($(basename -s .rs src/bin/*.rs))
parallel=${PARALLEL:-2}
for ((i = 0; i < ${#queue[@]}; i += parallel)); do
  for t in "${queue[@]:i:parallel}"; do run "$t" & done
  wait
done
echo "campaign done $(date -u +%FT%TZ)" >> work/campaign.txt
failed=$(for t in "${queue[@]}"; do [ "$(cat work/logs/$t.rc)" = 0 ] || echo "$t"; done)
[ -z "$failed" ] || { echo "fuzz targets that found something: $failed (see fuzz/artifacts/, fuzz/work/logs/)"; exit 1; }
