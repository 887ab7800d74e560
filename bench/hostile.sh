#!/usr/bin/env bash
# Measures strata on hostile inputs: for each case, a copy of the example
# platform broken one way (or a generated one, see bench/platform.sh), the
# exit code, wall time and peak memory (RSS) of a release build, as
# /usr/bin/time -v reports them (the largest of strata and the programs it
# waits for: helm, the renderer). It prints a table and asserts nothing;
# the limits to compare with are 5 s and 512 MiB a case. Cases that need
# helm or strata-helm-renderer on the PATH say so and are skipped without.
#
#   bench/hostile.sh            # every case
#   bench/hostile.sh diff       # the cases whose name contains "diff"
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-}
cargo build --release --quiet
bin=$PWD/target/release/strata
fixture=$PWD/fixtures/homelab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STRATA_TODAY=2026-12-02

V=gitops/platform/traefik/values.yaml
M=gitops/platform/traefik/manifests

# A fresh copy of the example in $work/<case>; prints its path.
fresh() {
  local dir=$work/$1
  rm -rf "$dir"
  cp -r "$fixture" "$dir"
  rm -rf "$dir/rendered" "$dir/.strata"
  echo "$dir"
}

# Commits the copy, so that `strata diff --base HEAD` has a base.
commit() {
  git -C "$1" init -q
  git -C "$1" add -A
  git -C "$1" -c user.name=bench -c user.email=bench@example.com -c commit.gpgsign=false commit -qm base
}

