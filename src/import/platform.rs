//! The files of an imported platform: a component per release (its chart,
//! namespace and requirements in `config.yaml`), the values every
//! environment gives it alike in `values.yaml` and each environment's own
//! in `values-<env>.yaml`, an environment file and a contract template per
//! environment, and a `strata.yaml` for the engine imported from.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{Chart, Engine, GitSource, Read, Release, dns_label, not_converted, values};
use crate::diag::Diagnostic;
use crate::load::environment::GitRef;
use crate::scaffold::NewFile;

/// What an import writes and what it promises.
#[derive(Debug)]
pub struct Imported {
    pub files: Vec<NewFile>,
    /// The values each (environment, component) must end up with.
    pub expected: BTreeMap<(String, String), Value>,
    /// Per (environment, component), how the engine renders the release,
    /// for comparing rendered objects.
    pub checks: BTreeMap<(String, String), Check>,
    /// Components and environments written.
    pub components: BTreeSet<String>,
    pub envs: BTreeSet<String>,
    pub notes: Vec<Diagnostic>,
    /// Per component, why its chart (or a dependency of it) could not be
    /// pulled, when the import tried: the reason a release is not rendered.
    pub not_pulled: BTreeMap<String, String>,
}

/// How the engine renders one release.
#[derive(Clone, Debug)]
pub struct Check {
    /// The Helm release name.
    pub release: String,
    pub namespace: String,
    pub crds: bool,
    pub force_namespace: Option<String>,
    /// What the engine gives it that the import could not read.
    pub unread: Vec<String>,
    /// Where the source defines it.
    pub origin: crate::yaml::Origin,
}

/// A component: its releases by environment.
struct Component<'a> {
    name: String,
    by_env: BTreeMap<String, &'a Release>,
}

/// Lays the releases out as a platform.
pub fn plan(read: &Read) -> Imported {
    let mut notes = Vec::new();
    let mut components = components(&read.releases, &mut notes);
    // A component needs a chart (or manifests): one whose chart could not
    // be converted is not written, and said so where its chart was lost.
    components.retain(|c| {
        let lost = c.by_env.values().next().is_none_or(|r| r.chart.is_none());
        if lost {
            let r = c.by_env.values().next();
            notes.extend(r.map(|r| {
                not_converted(
                    r.origin.clone(),
                    format!("component {} is not written: its chart could not be imported", c.name),
                    "add the component by hand once its chart is at hand",
                )
            }));
        }
        !lost
    });
    let envs: BTreeSet<String> = components.iter().flat_map(|c| c.by_env.keys().cloned()).collect();
    let names: BTreeSet<String> = components.iter().map(|c| c.name.clone()).collect();
    let mut files = vec![NewFile::new(crate::load::project::FILE, strata_yaml(read.engine))];
    let mut expected = BTreeMap::new();
    let mut checks = BTreeMap::new();
    for c in &components {
        files.extend(component_files(c, &names, &mut notes));
        if let Some(Chart::Local { dir }) = c.by_env.values().next().and_then(|r| r.chart.as_ref()) {
            match super::chart_copy::copy_chart(&read.root, dir, &format!("{CHARTS}/{}", c.name)) {
                Ok(copied) => files.extend(copied),
                Err(why) => notes.push(not_converted(
                    c.by_env
                        .values()
                        .next()
                        .map_or_else(|| crate::yaml::Origin::file_start(dir.as_str()), |r| r.origin.clone()),
                    format!("component {}: its chart in {dir} cannot be copied: {why}", c.name),
                    "copy the chart into the platform's charts/ by hand",
                )),
            }
        }
        for (env, r) in &c.by_env {
            expected.insert((env.clone(), c.name.clone()), r.values.clone());
            checks.insert(
                (env.clone(), c.name.clone()),
                Check {
                    release: r.release_name.clone().unwrap_or_else(|| r.name.clone()),
                    namespace: r.namespace.clone(),
                    crds: r.crds,
                    force_namespace: r.force_namespace.clone(),
                    unread: r.unread.clone(),
                    origin: r.origin.clone(),
                },
            );
        }
    }
    for env in &envs {
        let absent: Vec<&str> = components
            .iter()
            .filter(|c| !c.by_env.contains_key(env))
            .map(|c| c.name.as_str())
            .collect();
        let git = read.git.get(env).cloned().unwrap_or_default();
        files.push(NewFile::new(
            format!("environments/{env}.yaml"),
            environment(read.engine, env, &git, &absent),
        ));
        files.push(NewFile::new(format!("contracts/{env}.yaml"), contract(env)));
    }
    Imported {
        files,
        expected,
        checks,
        components: names,
        envs,
        notes,
        not_pulled: BTreeMap::new(),
    }
}

