#!/usr/bin/env bash
# DeviceArena's promise to the sanitizers (device_arena.cuh): memcheck
# reports a write that runs off a view into its padding or its guard, which
# it would not see in a plain allocation, and nothing for a write inside a
# view (another view's included). Skips (77) without a device or without
# compute-sanitizer.
set -u
probe=$1
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null) || exit 77
"$probe" inside > /dev/null; rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -ne 0 ]] && { echo "the probe failed alone: $rc"; exit 1; }
memcheck() {  # nvtx, case: the sanitizer's exit status (9: it reported an error)
  "$sanitizer" --tool memcheck --nvtx "$1" --error-exitcode 9 "$probe" "$2" > /tmp/arena_memcheck_$$.log 2>&1
  local status=$?
  grep -E "Invalid|ERROR SUMMARY" /tmp/arena_memcheck_$$.log | head -3
  return $status
}
failed=0
expect() {  # nvtx, case, expected status
  memcheck "$1" "$2"; local got=$?
  echo "nvtx $1, $2: exit $got (expected $3)"
  [[ $got -eq $3 ]] || failed=1
}
expect yes inside 0
expect yes padding 9
expect yes guard 9
expect yes next 0
# Without the registration the same writes are inside one allocation: unseen.
expect no padding 0
expect no guard 0
rm -f /tmp/arena_memcheck_$$.log
exit $failed
