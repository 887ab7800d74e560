//! DNG003: a volume claim shrinks or changes storage class.

use serde_json::Value as J;

use super::super::immutable::at;
use super::super::{EnvSides, Pair};
use super::danger;
use crate::invariants::quantity::memory_mib;

pub const NAME: &str = "volume-shrunk-or-reclassed";

doc!(
    r#"## What it does
Flags a PersistentVolumeClaim whose storage request gets smaller or whose
`storageClassName` changes, and the same in a StatefulSet's
`volumeClaimTemplates` (matched by template name).

## Why is this bad?
Kubernetes never shrinks a volume: the API server refuses a smaller
request ("field can not be less than previous value"), and refuses any
change of class. The only way through is a new claim: the old volume, and
its data, go unless its PersistentVolume's reclaim policy keeps it. A
StatefulSet's claim templates cannot change at all (DNG001), and the claims
it already made keep their old size and class whatever the template says,
so the change does nothing for existing pods and something else for new
ones.

## Example
```yaml
persistence:
  size: 5Gi               # was 10Gi
  storageClass: fast      # was longhorn
```

Use instead:
```yaml
persistence:
  size: 10Gi              # grow only; expand with allowVolumeExpansion
  storageClass: longhorn  # move data to a new claim by hand to change class
```
"#
);

pub fn check(_sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    let (Some(base), Some(head)) = (pair.base, pair.head) else {
        return;
    };
    if super::super::immutable::group(pair.api_version).is_empty() && pair.kind == "PersistentVolumeClaim" {
        let said = compare(base.get("spec"), head.get("spec"));
        if !said.is_empty() {
            out.push(danger(
                "DNG003",
                pair,
                format!("{}: {}", pair.display(), said.join("; ")),
                vec![HELP.to_owned()],
            ));
        }
        return;
    }
    if pair.kind != "StatefulSet" {
        return;
    }
    let templates = |v: &J| -> Vec<(String, J)> {
        at(v, &["spec", "volumeClaimTemplates"])
            .and_then(J::as_array)
            .map(|ts| {
                ts.iter()
                    .map(|t| {
                        let name = at(t, &["metadata", "name"])
                            .and_then(J::as_str)
                            .unwrap_or("")
                            .to_owned();
                        (name, t.get("spec").cloned().unwrap_or(J::Null))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let old = templates(base);
    for (name, spec) in templates(head) {
        let Some((_, was)) = old.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let said = compare(Some(was), Some(&spec));
        if !said.is_empty() {
            out.push(danger(
                "DNG003",
                pair,
                format!(
                    "{} volumeClaimTemplates `{name}`: {} (the claims it made keep what they have)",
                    pair.display(),
                    said.join("; ")
                ),
                vec![HELP.to_owned()],
            ));
        }
    }
}

const HELP: &str = "a claim only grows: keep the size and class, or move the data to a new claim (a PersistentVolume with reclaimPolicy Retain keeps it meanwhile)";

/// What changes between two claim specs: a smaller request, another class.
fn compare(old: Option<&J>, new: Option<&J>) -> Vec<String> {
    let (Some(old), Some(new)) = (old, new) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    let storage = |v: &J| at(v, &["resources", "requests", "storage"]).cloned();
    if let (Some(a), Some(b)) = (storage(old), storage(new))
        && let (Some(x), Some(y)) = (memory_mib(&a), memory_mib(&b))
        && y < x
    {
        said.push(format!("storage request shrinks from {} to {}", show(&a), show(&b)));
    }
    let class = |v: &J| v.get("storageClassName").cloned();
    let (a, b) = (class(old), class(new));
    if a != b {
        let name = |c: &Option<J>| {
            c.as_ref()
                .map_or_else(|| "the default class".to_owned(), |c| format!("`{}`", show(c)))
        };
        said.push(format!("storage class changes from {} to {}", name(&a), name(&b)));
    }
    said
}

fn show(v: &J) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::compare;

    #[test]
    fn shrink_and_class() {
        let a = json!({"storageClassName": "longhorn", "resources": {"requests": {"storage": "10Gi"}}});
        let b = json!({"storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}});
        assert_eq!(
            compare(Some(&a), Some(&b)),
            [
                "storage request shrinks from 10Gi to 5Gi",
                "storage class changes from `longhorn` to `fast`"
            ]
        );
        assert!(
            compare(
                Some(&b),
                Some(&json!({"storageClassName": "fast", "resources": {"requests": {"storage": "6Gi"}}}))
            )
            .is_empty()
        );
    }
}