/// Groups the releases into components, one name each, and one release per
/// environment.
fn components<'a>(releases: &'a [Release], notes: &mut Vec<Diagnostic>) -> Vec<Component<'a>> {
    // Each release key asks for a name; two keys asking for one name (the
    // same release name in two namespaces) get their namespace in front.
    // A release the engine installs under a name of its own is a component
    // of that name, so that what the chart derives from the release name
    // stays as it is.
    let own = |r: &Release| -> String {
        r.release_name
            .as_ref()
            .filter(|n| dns_label(n, 53).as_deref() == Some(n.as_str()))
            .cloned()
            .unwrap_or_else(|| r.name.clone())
    };
    let mut asked: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for r in releases {
        asked.entry(own(r)).or_default().insert(r.key.as_str());
    }
    let mut by_name: BTreeMap<String, Component<'a>> = BTreeMap::new();
    for r in releases {
        let name = own(r);
        let wanted = if asked[&name].len() > 1 {
            format!("{}-{}", r.namespace, name)
        } else {
            name
        };
        let Some(name) = dns_label(&wanted, 53) else {
            notes.push(not_converted(
                r.origin.clone(),
                format!("release {} has no name strata can use for a component", r.key),
                "rename the release: a component name is lowercase letters, digits and '-'",
            ));
            continue;
        };
        let c = by_name.entry(name.clone()).or_insert_with(|| Component {
            name,
            by_env: BTreeMap::new(),
        });
        if let Some(first) = c.by_env.get(&r.env) {
            if first.key != r.key || first.values != r.values {
                notes.push(
                    not_converted(
                        r.origin.clone(),
                        format!(
                            "{} is defined twice for environment {}; the first one is imported",
                            r.key, r.env
                        ),
                        "keep one definition of the release per cluster",
                    )
                    .with_related(first.origin.clone(), "first defined here"),
                );
            }
            continue;
        }
        c.by_env.insert(r.env.clone(), r);
    }
    by_name.into_values().collect()
}

fn component_files(c: &Component<'_>, names: &BTreeSet<String>, notes: &mut Vec<Diagnostic>) -> Vec<NewFile> {
    let releases: Vec<&Release> = c.by_env.values().copied().collect();
    let first = releases[0];
    for r in &releases[1..] {
        if r.namespace != first.namespace {
            notes.push(disagree(c, "namespace", &first.namespace, r));
        }
        if r.chart != first.chart {
            let show = |r: &Release| r.chart.as_ref().map_or("no chart".into(), Chart::show);
            notes.push(disagree(c, "chart", &show(first), r));
        }
    }
    for r in &releases {
        if let Some(n) = r.release_name.as_ref().filter(|n| **n != c.name) {
            notes.push(not_converted(
                r.origin.clone(),
                format!(
                    "{}: the engine installs the release as {n}; strata installs component {} as {}, so names the chart derives from the release change",
                    r.key, c.name, c.name
                ),
                "rename the component folder to the release name, if the objects' names must stay",
            ));
        }
    }
    let all: Vec<&Value> = releases.iter().map(|r| &r.values).collect();
    let base = values::common(&all);
    let dir = format!("gitops/platform/{}", c.name);
    let sources: BTreeSet<String> = releases.iter().map(|r| r.origin.to_string()).collect();
    let head = format!(
        "# Imported by `strata import` from {}.\n",
        sources.into_iter().collect::<Vec<_>>().join(", ")
    );
    let mut files = vec![
        NewFile::new(format!("{dir}/config.yaml"), config(c, first, names)),
        NewFile::new(
            format!("{dir}/values.yaml"),
            format!(
                "{head}# The values every environment gives the release alike.\n{}",
                yaml(&base)
            ),
        ),
    ];
    if releases.len() > 1 {
        for (env, r) in &c.by_env {
            let layer = values::minus(&r.values, &base);
            if layer.as_object().is_some_and(|m| !m.is_empty()) {
                files.push(NewFile::new(
                    format!("{dir}/values-{env}.yaml"),
                    format!(
                        "# What environment {env} gives the release beyond values.yaml.\n{}",
                        yaml(&layer)
                    ),
                ));
            }
        }
    }
    files
}

