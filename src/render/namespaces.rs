//! The namespaces an environment's components use, with the labels and
//! annotations they give them.

use std::collections::BTreeMap;

use super::{Object, Source};
use crate::diag::{Diagnostic, codes};
use crate::load::{Environment, Platform};
use crate::yaml::Origin;

/// Namespaces Kubernetes creates itself; strata never writes them, so that
/// pruning a component can never delete them.
pub(super) const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// One namespace of an environment, with the labels and annotations the
/// components that use it give it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(super) struct NamespaceSpec {
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) annotations: BTreeMap<String, String>,
}

/// The namespaces an environment's components use (system ones left out),
/// with their metadata. Two components that give one namespace different
/// values for a label or annotation are an error naming both.
pub(super) fn namespaces(
    platform: &Platform,
    env: &Environment,
) -> Result<BTreeMap<String, NamespaceSpec>, Vec<Diagnostic>> {
    // Per namespace: its spec, and which component set each key, where.
    type Seen = BTreeMap<String, (String, Origin)>;
    let mut out: BTreeMap<String, (NamespaceSpec, Seen)> = BTreeMap::new();
    let mut diags = Vec::new();
    for c in platform.components_in(env) {
        if SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) {
            continue;
        }
        let (spec, seen) = out.entry(c.namespace.clone()).or_insert_with(|| {
            (
                NamespaceSpec {
                    name: c.namespace.clone(),
                    ..NamespaceSpec::default()
                },
                BTreeMap::new(),
            )
        });
        for (kind, map, target) in [
            ("label", &c.namespace_labels, &mut spec.labels),
            ("annotation", &c.namespace_annotations, &mut spec.annotations),
        ] {
            for (k, v) in map {
                let key = format!("{kind} {k}");
                match seen.get(&key) {
                    Some((other, o)) if other != &c.name && target.get(k) != Some(v) => diags.push(
                        Diagnostic::error(
                            codes::OBJECT,
                            c.namespace_origin.clone(),
                            format!(
                                "components `{other}` and `{}` share namespace {} but give its {kind} `{k}` different values",
                                c.name, c.namespace
                            ),
                        )
                        .with_label(format!("`{k}: {v}`"))
                        .with_related(o.clone(), format!("`{other}` says `{k}: {}`", target.get(k).map_or("", String::as_str)))
                        .with_help("give the shared namespace the same labels and annotations in both config.yaml files")
                        .in_env(&env.name),
                    ),
                    Some(_) => {}
                    None => {
                        seen.insert(key, (c.name.clone(), c.namespace_origin.clone()));
                        target.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    if diags.is_empty() {
        Ok(out.into_iter().map(|(k, (spec, _))| (k, spec)).collect())
    } else {
        Err(diags)
    }
}

/// A manifest that writes a Namespace Kubernetes creates itself: pruning
/// its folder would delete it, and everything in it.
pub(super) fn system_namespace_manifest(shared: &[Object]) -> Option<Diagnostic> {
    let o = shared
        .iter()
        .find(|o| o.source == Source::Manifest && o.kind() == "Namespace" && SYSTEM_NAMESPACES.contains(&o.name()))?;
    Some(
        Diagnostic::error(
            codes::OBJECT,
            o.origin.clone(),
            format!(
                "a manifest writes the Namespace {}, which Kubernetes creates itself",
                o.name()
            ),
        )
        .with_label("system namespace")
        .with_help("remove it: a GitOps engine that pruned it would delete everything in it"),
    )
}
