//! An app of apps kept as a Helm chart (argoproj/argocd-example-apps
//! `apps/`: a chart whose templates are Applications): rendered with the
//! real `helm template`, with the values the Application pointing at it
//! gives (or the chart's own, when none does), and every Application and
//! ApplicationSet it renders read as if it were written in the tree. helm
//! runs hermetically on the import's copy (see [`crate::helm`]).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::super::tree::{Doc, Tree};
use super::super::{Read, not_converted};
use super::{App, Ctx, is_argo};
use crate::yaml::Origin;

/// The most bytes of templates read to tell whether a chart makes
/// Applications.
const MAX_TEMPLATE_BYTES: u64 = 4 * 1024 * 1024;

/// The chart folders (relative to the tree) whose templates make Argo CD
/// Applications or ApplicationSets.
pub(super) fn find(tree: &Tree) -> BTreeSet<String> {
    chart_dirs(tree, |chart| {
        chart
            .parent()
            .is_some_and(|dir| makes_applications(&dir.join("templates")))
    })
}

/// The chart folders (relative to the tree) that make Applications through
/// a dependency on argo-helm's `argocd-apps` chart, which turns its
/// `applications:` and `applicationsets:` values into objects: an umbrella
/// chart installing Argo CD with its root ApplicationSet. They are rendered
/// on their own (never in place of a release of the chart), and what
/// stops helm — the dependency not at hand — is said.
pub(super) fn find_by_dependency(tree: &Tree) -> BTreeSet<String> {
    chart_dirs(tree, takes_argocd_apps)
}

/// The folders (relative to the tree, hidden folders left out, no link
/// followed) of every `Chart.yaml` that `keep` accepts.
fn chart_dirs(tree: &Tree, keep: impl Fn(&Path) -> bool) -> BTreeSet<String> {
    let walk = walkdir::WalkDir::new(&tree.root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    walk.filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.file_name() == "Chart.yaml" && keep(e.path()))
        .filter_map(|e| {
            let dir = e.path().parent()?;
            Some(
                dir.strip_prefix(&tree.root)
                    .unwrap_or(dir)
                    .to_string_lossy()
                    .replace('\\', "/"),
            )
        })
        .collect()
}

/// Whether the `Chart.yaml` at `path` depends on the `argocd-apps` chart.
fn takes_argocd_apps(path: &Path) -> bool {
    let Ok(bytes) = crate::world::disk::read_regular(path, crate::yaml::MAX_INPUT_BYTES as u64) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let Ok(node) = crate::yaml::parse(&std::sync::Arc::from("Chart.yaml"), &text) else {
        return false;
    };
    node.to_json()["dependencies"]
        .as_array()
        .is_some_and(|deps| deps.iter().any(|d| d["name"].as_str() == Some("argocd-apps")))
}

fn makes_applications(templates: &Path) -> bool {
    let mut budget = MAX_TEMPLATE_BYTES;
    for e in walkdir::WalkDir::new(templates)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
    {
        if !e.file_type().is_file() {
            continue;
        }
        let Ok(bytes) = crate::world::disk::read_regular(e.path(), budget) else {
            continue;
        };
        budget = budget.saturating_sub(bytes.len() as u64);
        let text = String::from_utf8_lossy(&bytes);
        let kind = text.lines().any(|l| {
            let l = l.trim();
            l == "kind: Application" || l == "kind: ApplicationSet"
        });
        if kind && text.contains("argoproj.io/") {
            return true;
        }
        if budget == 0 {
            break;
        }
    }
    false
}

/// Renders the chart in `dir` — for `parent` (the Application pointing
/// at it, its source and the values it gives), or on its own — and reads
/// what it makes.
pub(super) fn render(parent: Option<(&App<'_>, &Value, Value)>, dir: &str, ctx: &mut Ctx<'_>, read: &mut Read) {
    ctx.rendered.insert(dir.to_owned());
    let tree = ctx.tree;
    let shown = tree.shown_path(dir);
    let origin = parent.as_ref().map_or_else(
        || Origin::file_start(format!("{shown}/Chart.yaml")),
        |(a, _, _)| a.origin.clone(),
    );
    let base = dir.rsplit('/').next().unwrap_or(dir);
    let (release, namespace, values) = match &parent {
        Some((app, s, v)) => (
            s["helm"]["releaseName"].as_str().unwrap_or(&app.name).to_owned(),
            app.spec["destination"]["namespace"]
                .as_str()
                .unwrap_or("argocd")
                .to_owned(),
            v.clone(),
        ),
        None => (
            base.to_owned(),
            "argocd".to_owned(),
            Value::Object(serde_json::Map::new()),
        ),
    };
    let text = match template(ctx, dir, &release, &namespace, &values) {
        Ok(t) => t,
        Err(why) => {
            read.notes.push(not_converted(
                origin,
                format!("{shown} is a chart that makes Applications, and it cannot be rendered: {why}; the Applications it makes are not imported"),
                "render it by hand (`helm template`) into the tree, or fix what stops helm",
            ));
            return;
        }
    };
    let rendered = match crate::inflate::output::parse(&text) {
        Ok(r) => r,
        Err(why) => {
            read.notes.push(not_converted(
                origin,
                format!("{shown}: {why}"),
                "fix the chart's templates",
            ));
            return;
        }
    };
    let docs: Vec<Doc> = rendered
        .into_iter()
        .filter(|r| is_argo(&r.value) && matches!(r.value["kind"].as_str(), Some("Application" | "ApplicationSet")))
        .filter_map(|r| as_doc(tree, dir, &r.template, r.value))
        .collect();
    ctx.depth += 1;
    for doc in &docs {
        if doc.kind() == "ApplicationSet" {
            super::appset::read(doc, ctx, read);
        } else {
            let app = App {
                key: doc.name().to_owned(),
                name: doc.name().to_owned(),
                env: None,
                spec: &doc.value["spec"],
                origin: doc.origin(),
            };
            app.read(ctx, read);
        }
    }
    ctx.depth -= 1;
}

/// `helm template` of the chart in the copy.
fn template(ctx: &Ctx<'_>, dir: &str, release: &str, namespace: &str, values: &Value) -> Result<String, String> {
    let path = ctx
        .tools
        .helm
        .as_ref()
        .ok_or("helm is not on the PATH (nor named by STRATA_HELM)")?;
    let home = ctx.copied.scratch("helm").map_err(|e| e.to_string())?;
    let helm = crate::helm::Helm::new(path, &home, None).map_err(|e| e.to_string())?;
    let bytes = serde_json::to_vec(values).map_err(|e| e.to_string())?;
    let chart = ctx.tree.root.join(dir);
    let t = crate::helm::Template {
        release,
        chart: &chart,
        namespace,
        kube_version: KUBE_VERSION,
        api_versions: None,
        values: &bytes,
    };
    crate::helm::Runner::template(&helm, &t).map_err(|e| e.to_string())
}

/// The Kubernetes version charts are rendered for: strata's default.
const KUBE_VERSION: &str = "v1.35.0";

/// A rendered object as a document of the tree, placed at its template.
fn as_doc(tree: &Tree, dir: &str, template: &str, value: Value) -> Option<Doc> {
    // `# Source: <chart>/templates/x.yaml`: the chart's own name first.
    let inside = template.split_once('/').map_or(template, |(_, rest)| rest);
    let file = tree.shown_path(&crate::world::join(dir, inside));
    let name = std::sync::Arc::from(format!("{file} (rendered)"));
    let text = serde_json::to_string(&value).ok()?;
    let node = crate::yaml::parse(&name, &text).ok()?;
    Some(Doc { value, node })
}
