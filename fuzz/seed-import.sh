#!/usr/bin/env bash
# Seeds the import targets' corpora (fuzz/corpus/import_*, ignored by git)
# from the import tests' trees: each whole tree as one input, in the
# targets' `#- PATH` form (see fuzz_targets/common/tree.rs), and each file
# of it alone at its own path.
#
#   fuzz/seed-import.sh
set -euo pipefail
cd "$(dirname "$0")"
src=../tests/import

# Prints the files under $1 (paths relative to $1) as one input.
pack() {
  (cd "$1" && find . -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) | sort | while read -r f; do
    printf '#- %s\n' "${f#./}"
    cat "$f"
    printf '\n'
  done)
}

# One input per file: its own path, then its text.
singles() {
  local from=$1 into=$2
  (cd "$from" && find . -type f \( -name '*.yaml' -o -name '*.yml' \) | sort) | while read -r f; do
    { printf '\n#- %s\n' "${f#./}"; cat "$from/$f"; } >"$into/file-$(echo "$f" | tr '/.' '__')"
  done
}

for t in import_flux import_argo import_kustomization; do
  mkdir -p "corpus/$t"
done
pack "$src/flux" >corpus/import_flux/tree
pack "$src/flux" >corpus/import_kustomization/tree
singles "$src/flux" corpus/import_flux
pack "$src/argo" >corpus/import_argo/tree
singles "$src/argo" corpus/import_argo
# The kustomizations alone, each as the cluster folder's.
find "$src/flux" -name kustomization.yaml | sort | while read -r k; do
  cp "$k" "corpus/import_kustomization/k-$(echo "${k#"$src"/}" | tr '/.' '__')"
done
echo "seeded: $(ls corpus/import_flux | wc -l) flux, $(ls corpus/import_argo | wc -l) argo, $(ls corpus/import_kustomization | wc -l) kustomization inputs"