# `n` components c000.. whose requires are printed by the perl expression
# `$2` for component `$i` (one name a line).
components() {
  local dir=$1 n=$2 expr=$3
  rm -rf "$dir/gitops/platform"
  mkdir -p "$dir/gitops/platform"
  (cd "$dir/gitops/platform" && N=$n perl -e '
    my $n = $ENV{N};
    for my $i (0 .. $n - 1) {
      my $name = sprintf("c%03d", $i);
      mkdir $name;
      open my $f, ">", "$name/config.yaml" or die;
      print $f "component: $name\nnamespace: $name\nchart:\n  repoURL: https://charts.example.com\n  name: c\n  version: 1.0.0\n";
      my @r = map { "  - $_\n" } ('"$expr"');
      print $f "requires:\n", @r if @r;
    }')
}

# Each case: a name, then the setup as a shell function `setup_<name>` that
# prints the strata arguments (after --root DIR).
setup_values_6mib_flat_map() {
  local d; d=$(fresh "$1")
  perl -e 'for $i (1..240000) { printf "key%07d: value-%07d\n", $i, $i }' >"$d/$V"
  echo "$d render"
}
setup_values_6mib_list() {
  local d; d=$(fresh "$1")
  perl -e 'print "items:\n"; for $i (1..360000) { printf "  - item-%07d\n", $i }' >"$d/$V"
  echo "$d render"
}
setup_values_6mib_list_of_maps() {
  local d; d=$(fresh "$1")
  perl -e 'print "list:\n"; for $i (1..200000) { printf "  - name: n%07d\n    v: %d\n", $i, $i }' >"$d/$V"
  echo "$d render"
}
setup_values_8mib_tiny_flow_nodes() {
  local d; d=$(fresh "$1")
  perl -e 'print "a: ["; print "1," x 4000000; print "1]\n"' >"$d/$V"
  echo "$d render"
}
setup_values_6mib_diff_one_line() {
  local d; d=$(fresh "$1")
  perl -e 'for $i (1..240000) { printf "key%07d: value-%07d\n", $i, $i }' >"$d/$V"
  commit "$d"
  echo "extra: 1" >>"$d/$V"
  echo "$d diff --base HEAD"
}
setup_diff_list_every_item_changed() {
  local d; d=$(fresh "$1")
  perl -e 'print "list:\n"; for $i (1..100000) { printf "  - old-%d\n", $i }' >"$d/$V"
  commit "$d"
  perl -e 'print "list:\n"; for $i (1..100000) { printf "  - new-%d\n", $i }' >"$d/$V"
  echo "$d diff --base HEAD"
}
setup_diff_list_reversed() {
  local d; d=$(fresh "$1")
  perl -e 'print "list:\n"; for $i (1..100000) { printf "  - item-%d\n", $i }' >"$d/$V"
  commit "$d"
  perl -e 'print "list:\n"; for $i (reverse 1..100000) { printf "  - item-%d\n", $i }' >"$d/$V"
  echo "$d diff --base HEAD"
}
setup_template_repeating_strings() {
  local d; d=$(fresh "$1")
  printf '%s\n' "{% set n = namespace(s='x' * 65536) %}{% for i in range(20) %}{% set n.s = n.s ~ n.s %}{% endfor %}{{ n.s }}" >"$d/$M/configmap-big.yaml.j2"
  echo "$d render"
}
setup_template_one_huge_repeat() {
  local d; d=$(fresh "$1")
  printf '%s\n' "{{ 'x' * 99999999 }}{{ 'y' * 99999999 }}" >"$d/$M/configmap-big.yaml.j2"
  echo "$d render"
}
setup_template_nindent_gigabyte() {
  local d; d=$(fresh "$1")
  printf '%s\n' "data: {{ 'a' | nindent(1000000000) }}" >"$d/$M/configmap-big.yaml.j2"
  echo "$d render"
}
setup_template_endless_loop() {
  local d; d=$(fresh "$1")
  printf '%s\n' "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}" >"$d/$M/configmap-loop.yaml.j2"
  echo "$d render"
}
setup_requires_500_all_others() {
  local d; d=$(fresh "$1")
  components "$d" 500 'map { sprintf("c%03d", $_) } grep { $_ != $i } 0 .. $n - 1'
  echo "$d render"
}
setup_requires_10000_unknown() {
  local d; d=$(fresh "$1")
  components "$d" 100 'map { "ghost-$i-$_" } 0 .. 99'
  echo "$d render"
}
setup_requires_chain_2000() {
  local d; d=$(fresh "$1")
  components "$d" 2000 '$i ? (sprintf("c%03d", $i - 1)) : ()'
  echo "$d check"
}
setup_20000_unknown_keys() {
  local d; d=$(fresh "$1")
  perl -e 'for $i (1..20000) { print "unknown$i: 1\n" }' >>"$d/gitops/platform/traefik/config.yaml"
  echo "$d render"
}
setup_billion_laughs() {
  local d; d=$(fresh "$1")
  perl -e 'print "a: &a [", join(",", ("lol") x 9), "]\n"; my $p = "a"; for my $c ("b".."i") { print "$c: &$c [", join(",", ("*$p") x 9), "]\n"; $p = $c }' >"$d/$V"
  echo "$d render"
}
setup_deep_nesting() {
  local d; d=$(fresh "$1")
  perl -e 'print "a: ", "[" x 100000, "]" x 100000, "\n"' >"$d/$V"
  echo "$d render"
}
setup_kind_climbing_out() {
  local d; d=$(fresh "$1")
  printf 'apiVersion: v1\nkind: ../../../../etc/passwd\nmetadata:\n  name: x\n' >"$d/$M/evil.yaml"
  echo "$d render --schemas $d"
}
setup_config_yml_misnamed() {
  local d; d=$(fresh "$1")
  mv "$d/gitops/platform/traefik/config.yaml" "$d/gitops/platform/traefik/config.yml"
  echo "$d render"
}
setup_jobs_100000() {
  local d; d=$(fresh "$1")
  echo "$d --jobs 100000 render"
}
setup_strata_yaml_to_dev_zero() {
  local d; d=$(fresh "$1")
  rm "$d/strata.yaml"
  ln -s /dev/zero "$d/strata.yaml"
  echo "$d render"
}

# Cases that run strata with more of the environment write it into
# $work/env-<case> (NAME=value lines), which the run below passes on.
env_for() { printf '%s\n' "${@:2}" >"$work/env-$1"; }

# A program on the PATH, or nothing (its cases are then skipped, and said so).
on_path() { command -v "$1" 2>/dev/null || true; }
helm_bin=${STRATA_HELM:-$(on_path helm)}
renderer_bin=$(on_path strata-helm-renderer)

# traefik rendered from the test chart bigstring, building 2^30 bytes.
gigabyte_chart() {
  local d=$1
  mkdir -p "$d/charts"
  cp -r tests/charts/bigstring "$d/charts/bigstring"
  printf 'component: traefik\nnamespace: traefik\nchart:\n  path: charts/bigstring\n' >"$d/gitops/platform/traefik/config.yaml"
  echo "doublings: 30" >"$d/$V"
}
setup_template_gigabyte_string_helm() {
  local d; d=$(fresh "$1")
  [[ -z $helm_bin ]] && { echo "skip no helm"; return; }
  gigabyte_chart "$d"
  env_for "$1" "STRATA_HELM=$helm_bin" STRATA_HELM_RENDERER=off
  echo "$d check --env dev"
}
setup_template_gigabyte_string_renderer() {
  local d; d=$(fresh "$1")
  [[ -z $renderer_bin ]] && { echo "skip no strata-helm-renderer"; return; }
  gigabyte_chart "$d"
  env_for "$1" "STRATA_HELM_RENDERER=$renderer_bin"
  echo "$d check --env dev"
}
setup_renderer_leaving_a_child_running() {
  local d; d=$(fresh "$1")
  [[ -z $renderer_bin ]] && { echo "skip no strata-helm-renderer"; return; }
  mkdir -p "$d/charts" && cp -r tests/charts/web-1 "$d/charts/web"
  printf 'component: traefik\nnamespace: traefik\nchart:\n  path: charts/web\n' >"$d/gitops/platform/traefik/config.yaml"
  printf '#!/bin/sh\nsleep 100 &\nexec %s "$@"\n' "$renderer_bin" >"$d/wrapper" && chmod +x "$d/wrapper"
  env_for "$1" "STRATA_HELM_RENDERER=$d/wrapper"
  echo "$d check --env dev"
}
setup_renderer_printing_garbage() {
  local d; d=$(fresh "$1")
  mkdir -p "$d/charts" && cp -r tests/charts/web-1 "$d/charts/web"
  printf 'component: traefik\nnamespace: traefik\nchart:\n  path: charts/web\n' >"$d/gitops/platform/traefik/config.yaml"
  printf '#!/bin/sh\nif [ "$1" = -version ]; then echo '"'"'version.BuildInfo{Version:"v4.3.2"}'"'"'; exit 0; fi\necho garbage\nsleep 100\n' >"$d/garbage" && chmod +x "$d/garbage"
  env_for "$1" "STRATA_HELM_RENDERER=$d/garbage" "STRATA_HELM="
  echo "$d check --env dev"
}
setup_cni_private_key_in_a_configmap() {
  local d; d=$(fresh "$1")
  [[ -z $helm_bin ]] && { echo "skip no helm"; return; }
  mkdir -p "$d/charts" && cp -r tests/charts/cni-mini "$d/charts/cilium"
  printf 'component: cilium\nnamespace: kube-system\ntier: core\nchart:\n  path: charts/cilium\n' >"$d/gitops/platform/cilium/config.yaml"
  printf 'relay:\n  ca: generate\n' >"$d/gitops/platform/cilium/values.yaml"
  env_for "$1" "STRATA_HELM=$helm_bin"
  echo "$d render --env staging"
}
setup_proxy_unusable_with_a_password() {
  local d; d=$(fresh "$1")
  env_for "$1" "https_proxy=gopher://alice:Secret-Pw-1@proxy.example:70"
  echo "$d charts pull"
}
setup_patch_matching_nothing() {
  local d; d=$(fresh "$1")
  printf 'patches:\n  - target: {kind: HelmRelease, name: traefk}\n    patch:\n      - {op: add, path: /spec/timeout, value: 15m}\n' >>"$d/gitops/platform/traefik/config.yaml"
  echo "$d render"
}
setup_render_out_outside_the_repository() {
  local d; d=$(fresh "$1")
  echo "$d render --out $work/$1-elsewhere"
}
setup_import_through_a_link_out() {
  local d; d=$(fresh "$1")
  cp -r tests/import/argo "$d/argo-tree"
  mv "$d/argo-tree/clusters/staging/config.json" "$work/$1-stolen.json"
  ln -s "$work/$1-stolen.json" "$d/argo-tree/clusters/staging/config.json"
  echo "$d import argo $d/argo-tree --out $d/imported"
}
setup_generated_1000_components() {
  local d=$work/$1
  rm -rf "$d"
  "$bin" generate --components 1000 --envs 4 --out "$d" --quiet
  echo "$d check"
}

cases=(
  values_6mib_flat_map values_6mib_list values_6mib_list_of_maps values_8mib_tiny_flow_nodes
  values_6mib_diff_one_line diff_list_every_item_changed diff_list_reversed
  template_repeating_strings template_one_huge_repeat template_nindent_gigabyte template_endless_loop
  requires_500_all_others requires_10000_unknown requires_chain_2000 20000_unknown_keys
  billion_laughs deep_nesting kind_climbing_out config_yml_misnamed jobs_100000 strata_yaml_to_dev_zero
  template_gigabyte_string_helm template_gigabyte_string_renderer renderer_leaving_a_child_running
  renderer_printing_garbage cni_private_key_in_a_configmap proxy_unusable_with_a_password
  patch_matching_nothing render_out_outside_the_repository import_through_a_link_out
  generated_1000_components
)

printf '%-32s %-6s %5s %9s %10s %12s\n' "case" "cmd" "exit" "seconds" "peak MiB" "stderr KiB"
for c in "${cases[@]}"; do
  [[ -n $filter && $c != *"$filter"* ]] && continue
  read -r dir args < <("setup_$c" "$c")
  if [[ $dir == skip ]]; then
    printf '%-32s skipped: %s\n' "$c" "$args"
    continue
  fi
  extra=()
  [[ -f $work/env-$c ]] && mapfile -t extra <"$work/env-$c"
  # shellcheck disable=SC2086
  set +e
  /usr/bin/time -v -o "$work/time" env "${extra[@]}" "$bin" --root $dir --color never $args >"$work/out" 2>"$work/err"
  code=$?
  set -e
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  cmd=${args%% *}
  [[ $args == --jobs* ]] && cmd=render
  printf '%-32s %-6s %5s %9.2f %10.1f %12.1f\n' "$c" "$cmd" "$code" "$secs" "$(echo "$kib / 1024" | bc -l)" \
    "$(echo "$(stat -c %s "$work/err") / 1024" | bc -l)"
  rm -rf "${work:?}/$c"
done
