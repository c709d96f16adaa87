#!/bin/sh
# Installs, from Debian's packages, what ember needs and is missing.
#   scripts/deps.sh build   to build and run ember
#   scripts/deps.sh test    also to run the whole test suite
set -eu
BUILD="build-essential cmake pkg-config zlib1g-dev libxxhash-dev libdw-dev libelf-dev libpcre2-dev
       libyajl-dev libxml2-dev libprotobuf-c-dev protobuf-c-compiler libiberty-dev libunwind-dev"
TEST="$BUILD libcmocka-dev python3 clang libclang-rt-14-dev chromium linux-perf binutils babeltrace2
      protobuf-compiler golang-go heaptrack"
case "${1:-build}" in
build) want=$BUILD ;;
test) want=$TEST ;;
*) echo "usage: $0 build|test" >&2; exit 2 ;;
esac
missing=""
# Node.js may come from elsewhere than Debian (its npm then conflicts with
# Debian's): only install Debian's when there is none.
if [ "${1:-build}" = test ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
    want="$want nodejs npm"
fi
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "Installing:$missing"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y --no-install-recommends $missing || {
    $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends $missing
}