fn disagree(c: &Component<'_>, what: &str, first: &str, r: &Release) -> Diagnostic {
    not_converted(
        r.origin.clone(),
        format!(
            "component {}: environment {} has another {what} than the first ({first}); strata gives a component one {what}, and the first is written",
            c.name, r.env
        ),
        "make them agree, or split the component in two",
    )
}

fn yaml(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}\n".into(),
        _ => crate::yaml::to_sorted_yaml(v),
    }
}

fn config(c: &Component<'_>, r: &Release, names: &BTreeSet<String>) -> String {
    let mut cfg = serde_json::Map::new();
    cfg.insert("component".into(), json!(c.name));
    cfg.insert("namespace".into(), json!(r.namespace));
    match &r.chart {
        Some(Chart::Remote {
            repo_url,
            name,
            version,
            oci,
        }) => {
            let mut chart = json!({"repoURL": repo_url, "name": name, "version": version});
            if *oci {
                chart["oci"] = json!(true);
            }
            cfg.insert("chart".into(), chart);
        }
        Some(Chart::Local { .. }) => {
            cfg.insert("chart".into(), json!({"path": format!("{CHARTS}/{}", c.name)}));
        }
        None => {}
    }
    let requires: BTreeSet<&String> = c
        .by_env
        .values()
        .flat_map(|r| &r.requires)
        .filter(|n| names.contains(*n) && **n != c.name)
        .collect();
    if !requires.is_empty() {
        cfg.insert("requires".into(), json!(requires));
    }
    cfg.insert("sync".into(), json!("automated"));
    cfg.insert("tier".into(), json!("addon"));
    format!(
        "# Imported by `strata import` from {}.\n{}",
        r.origin,
        crate::yaml::to_canonical_yaml(&Value::Object(cfg))
    )
}

/// Where charts kept in the imported tree are copied to.
const CHARTS: &str = "charts";
fn strata_yaml(engine: Engine) -> String {
    format!(
        "# Written by `strata import {}`: the engine the platform was imported from.\n\
         platform: gitops/platform\ntargets: [{}]\n",
        engine.name(),
        engine.name()
    )
}

fn environment(engine: Engine, env: &str, git: &GitSource, absent: &[&str]) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let url = if git.url.is_empty() {
        "https://git.example.com/platform.git   # replace: where the engines read this repository".to_owned()
    } else {
        q(&git.url)
    };
    // Flux follows `master` when a GitRepository names no reference.
    let fallback = if git.url.is_empty() || engine == Engine::Argo {
        "main"
    } else {
        "master"
    };
    let git_ref = git.git_ref.clone().unwrap_or(GitRef::Branch(fallback.into()));
    let mut out = format!(
        "# Environment {env}, imported by `strata import {}`. strata cannot tell the\n\
         # substrate from the tree: kind with topology single renders anywhere;\n\
         # for Talos, set `substrate: talos`, `topology: ha` and the real contract.\n\
         substrate: kind\ncontract: contracts/{env}.yaml\ntopology: single\n\
         git:\n  url: {url}\n  ref: {{{}: {}}}\n",
        engine.name(),
        git_ref.flux_field(),
        q(git_ref.target_revision()),
    );
    if let Some(secret) = &git.secret {
        out.push_str(&format!("  secret: {}\n", q(secret)));
    }
    if !absent.is_empty() {
        out.push_str(&format!(
            "components:\n  # Not released in this environment in the imported tree.\n  exclude: [{}]\n",
            absent.iter().map(|a| q(a)).collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

fn contract(env: &str) -> String {
    format!(
        "# A contract template: replace it with your substrate stack's outputs,\n\
         # `tofu output -json | strata contract import --env {env} -`.\n\
         substrate: kind\ncluster_name: {env}\nendpoint: https://127.0.0.1:6443   # example\n\
         internal_endpoint: https://{env}-control-plane:6443   # example\n"
    )
}
