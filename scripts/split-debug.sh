#!/usr/bin/env bash
# Moves a built module's debug info into FILE.debug beside it: the shipped
# .so stays small and keeps its symbol table (the server's crash report
# names functions); gdb finds FILE.debug through the .so's debuglink.
# Idempotent: a file with no debug info left is not touched.
set -euo pipefail
so=$1
sections=$(readelf -S "$so")
[[ $sections == *.debug_info* ]] || exit 0
objcopy --only-keep-debug "$so" "$so.debug"
objcopy --strip-debug --add-gnu-debuglink="$so.debug" "$so"
echo "$so: $(( $(stat -c %s "$so") / 1024 )) KiB, debug info in $so.debug ($(( $(stat -c %s "$so.debug") / 1024 )) KiB)"
