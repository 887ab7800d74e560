//! DNG006: a CRD version, or the CRD, goes while objects use it.

use serde_json::Value as J;

use super::super::immutable::{at, group};
use super::super::{EnvSides, Pair};
use super::danger;

pub const NAME: &str = "crd-version-removed-in-use";

doc!(
    r#"## What it does
Flags a CustomResourceDefinition that stops serving a version (removed
from `spec.versions`, or `served: false`) while objects the environment
renders are still written in that version, and a CRD removed from the tree
while objects of its kind remain in it.

## Why is this bad?
The engine's apply of those objects fails ("no matches for kind … in
version …"), and the sync stops there. A CRD removed from the tree is
deleted by a pruning engine, and the API server deletes every object of
its kind with it, in every namespace, including ones the tree never held.
The API server also refuses to drop a version that is still in the CRD's
`status.storedVersions` until the stored objects are migrated.

## Example
```yaml
# the chart's CRD, after a bump
spec:
  versions:
    - name: v1        # v1beta1 is gone; a manifest still says
      served: true    # apiVersion: example.com/v1beta1
      storage: true
```

Use instead:
```yaml
# move every object to v1 first (and migrate the stored ones), then bump
apiVersion: example.com/v1
```
"#
);

/// The versions a CRD serves.
fn served(crd: &J) -> Vec<String> {
    at(crd, &["spec", "versions"])
        .and_then(J::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("served").and_then(J::as_bool) != Some(false))
                .filter_map(|v| v.get("name").and_then(J::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub fn check(sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    if group(pair.api_version) != "apiextensions.k8s.io" || pair.kind != "CustomResourceDefinition" {
        return;
    }
    let Some(base) = pair.base else { return };
    let (Some(g), Some(kind)) = (
        at(base, &["spec", "group"]).and_then(J::as_str),
        at(base, &["spec", "names", "kind"]).and_then(J::as_str),
    ) else {
        return;
    };
    let gone: Vec<String> = match pair.head {
        Some(head) => {
            let now = served(head);
            served(base).into_iter().filter(|v| !now.contains(v)).collect()
        }
        None => served(base),
    };
    let mut said = Vec::new();
    for version in &gone {
        let users = sides.users(&format!("{g}/{version}"), kind);
        if users.is_empty() {
            continue;
        }
        let shown: Vec<&String> = users.iter().take(5).collect();
        let more = users.len().saturating_sub(shown.len());
        let list = shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        said.push(match pair.head {
            Some(_) => format!("stops serving {g}/{version}, which {list}{tail} still use"),
            None => format!("is removed while {list}{tail} ({g}/{version}) remain: deleting it deletes every {kind}"),
        });
    }
    if said.is_empty() {
        return;
    }
    out.push(danger(
        "DNG006",
        pair,
        format!("{}: {}", pair.display(), said.join("; ")),
        vec![format!(
            "write those objects in a version the CRD keeps first (and migrate what the cluster stores: a version in status.storedVersions cannot be dropped), then change the CRD"
        )],
    ));
}
