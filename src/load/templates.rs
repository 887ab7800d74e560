//! strata's own object templates: the built-in ones embedded in the binary,
//! and the repository's `templates/` that replace them by name.

use std::collections::BTreeMap;

use super::files;
use crate::diag::{Diagnostic, Sources};
use crate::world::{World, join};

/// The built-in templates, embedded in the binary; a repository's
/// `templates/` may replace any of them by name.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "flux/gitrepository.yaml.j2",
        include_str!("../../templates/flux/gitrepository.yaml.j2"),
    ),
    (
        "flux/kustomization.yaml.j2",
        include_str!("../../templates/flux/kustomization.yaml.j2"),
    ),
    (
        "flux/namespace.yaml.j2",
        include_str!("../../templates/flux/namespace.yaml.j2"),
    ),
    (
        "flux/helmrepository.yaml.j2",
        include_str!("../../templates/flux/helmrepository.yaml.j2"),
    ),
    (
        "flux/ocirepository.yaml.j2",
        include_str!("../../templates/flux/ocirepository.yaml.j2"),
    ),
    (
        "flux/values.yaml.j2",
        include_str!("../../templates/flux/values.yaml.j2"),
    ),
    (
        "flux/helmrelease.yaml.j2",
        include_str!("../../templates/flux/helmrelease.yaml.j2"),
    ),
    ("flux/root.yaml.j2", include_str!("../../templates/flux/root.yaml.j2")),
    (
        "argo/application.yaml.j2",
        include_str!("../../templates/argo/application.yaml.j2"),
    ),
    ("argo/root.yaml.j2", include_str!("../../templates/argo/root.yaml.j2")),
    (
        "cluster/ciliuml2announcementpolicy.yaml.j2",
        include_str!("../../templates/cluster/ciliuml2announcementpolicy.yaml.j2"),
    ),
    (
        "cluster/ciliumloadbalancerippool.yaml.j2",
        include_str!("../../templates/cluster/ciliumloadbalancerippool.yaml.j2"),
    ),
];

/// strata's own values layer for an argo-cd component (the health check of
/// child Applications), as diagnostics name it, and its text.
pub const ARGO_HEALTH: (&str, &str) = (
    "<builtin>/templates/argo/application-health.values.yaml",
    include_str!("../../templates/argo/application-health.values.yaml"),
);

/// Reads every `.j2` file under the repository's templates folder `dir`.
pub fn load(world: &dyn World, sources: &Sources, dir: &str, diags: &mut Vec<Diagnostic>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![String::new()];
    while let Some(sub) = stack.pop() {
        let here = if sub.is_empty() {
            dir.to_owned()
        } else {
            join(dir, &sub)
        };
        let Ok(entries) = world.list(&here) else { continue };
        for e in entries {
            let rel = if sub.is_empty() {
                e.name.clone()
            } else {
                format!("{sub}/{}", e.name)
            };
            if e.is_dir {
                if stack.len() < 64 && rel.matches('/').count() < 16 {
                    stack.push(rel);
                }
            } else if e.name.ends_with(".j2") {
                match files::read_text(world, sources, &join(dir, &rel)) {
                    Ok((_, text)) => {
                        out.insert(rel, text.to_string());
                    }
                    Err(d) => diags.push(d),
                }
            }
        }
    }
    out
}
