//! Chart mirrors that nothing goes through. A mirror whose key names no
//! repository the platform uses does nothing, and a key that was meant to
//! match (another host, a path one level off) sends the pull, or an
//! air-gapped cluster, upstream without a word: each one is a warning.
//!
//! `charts.mirrors` of strata.yaml serves `strata charts pull`: every
//! component's remote chart and every remote dependency of a chart inside
//! the repository (as `strata.lock` records it, else as its `Chart.yaml`
//! asks). An environment's `charts.mirrors` serves the objects written for
//! that environment: the remote charts of the components it takes.

use super::lock::Lock;
use crate::diag::{Diagnostic, codes};
use crate::load::project::{ChartSettings, Mirror};
use crate::load::{Chart, Platform};
use crate::world::{World, join};

/// A warning for each mirror, in strata.yaml and in each environment, that
/// no repository goes through.
pub fn unused(world: &dyn World, platform: &Platform, lock: &Lock) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let project = &platform.project.charts;
    if !project.mirrors.is_empty() {
        let mut urls: Vec<String> = remote_urls(platform, |_| true);
        urls.extend(
            lock.local
                .iter()
                .flat_map(|l| l.dependencies.iter().map(|d| d.repository.clone())),
        );
        urls.extend(local_dependencies(world, platform));
        out.extend(warnings(
            project,
            &urls,
            "strata charts pull fetches no chart through it",
        ));
    }
    for env in platform.environments.values() {
        let settings = &env.engines.charts;
        if settings.mirrors.is_empty() {
            continue;
        }
        let urls = remote_urls(platform, |c| env.takes(c));
        let what = format!("no chart of environment {} is pulled through it", env.name);
        out.extend(
            warnings(settings, &urls, &what)
                .into_iter()
                .map(|d| d.in_env(&env.name)),
        );
    }
    out
}

/// The repository URLs of the remote charts of the components `takes` keeps.
fn remote_urls(platform: &Platform, takes: impl Fn(&str) -> bool) -> Vec<String> {
    platform
        .components
        .values()
        .filter(|c| takes(&c.name))
        .filter_map(|c| match &c.chart {
            Chart::Remote { repo_url, .. } => Some(repo_url.clone()),
            _ => None,
        })
        .collect()
}

/// The repositories the `Chart.yaml` of each chart inside the repository
/// names for its dependencies (`file://` ones aside).
fn local_dependencies(world: &dyn World, platform: &Platform) -> Vec<String> {
    let mut out = Vec::new();
    for c in platform.components.values() {
        let Chart::Local { path } = &c.chart else { continue };
        let Ok(bytes) = world.read(&join(path, "Chart.yaml")) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let Ok(node) = crate::yaml::parse(&std::sync::Arc::from(path.as_str()), text) else {
            continue;
        };
        let deps = node.get("dependencies").and_then(|d| match &d.value {
            crate::yaml::Value::Seq(items) => Some(items),
            _ => None,
        });
        for d in deps.into_iter().flatten() {
            if let Some(repo) = d.get("repository").and_then(|r| r.as_str())
                && !repo.starts_with("file://")
            {
                out.push(repo.to_owned());
            }
        }
    }
    out
}

fn warnings(settings: &ChartSettings, urls: &[String], what: &str) -> Vec<Diagnostic> {
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    settings
        .unused(&urls)
        .into_iter()
        .map(|m| warning(m, &urls, what))
        .collect()
}

fn warning(m: &Mirror, urls: &[&str], what: &str) -> Diagnostic {
    let d = Diagnostic::warning(
        codes::UNUSED_MIRROR,
        m.origin.clone(),
        format!("the mirror for `{}` is not used: {what}", m.upstream),
    )
    .with_label("unused mirror");
    // The repository the key may have been meant for: one on the same host.
    let host = |u: &str| {
        let key = crate::load::project::url_key(u);
        key.split("://")
            .nth(1)
            .map(|r| r.split('/').next().unwrap_or("").to_owned())
    };
    let near: Vec<&str> = urls
        .iter()
        .copied()
        .filter(|u| host(u).is_some() && host(u) == host(&m.upstream))
        .collect();
    match near.first() {
        Some(u) => d.with_help(format!(
            "a key matches a repository URL and what follows it after a `/`; the platform uses `{u}` on that host: write the key as a prefix of it, or remove the mirror"
        )),
        None => d.with_help("remove the mirror, or correct its key to the repository URL a chart's `repoURL` names"),
    }
}
