#!/usr/bin/env bash
# Benchmarks strata on synthetic platforms and prints the figures: wall time
# and peak memory of render, check and diff for N components x 4
# environments, beside `kubectl kustomize` building the same emitted tree,
# and the speed-up of --jobs 2 over --jobs 1. Nothing here asserts a time.
#
#   bench/run.sh            # N = 50 200 1000
#   bench/run.sh 50 200     # chosen sizes
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-50 200 1000}")
read -r -a sizes <<<"${sizes[*]}"
cargo build --release --quiet
bin=$PWD/target/release/strata
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a command REPEAT times, prints "median-seconds peak-KiB".
measure() {
  local repeat=$1; shift
  local times=() peak=0
  for _ in $(seq "$repeat"); do
    local out
    /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null 2>&1 || true
    out=$(tail -1 "$work/time")
    times+=("${out% *}")
    local kb=${out#* }
    (( kb > peak )) && peak=$kb
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$median $peak"
}

printf '%-6s %-22s %10s %10s\n' "N" "what" "seconds" "peak MiB"
declare -A render1
for n in "${sizes[@]}"; do
  dir=$work/p$n
  "$bin" generate --components "$n" --envs 4 --out "$dir" --quiet
  repeat=3; (( n >= 1000 )) && repeat=1
  ( cd "$dir" && git init -q && git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base )
  row() { printf '%-6s %-22s %10s %10.0f\n' "$n" "$1" "$2" "$(echo "$3 / 1024" | bc -l)"; }

  # A first render writes every file; later ones find the tree up to date.
  read -r t m < <(measure 1 "$bin" --root "$dir" render)
  row "render (first write)" "$t" "$m"
  read -r t m < <(measure "$repeat" "$bin" --root "$dir" --jobs 1 render --check)
  row "render --jobs 1" "$t" "$m"; render1[$n]=$t
  read -r t2 m < <(measure "$repeat" "$bin" --root "$dir" --jobs 2 render --check)
  row "render --jobs 2" "$t2" "$m"
  printf '%-6s %-22s %10.2fx\n' "$n" "speed-up jobs 2/1" "$(echo "$t / $t2" | bc -l)"
  read -r t m < <(measure "$repeat" "$bin" --root "$dir" check)
  row "check" "$t" "$m"
  # A one-line change, then the diff against the commit.
  sed -i 's/^replicaCount: .*/replicaCount: 7/' "$dir/gitops/platform/component-0001/values-env1.yaml"
  read -r t m < <(measure "$repeat" "$bin" --root "$dir" diff --base HEAD --format markdown)
  row "diff (one-line change)" "$t" "$m"
  # kubectl kustomize building the same emitted tree: per environment and
  # target, the top folder, components/ (which lists every component folder)
  # and cluster/.
  if command -v kubectl >/dev/null 2>&1; then
    start=$(date +%s.%N)
    for d in "$dir"/rendered/*/*; do
      for sub in "" /components /cluster; do
        if [ -f "$d$sub/kustomization.yaml" ]; then kubectl kustomize "$d$sub" >/dev/null; fi
      done
    done
    end=$(date +%s.%N)
    k=$(echo "$end - $start" | bc -l)
    printf '%-6s %-22s %10.2f %10s\n' "$n" "kubectl kustomize" "$k" "-"
    printf '%-6s %-22s %10.2fx\n' "$n" "kustomize / render" "$(echo "$k / ${render1[$n]}" | bc -l)"
  fi
  files=$(find "$dir/rendered" -type f | wc -l)
  printf '%-6s %-22s %10s\n' "$n" "files written" "$files"
done

# Growth: seconds per component at each size (flat means linear).
echo
for n in "${sizes[@]}"; do
  printf 'N=%-5s %8.2f ms per component x 4 environments (render, --jobs 1)\n' "$n" "$(echo "${render1[$n]} * 1000 / $n" | bc -l)"
done
