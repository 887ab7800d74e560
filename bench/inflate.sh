#!/usr/bin/env bash
# Inflation against the floor users have today: a CI script that runs
# `helm template` for every component and environment, one after the other.
# For each shape C x E (C local charts, E environments) it states the
# platform's shape and prints each figure beside its floor, as a ratio:
#   - the plain helm template loop (the same releases, the same value
#     layers), and that loop divided by the cores: the floor a parallel tool
#     is measured against;
#   - strata's cold check (empty render cache) with the chart renderer
#     (strata-helm-renderer), aim: at most 0.35 x the floor;
#   - strata's cold check with the helm binary only (STRATA_HELM_RENDERER=off);
#   - strata's warm check (nothing changed: no chart rendered at all), and its
#     `inflate` stage time as `--verbose` reports it.
# Every figure is the median of REPEAT runs (default 3; 1 for the helm loop
# past 300 releases, which takes minutes). It asserts nothing.
#
#   bench/inflate.sh                  # 50x4 and 20x50 (1,000 releases)
#   bench/inflate.sh 50x4
#   REPEAT=5 bench/inflate.sh 50x4
#
# Needs helm on the PATH, and the renderer on the PATH or in
# STRATA_HELM_RENDERER (else it is built here from renderer/ when Go is
# installed).
set -euo pipefail
cd "$(dirname "$0")/.."
shapes=("${@:-50x4 20x50}")
read -r -a shapes <<<"${shapes[*]}"
repeat=${REPEAT:-3}
command -v helm >/dev/null || { echo "helm is not on the PATH" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/strata
cores=$(nproc)
work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/strata-inflate.XXXXXX")
trap 'rm -rf "$work"' EXIT

renderer=${STRATA_HELM_RENDERER:-$(command -v strata-helm-renderer || true)}
if [ -z "$renderer" ] || [ "$renderer" = off ]; then
  command -v go >/dev/null || { echo "no strata-helm-renderer and no Go to build it" >&2; exit 1; }
  (cd renderer && go build -trimpath -o "$work/strata-helm-renderer" .)
  renderer=$work/strata-helm-renderer
fi

now() { echo "$EPOCHREALTIME"; }
ratio() { echo "$1 / $2" | bc -l; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The loop a CI script runs: helm template per component and environment,
# with the same layers strata merges. Prints its seconds.
helm_loop() {
  local dir=$1 start env sub c name args
  start=$(now)
  for env in $(cd "$dir/environments" && ls | sed 's/\.yaml$//'); do
    sub=$(awk '/^substrate:/ {print $2}' "$dir/environments/$env.yaml")
    for c in "$dir"/gitops/platform/*/; do
      name=$(basename "$c")
      args=(-f "$c/values.yaml")
      [ -f "$c/values-$env.yaml" ] && args+=(-f "$c/values-$env.yaml")
      [ -f "$c/values-substrate-$sub.yaml" ] && args+=(-f "$c/values-substrate-$sub.yaml")
      helm template "$name" "$dir/charts/$name" --namespace "ns" --include-crds --skip-tests "${args[@]}" >"$work/out.yaml"
      wc -c <"$work/out.yaml" >>"$work/bytes"
    done
  done
  echo "$(now) - $start" | bc -l
}

# One strata check with an empty render cache (`cold`) or a full one; the
# renderer as given (`off`: the binary only). Prints its seconds.
strata_check() {
  local dir=$1 which=$2 cold=$3 start
  [ "$cold" = cold ] && rm -rf "$dir/.strata/cache/inflate"
  start=$(now)
  STRATA_HELM_RENDERER=$which "$bin" --root "$dir" --inflate helm --quiet check >/dev/null 2>&1 || true
  echo "$(now) - $start" | bc -l
}

printf '%-7s %-44s %10s  %s\n' "shape" "what" "seconds" "ratio"
row() { printf '%-7s %-44s %10.3f  %s\n' "$shape" "$1" "$2" "${3:-}"; }
for shape in "${shapes[@]}"; do
  c=${shape%x*} e=${shape#*x}
  releases=$((c * e))
  dir=$work/p$shape
  "$bin" generate --components "$c" --envs "$e" --local-charts --out "$dir" --quiet
  lines=$(cat "$dir"/gitops/platform/*/values*.yaml | wc -l)
  # The renderer's digest is worked out once per build: not part of a run.
  STRATA_HELM_RENDERER=$renderer "$bin" --root "$dir" --inflate helm --quiet check >/dev/null 2>&1 || true

  loops=()
  runs=$repeat
  (( releases > 300 )) && runs=1
  for _ in $(seq "$runs"); do : >"$work/bytes"; loops+=("$(helm_loop "$dir")"); done
  loop=$(median "${loops[@]}")
  floor=$(ratio "$loop" "$cores")
  bytes=$(awk '{s += $1} END {print s}' "$work/bytes")
  echo "$shape: $c local charts x $e environments = $releases releases; $lines lines of values; helm prints $((bytes / 1024)) KiB in all"
  row "helm template loop (median of $runs)" "$loop"
  row "  / $cores cores: the floor" "$floor" "1.00"

  colds=() binaries=() warms=() stages=()
  for _ in $(seq "$repeat"); do
    colds+=("$(strata_check "$dir" "$renderer" cold)")
    warms+=("$(strata_check "$dir" "$renderer" warm)")
    stages+=("$(STRATA_HELM_RENDERER=$renderer "$bin" --root "$dir" --inflate helm --verbose check 2>&1 \
      | awk '$1 == "inflate:" {print $2 / 1000}')")
  done
  for _ in $(seq "$runs"); do binaries+=("$(strata_check "$dir" off cold)"); done
  cold=$(median "${colds[@]}")
  row "strata cold, renderer (median of $repeat)" "$cold" "$(printf '%.2fx floor (aim 0.35)' "$(ratio "$cold" "$floor")")"
  binary=$(median "${binaries[@]}")
  row "strata cold, helm binary (median of $runs)" "$binary" "$(printf '%.2fx floor' "$(ratio "$binary" "$floor")")"
  warm=$(median "${warms[@]}")
  row "strata warm: whole check" "$warm" "$(printf '%.2fx floor' "$(ratio "$warm" "$floor")")"
  row "strata warm: inflate stage" "$(median "${stages[@]}")"
  printf '%-7s %-44s %10.2f ms a release cold, %.2f ms helm template\n' "$shape" "per release" \
    "$(echo "$cold * 1000 / $releases" | bc -l)" "$(echo "$loop * 1000 / $releases" | bc -l)"
  rm -rf "$dir"
done
