#!/bin/sh
# The second command of the README: the whole test suite, built with
# AddressSanitizer and UndefinedBehaviorSanitizer. Installs what is missing.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
cmake -S . -B build-asan -DEMBER_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
