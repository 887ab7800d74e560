//! Where things go: the folders of the rendered tree and the paths by which
//! the engines find them in the git repository they check out.

use crate::load::{Environment, Platform, Target};

/// The folder of the namespaces an environment's Flux tree creates, and
/// the Kustomization that applies it.
pub const NAMESPACES: &str = "namespaces";

pub const NAMESPACES_APP: &str = "strata-namespaces";

/// The folder of an environment's bootstrap objects, per target.
pub const BOOTSTRAP: &str = "bootstrap";

/// The root object a user applies once per environment and target.
pub const ROOT_APP: &str = "platform";

/// Where the engines find the rendered tree in the git repository they
/// check out.
#[derive(Clone, Debug, Default)]
pub struct RepoLayout {
    /// strata's root relative to the top of its git repository (found with
    /// git); `None` outside a git repository. An environment's `git.path`
    /// overrides it.
    pub root_in_repo: Option<String>,
    /// The output folder relative to strata's root, when it is not the
    /// `output:` of strata.yaml (`render --out`).
    pub output: Option<String>,
}

/// A path in the git repository the engines check out: strata's root
/// there (the environment's `git.path`, else where git says it is), then
/// `rel` under it.
pub(super) fn in_repo(env: &Environment, layout: &RepoLayout, rel: &str) -> String {
    let root = env.git.path.as_deref().or(layout.root_in_repo.as_deref()).unwrap_or("");
    let mut parts: Vec<&str> = Vec::new();
    if !root.is_empty() {
        parts.push(root);
    }
    if !rel.is_empty() {
        parts.push(rel);
    }
    let joined = parts.join("/");
    crate::world::normalize(&joined).unwrap_or(joined)
}

/// Repository path of a folder of the rendered tree.
pub(super) fn repo_path(
    platform: &Platform,
    env: &Environment,
    layout: &RepoLayout,
    target: Target,
    folder: &str,
) -> String {
    let output = layout.output.as_deref().unwrap_or(&platform.project.output);
    let mut rel = format!("{output}/{}/{}", env.name, target.name());
    if !folder.is_empty() {
        rel.push('/');
        rel.push_str(folder);
    }
    in_repo(env, layout, &rel)
}
