//! strata's own engine objects — Flux's GitRepository, OCIRepository,
//! HelmRepository, Kustomization and HelmRelease, Argo CD's Application —
//! checked against schemas of our own (`engine_kinds/*.json`), after the
//! `patches:` of config.yaml and the environment, whether or not a schema
//! location is configured: a value the engine's CRD refuses (a duration
//! `15 minutes` where Flux reads Go durations) is an error at the line that
//! wrote it (E051), not a failed apply in the cluster.
//!
//! The schemas are written from the CRDs' facts (docs/schemas.md names
//! each source): every field of each `spec` is known, so a misspelt one is
//! refused as the API server's strict field validation refuses it, and the
//! fields strata writes carry their patterns and enumerations. Deeper
//! objects that strata never writes are left to the CRDs of the engine's
//! version.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value as J;

use super::message::{Problem, describe};
use super::schemas::{self, Compiled};

/// `(apiVersion, kind)` → the schema's text.
const SCHEMAS: &[(&str, &str, &str)] = &[
    (
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        include_str!("engine_kinds/gitrepository.json"),
    ),
    (
        "source.toolkit.fluxcd.io/v1",
        "HelmRepository",
        include_str!("engine_kinds/helmrepository.json"),
    ),
    (
        "source.toolkit.fluxcd.io/v1",
        "OCIRepository",
        include_str!("engine_kinds/ocirepository.json"),
    ),
    (
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        include_str!("engine_kinds/kustomization.json"),
    ),
    (
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        include_str!("engine_kinds/helmrelease.json"),
    ),
    (
        "argoproj.io/v1alpha1",
        "Application",
        include_str!("engine_kinds/application.json"),
    ),
];

type Table = BTreeMap<(&'static str, &'static str), Result<Arc<Compiled>, String>>;

fn table() -> &'static Table {
    static CELL: OnceLock<Table> = OnceLock::new();
    CELL.get_or_init(|| {
        SCHEMAS
            .iter()
            .map(|(api_version, kind, text)| {
                let name = format!("strata's {kind} schema");
                let compiled = serde_json::from_str::<J>(text)
                    .map_err(|e| e.to_string())
                    .and_then(|v| schemas::compile(&v, &name))
                    .map(Arc::new);
                ((*api_version, *kind), compiled)
            })
            .collect()
    })
}

/// Whether strata has a schema of its own for this kind.
pub fn covers(api_version: &str, kind: &str) -> bool {
    SCHEMAS.iter().any(|(a, k, _)| *a == api_version && *k == kind)
}

/// What the kind's schema refuses in `obj` (the object as written, with its
/// values in place), each with the schema's hint for the field when it has
/// one; nothing for a kind it has no schema of.
pub(super) fn problems(obj: &J) -> Vec<Problem> {
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    let kind = obj["kind"].as_str().unwrap_or("");
    let Some(Ok(c)) = table()
        .iter()
        .find(|((a, k), _)| *a == api_version && *k == kind)
        .map(|(_, c)| c)
    else {
        return Vec::new();
    };
    c.validator
        .iter_errors(obj)
        .flat_map(|e| {
            let hint = hint(&c.root, e.schema_path().as_str());
            describe(&e, |e| c.known_fields(e)).into_iter().map(move |mut p| {
                if let Some(h) = &hint {
                    p.help = Some(format!("write {h}"));
                }
                p
            })
        })
        .collect()
}

/// The `x-strata-help` of the schema that holds the failing keyword.
fn hint(root: &J, keyword: &str) -> Option<String> {
    let parent = keyword.rsplit_once('/').map_or("", |(p, _)| p);
    root.pointer(parent)?.get("x-strata-help")?.as_str().map(str::to_owned)
}

/// Where each schema comes from, for the note of a finding.
pub(super) fn source(kind: &str) -> String {
    let description = SCHEMAS
        .iter()
        .find(|(_, k, _)| *k == kind)
        .and_then(|(_, _, text)| serde_json::from_str::<J>(text).ok())
        .and_then(|v| v["description"].as_str().map(str::to_owned))
        .unwrap_or_default();
    format!("checked against strata's {kind} schema ({description})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn release(spec: J) -> J {
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "web", "namespace": "web"}, "spec": spec})
    }

    #[test]
    fn every_schema_compiles() {
        for ((a, k), c) in table() {
            assert!(c.is_ok(), "{a} {k}: {:?}", c.as_ref().err());
        }
        assert_eq!(table().len(), SCHEMAS.len());
    }

    #[test]
    fn an_interval_in_words_is_refused_with_the_form_flux_reads() {
        let p = problems(&release(json!({"interval": "15 minutes"})));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].message.contains("interval"), "{}", p[0].message);
        assert!(
            p[0].help.as_deref().unwrap_or("").contains("Go duration"),
            "{:?}",
            p[0].help
        );
        assert!(problems(&release(json!({"interval": "1h30m", "timeout": "90s"}))).is_empty());
    }

    #[test]
    fn a_misspelt_field_and_a_wrong_word_are_refused() {
        let p = problems(&release(
            json!({"interval": "5m", "intervall": "5m", "driftDetection": {"mode": "on"}}),
        ));
        assert_eq!(p.len(), 2, "{p:?}");
        let p = problems(&json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "web"}, "spec": {"project": "default", "destination": {},
            "syncPolicy": {"retry": {"limit": "five"}}}}));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(problems(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).is_empty());
    }
}
