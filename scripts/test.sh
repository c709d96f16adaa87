#!/bin/sh
# The second command of the README: the whole test suite, built with
# AddressSanitizer and UndefinedBehaviorSanitizer, then every reader's
# libFuzzer target for a short run. Installs what is missing.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
cmake -S . -B build-asan -DEMBER_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
CC=clang cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_TESTS=OFF \
    -DEMBER_FUZZ_SECONDS="${EMBER_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build-fuzz -j"$(nproc)"
ctest --test-dir build-fuzz --output-on-failure -j"$(nproc)" -L fuzz
