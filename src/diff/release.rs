//! The data of a release's Secrets, hidden wherever the release writes it
//! again. The diff names a Secret's data without showing it; a chart may
//! still print the same password in an annotation of the Secret, in a
//! ConfigMap's connection URL or a Deployment's environment, and the
//! component's values may hold it too. Each environment's component whose
//! objects (on either side) include a Secret with data gets the contract's
//! secrets and that data, decoded from base64 as well, to hide in every
//! object of the component.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as J;

use crate::secrets::{self, Secrets};

/// The secrets to hide in the objects of one component in one
/// environment, by `(environment, component)`; a component without a
/// Secret's data is not listed, and takes the contract's secrets.
pub(super) type Releases = BTreeMap<(String, String), Secrets>;

/// The sets of every release of the compiles that has a Secret with data.
pub(super) fn releases<'c>(compiles: impl IntoIterator<Item = &'c super::View<'c>>, contract: &Secrets) -> Releases {
    let mut data: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for c in compiles {
        for r in c.renders {
            for o in r.targets.values().flatten().chain(r.charts.values().flatten()) {
                let Some(component) = &o.component else { continue };
                let mut texts = Vec::new();
                secret_data(&o.value, &mut texts);
                if !texts.is_empty() {
                    data.entry((r.env.clone(), component.clone()))
                        .or_default()
                        .extend(texts);
                }
            }
        }
    }
    data.into_iter()
        .filter_map(|((env, component), texts)| {
            let own = Secrets::of_texts(&format!("the data of a Secret of {component} in {env}"), texts);
            (!own.is_empty()).then(|| ((env, component), Secrets::union([contract, &own])))
        })
        .collect()
}

/// The values of a `Secret`'s `data` (as written, and decoded when they
/// are text) and `stringData`.
fn secret_data(v: &J, out: &mut Vec<String>) {
    if v.get("kind").and_then(J::as_str) != Some("Secret") {
        return;
    }
    for (field, encoded) in [("data", true), ("stringData", false)] {
        let Some(J::Object(values)) = v.get(field) else {
            continue;
        };
        for value in values.values().filter_map(J::as_str) {
            out.push(value.to_owned());
            if encoded && let Some(text) = secrets::base64_decode(value).and_then(|b| String::from_utf8(b).ok()) {
                out.push(text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secrets_data_is_read_as_written_and_decoded() {
        let mut out = Vec::new();
        let secret = serde_json::json!({"kind": "Secret", "data": {"t": "aHVudGVyMi10b2tlbg=="},
            "stringData": {"p": "hunter2-password"}});
        secret_data(&secret, &mut out);
        assert_eq!(out, ["aHVudGVyMi10b2tlbg==", "hunter2-token", "hunter2-password"]);
        let mut none = Vec::new();
        secret_data(
            &serde_json::json!({"kind": "ConfigMap", "data": {"a": "bbbbbbbb"}}),
            &mut none,
        );
        assert!(none.is_empty());
    }
}
