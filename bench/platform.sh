#!/usr/bin/env bash
# Writes a synthetic platform, for benchmarks and for reproducing a
# problem at scale: N components x E environments (the first kind, the
# rest talos), three value layers per component with a base values file of
# about LINES lines, a manifest and a manifest template each. The platform
# is a pure function of its size, so two runs compare.
#
#   bench/platform.sh DIR                       # 200 components x 4 environments
#   bench/platform.sh DIR 1000                  # N components
#   ENVS=8 LINES=1000 bench/platform.sh DIR 500
#   LOCAL_CHARTS=1 bench/platform.sh DIR 50     # each with a chart of its own
#                                               # (charts/<component>), for helm
#
# DIR must be empty or absent. It prints the strata binary it used, so that
# a reproducer can run `$(bench/platform.sh DIR) --root DIR check`.
set -euo pipefail
dir=${1:?usage: bench/platform.sh DIR [N]}
n=${2:-200}
repo=$(cd "$(dirname "$0")/.." && pwd)
(cd "$repo" && cargo build --release --quiet)
bin=$repo/target/release/strata
args=(generate --components "$n" --envs "${ENVS:-4}" --lines "${LINES:-300}" --out "$dir" --quiet)
[[ -n ${LOCAL_CHARTS:-} ]] && args+=(--local-charts)
"$bin" "${args[@]}"
echo "$bin"
