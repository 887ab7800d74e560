#!/usr/bin/env bash
# Inflation against the floor users have today: a CI script that runs
# `helm template` for every component and environment, one after the other.
# For N local charts x 4 environments it prints, with ratios:
#   - the plain helm template loop (the same releases, the same value layers)
#     and that loop divided by the cores (the floor for a parallel tool);
#   - strata's cold inflation (empty render cache) of the whole platform;
#   - strata's warm inflation (nothing changed: no helm at all), as the
#     `inflate` stage time that `--verbose` reports, and the whole check.
# It asserts nothing.
#
#   bench/inflate.sh          # N = 50
#   bench/inflate.sh 20 50
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-50}")
read -r -a sizes <<<"${sizes[*]}"
command -v helm >/dev/null || { echo "helm is not on the PATH" >&2; exit 1; }
cargo build --release --quiet
bin=$PWD/target/release/strata
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
ratio() { echo "$1 / $2" | bc -l; }

printf '%-5s %-36s %10s %8s\n' "N" "what" "seconds" "ratio"
for n in "${sizes[@]}"; do
  dir=$work/p$n
  "$bin" generate --components "$n" --envs 4 --local-charts --out "$dir" --quiet
  envs=$(cd "$dir/environments" && ls | sed 's/\.yaml$//')

  # The loop a CI script runs: helm template per component and environment,
  # with the same layers strata merges.
  start=$(now)
  for env in $envs; do
    sub=$(awk '/^substrate:/ {print $2}' "$dir/environments/$env.yaml")
    for c in "$dir"/gitops/platform/*/; do
      name=$(basename "$c")
      args=(-f "$c/values.yaml")
      [ -f "$c/values-$env.yaml" ] && args+=(-f "$c/values-$env.yaml")
      [ -f "$c/values-substrate-$sub.yaml" ] && args+=(-f "$c/values-substrate-$sub.yaml")
      helm template "$name" "$dir/charts/$name" --namespace "ns" "${args[@]}" >/dev/null
    done
  done
  loop=$(echo "$(now) - $start" | bc -l)
  floor=$(ratio "$loop" "$cores")
  printf '%-5s %-36s %10.2f %8s\n' "$n" "helm template loop ($((n * 4)) releases)" "$loop" "-"
  printf '%-5s %-36s %10.2f %8s\n' "$n" "  / $cores cores (the floor)" "$floor" "1.00"

  rm -rf "$dir/.strata"
  start=$(now)
  "$bin" --root "$dir" --inflate helm --quiet check >/dev/null 2>&1 || true
  cold=$(echo "$(now) - $start" | bc -l)
  printf '%-5s %-36s %10.2f %8.2f\n' "$n" "strata cold (empty cache)" "$cold" "$(ratio "$cold" "$floor")"

  best=999999
  for _ in 1 2 3 4 5; do
    ms=$({ "$bin" --root "$dir" --inflate helm --verbose check 2>&1 || true; } \
      | awk '$1 == "inflate:" {print $2}')
    best=$(echo "if ($ms < $best) $ms else $best" | bc -l)
  done
  start=$(now)
  "$bin" --root "$dir" --inflate helm --quiet check >/dev/null 2>&1 || true
  warm=$(echo "$(now) - $start" | bc -l)
  printf '%-5s %-36s %10.3f %8s\n' "$n" "strata warm: inflate stage (best of 5)" "$(echo "$best / 1000" | bc -l)" "-"
  printf '%-5s %-36s %10.2f %8.2f\n' "$n" "strata warm: whole check" "$warm" "$(ratio "$warm" "$floor")"
done
