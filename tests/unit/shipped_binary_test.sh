#!/usr/bin/env bash
# The shipped binary links no test double: no symbol of the fake Kubernetes (adapters/fake/),
# the recorders, the manual clock or the in-memory journal, and no function that the test-support
# library (stsresize_testing) defines. Built without the failpoint hook, no failpoint symbol
# either. Static linking pulls in only what the product references, so one product file that
# includes a double is enough to make this fail.
#
#   shipped_binary_test.sh BINARY with-failpoint|without-failpoint [LIBSTSRESIZE_TESTING.a]
set -uo pipefail

binary=$1
failpoint=$2
testing_library=${3:-}

# "address type name" -> "name"
symbols=$(nm -C --defined-only "$binary" | cut -d' ' -f3-) || { echo "nm failed on $binary"; exit 1; }
[[ -n $symbols ]] || { echo "$binary has no symbol table (stripped?): nothing to check"; exit 1; }

patterns='fake|ManualClock|MemoryJournal|Recording|Simulated|stsresize::sim::'
what='test doubles'
if [[ $failpoint == without-failpoint ]]; then
  patterns+='|failpoint'
  what+=' or the failpoint'
fi

found=$(grep -Ei "$patterns" <<<"$symbols")

# Every function and object the test-support library defines itself (not inline or template
# code it shares with the product, which nm marks weak): a double whose name the patterns miss.
if [[ -n $testing_library ]]; then
  strong() { awk '$2 ~ /^[TDBR]$/' | cut -d' ' -f3- | sort -u; }
  library_symbols=$(nm -C --defined-only "$testing_library" 2>/dev/null | strong)
  [[ -n $library_symbols ]] || { echo "no symbols read from $testing_library"; exit 1; }
  shared=$(comm -12 <(nm -C --defined-only "$binary" | strong) <(printf '%s\n' "$library_symbols"))
  if [[ -n $shared ]]; then
    found+=$'\n'"$shared"
  fi
fi

found=$(sed '/^$/d' <<<"$found" | sort -u)
found=$(grep '^stsresize::' <<<"$found"; grep -v '^stsresize::' <<<"$found")  # ours first
if [[ -n $found ]]; then
  echo "FAIL: $binary links $what ($(wc -l <<<"$found") symbols), e.g.:"
  head -n 10 <<<"$found" | cut -c1-160
  exit 1
fi
echo "OK: $binary links no $what ($(wc -l <<<"$symbols") symbols checked)"
