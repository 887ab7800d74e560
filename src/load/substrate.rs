//! Substrate types (`substrates/<type>.yaml`): the contract schema a type
//! requires, the node label that carries the physical host, the cluster
//! objects generated from the contract, and which invariants apply. The
//! built-in types are embedded; a repository's own `substrates/` wins.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decode::Fields;
use crate::diag::{Diagnostic, Sources};
use crate::yaml::{self, Node, Origin};

#[derive(Clone, Debug)]
pub struct SubstrateType {
    pub name: String,
    pub description: String,
    pub contract_schema: Option<String>,
    pub host_label: String,
    pub rules: Vec<String>,
    /// Templates of cluster objects generated from the contract.
    pub generate: Vec<String>,
    /// Components that must be ready before the generated objects apply.
    pub generate_requires: Vec<String>,
    /// What strata writes for the substrate stack to apply before any
    /// engine runs: `talos-patch` or `kind-config` (see
    /// `render::substrate`); nothing when absent.
    pub bootstrap: Option<String>,
    /// The cluster-wide PodSecurity admission configuration (a
    /// `PodSecurityConfiguration`, as an API server's admission
    /// configuration holds it), for the admission preview; `None`:
    /// Kubernetes' own default, every mode `privileged`.
    pub pod_security: Option<(serde_json::Value, Origin)>,
    pub origin: Origin,
}

/// The built-in substrate types, embedded in the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    ("substrates/kind.yaml", include_str!("../../substrates/kind.yaml")),
    ("substrates/talos.yaml", include_str!("../../substrates/talos.yaml")),
];

const KEYS: &[&str] = &[
    "type",
    "description",
    "contract_schema",
    "host_label",
    "rules",
    "generate",
    "bootstrap",
    "pod_security",
];
const GEN_KEYS: &[&str] = &["requires", "templates"];

pub fn decode(node: &Node, what: &str, diags: &mut Vec<Diagnostic>) -> Option<SubstrateType> {
    let f = Fields::new(node, what, KEYS, diags);
    let name = f.required_string("type", diags)?.0;
    let (generate, generate_requires) = match f.get("generate") {
        Some(g) => {
            let gf = Fields::new(g, "`generate`", GEN_KEYS, diags);
            (
                gf.string_list("templates", diags)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
                gf.string_list("requires", diags)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    Some(SubstrateType {
        name,
        description: f.string("description", diags).map(|(s, _)| s).unwrap_or_default(),
        contract_schema: f.string("contract_schema", diags).map(|(s, _)| s),
        host_label: f
            .string("host_label", diags)
            .map_or_else(|| "kubernetes.io/hostname".to_owned(), |(s, _)| s),
        rules: f
            .string_list("rules", diags)
            .unwrap_or_default()
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
        generate,
        generate_requires,
        bootstrap: f
            .choice("bootstrap", &["talos-patch", "kind-config"], diags)
            .map(|(s, _)| s),
        pod_security: f.get("pod_security").and_then(|n| {
            if n.as_map().is_none() {
                diags.push(
                    Diagnostic::error(
                        crate::diag::codes::SHAPE,
                        n.origin.clone(),
                        format!("`pod_security` in {what} must be a PodSecurityConfiguration mapping"),
                    )
                    .with_help("write the object an API server's admission configuration gives the PodSecurity plugin: apiVersion, kind, defaults, exemptions"),
                );
                return None;
            }
            Some((n.to_json(), n.origin.clone()))
        }),
        origin: node.origin.clone(),
    })
}

/// Loads the built-in types, then the repository's, which replace built-ins
/// of the same name.
pub fn load_all(
    world: &dyn crate::world::World,
    sources: &Sources,
    dir: &str,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, SubstrateType> {
    let mut out = BTreeMap::new();
    let mut add = |path: &str, text: &str, diags: &mut Vec<Diagnostic>| {
        let file: Arc<str> = Arc::from(path);
        sources.insert(&file, text);
        match yaml::parse(&file, text) {
            Ok(node) => {
                if let Some(t) = decode(&node, path, diags) {
                    out.insert(t.name.clone(), t);
                }
            }
            Err(e) => diags.push(super::files::syntax_error(e)),
        }
    };
    for (path, text) in BUILTIN {
        add(&format!("<builtin>/{path}"), text, diags);
    }
    if let Ok(entries) = world.list(dir) {
        for e in entries.iter().filter(|e| !e.is_dir && e.name.ends_with(".yaml")) {
            let path = crate::world::join(dir, &e.name);
            match world.read_text(&path) {
                Ok(text) => add(&path, &text, diags),
                Err(err) => diags.push(super::files::io_error(&Arc::from(path.as_str()), &err)),
            }
        }
    }
    out
}
