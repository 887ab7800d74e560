//! `environments/<env>.yaml`: substrate, contract, topology, targets, git, waivers.

use super::contract::Contract;
use super::decode::Fields;
use super::project::{Target, decode_targets};
use crate::diag::{Diagnostic, codes};
use crate::yaml::{Node, Origin};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// ADR 007's invariants are errors.
    Ha,
    /// The HA invariants are off (a single-node development cluster).
    Single,
}

/// What the engines follow in the git repository, in Flux's vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitRef {
    Branch(String),
    Tag(String),
    /// A semver range over tags (Flux `ref.semver`).
    Semver(String),
    Commit(String),
}

impl GitRef {
    /// The revision as Argo CD's `targetRevision` takes it.
    pub fn target_revision(&self) -> &str {
        match self {
            GitRef::Branch(s) | GitRef::Tag(s) | GitRef::Semver(s) | GitRef::Commit(s) => s,
        }
    }

    /// Flux's field name for it.
    pub fn flux_field(&self) -> &'static str {
        match self {
            GitRef::Branch(_) => "branch",
            GitRef::Tag(_) => "tag",
            GitRef::Semver(_) => "semver",
            GitRef::Commit(_) => "commit",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Git {
    pub url: String,
    pub git_ref: GitRef,
    /// A Secret in flux-system with the credentials (Flux `secretRef`).
    pub secret: Option<String>,
    /// Where strata's root lives in the git repository the engines check
    /// out; `None` finds it through git.
    pub path: Option<String>,
}

/// Which components an environment takes: names or `tier:<tier>`; and
/// settings of components in this environment, under their names.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub include: Vec<(String, Origin)>,
    pub exclude: Vec<(String, Origin)>,
    pub origin: Option<Origin>,
    /// `components.<name>:` entries, by component name, with where each
    /// name is written.
    pub settings: std::collections::BTreeMap<String, (ComponentHere, Origin)>,
}

/// What an environment says of one of its components.
#[derive(Clone, Debug, Default)]
pub struct ComponentHere {
    /// `ha:` (see [`super::Component::ha`]), and where it is written.
    pub ha: Option<(bool, Origin)>,
}

#[derive(Clone, Debug)]
pub struct Waiver {
    pub rule: (String, Origin),
    pub component: Option<(String, Origin)>,
    pub object: Option<(String, Origin)>,
    pub reason: String,
    pub expires: (String, Origin),
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Environment {
    pub name: String,
    pub file: String,
    pub substrate: (String, Origin),
    pub contract_path: (String, Origin),
    pub topology: Topology,
    pub topology_origin: Origin,
    pub targets: Option<Vec<Target>>,
    pub git: Git,
    pub waivers: Vec<Waiver>,
    pub contract: Contract,
    /// `components:`; `None` takes every component.
    pub components: Option<Selection>,
    /// The components this environment takes, resolved from `components:`
    /// once every component is loaded.
    pub selected: std::collections::BTreeSet<String>,
    /// RFC 6902 patches on the objects strata generates, for any component.
    pub patches: Vec<super::component::Patch>,
    /// Hydration and chart mirrors, as the environment file says.
    pub engines: EngineSettings,
    pub origin: Origin,
}

const KEYS: &[&str] = &[
    "substrate",
    "contract",
    "topology",
    "targets",
    "git",
    "components",
    "patches",
    "waivers",
    "hydrate",
    "charts",
];
const GIT_KEYS: &[&str] = &["url", "ref", "revision", "secret", "path"];
const REF_KEYS: &[&str] = &["branch", "tag", "semver", "commit"];
const SELECTION_KEYS: &[&str] = &["include", "exclude"];
const COMPONENT_HERE_KEYS: &[&str] = &["ha"];
const WAIVER_KEYS: &[&str] = &["rule", "component", "object", "reason", "expires"];

/// The parts of an environment file read before its contract is loaded.
pub struct Header {
    pub substrate: Option<(String, Origin)>,
    pub contract: Option<(String, Origin)>,
    pub topology: (Topology, Origin),
    pub targets: Option<Vec<Target>>,
    pub git: Git,
    pub waivers: Vec<Waiver>,
    pub components: Option<Selection>,
    pub patches: Vec<super::component::Patch>,
    pub engines: EngineSettings,
}

/// What an environment file says about how the engines get the platform:
/// hydrated or as Helm releases, and from which chart mirrors.
#[derive(Clone, Debug, Default)]
pub struct EngineSettings {
    /// `hydrate:`, overriding strata.yaml's, and where it is written.
    pub hydrate: Option<(bool, Origin)>,
    /// `charts:`: mirrors the engines of this environment pull charts from
    /// (an air-gapped cluster's), written into its objects.
    pub charts: super::project::ChartSettings,
}

/// `git@host:org/repo.git` (scp-like): the `ssh://` form Flux accepts, if
/// `url` is one.
pub fn scp_to_ssh(url: &str) -> Option<String> {
    if url.contains("://") {
        return None;
    }
    let (user_host, path) = url.split_once(':')?;
    if user_host.is_empty() || path.is_empty() || user_host.contains('/') {
        return None;
    }
    Some(format!("ssh://{user_host}/{}", path.trim_start_matches('/')))
}

fn decode_git(g: &Node, diags: &mut Vec<Diagnostic>) -> Git {
    let gf = Fields::new(g, "`git`", GIT_KEYS, diags);
    let url = match gf.required_string("url", diags) {
        Some((u, o)) => {
            if let Some(ssh) = scp_to_ssh(&u) {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        o,
                        format!("`{u}` is an scp-like git address, which Flux refuses"),
                    )
                    .with_label("not a URL")
                    .with_help(format!("write it as a URL: `url: {ssh}`")),
                );
            } else if !(u.starts_with("https://") || u.starts_with("http://") || u.starts_with("ssh://")) {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        o,
                        format!("git url `{u}` is not an http, https or ssh URL"),
                    )
                    .with_label("not a URL Flux accepts")
                    .with_help("give the clone URL as the cluster sees it, e.g. https://git.example.com/platform.git"),
                );
            }
            u
        }
        None => String::new(),
    };
    let revision = gf.string("revision", diags);
    let git_ref = match (gf.get("ref"), revision) {
        (Some(r), Some((_, o))) => {
            diags.push(
                Diagnostic::error(codes::SHAPE, o, "`git` has both `ref` and `revision`")
                    .with_label("`revision` is a shorthand for `ref: {branch: …}`")
                    .with_related(r.origin.clone(), "the ref")
                    .with_help("keep one of them"),
            );
            GitRef::Branch("main".into())
        }
        (Some(r), None) => decode_ref(r, diags),
        (None, Some((rev, _))) => GitRef::Branch(rev),
        (None, None) => GitRef::Branch("main".into()),
    };
    let path = gf.string("path", diags).map(|(s, o)| {
        crate::world::normalize(&s).unwrap_or_else(|e| {
            diags.push(Diagnostic::error(codes::SHAPE, o, format!("git path: {e}")));
            String::new()
        })
    });
    Git {
        url,
        git_ref,
        secret: gf.string("secret", diags).map(|(s, _)| s),
        path,
    }
}

/// `git.ref`: exactly one of branch, tag, semver and commit.
fn decode_ref(r: &Node, diags: &mut Vec<Diagnostic>) -> GitRef {
    let rf = Fields::new(r, "`git.ref`", REF_KEYS, diags);
    let given: Vec<(GitRef, Origin)> = REF_KEYS
        .iter()
        .filter_map(|k| {
            let (v, o) = rf.string(k, diags)?;
            let g = match *k {
                "branch" => GitRef::Branch(v),
                "tag" => GitRef::Tag(v),
                "semver" => GitRef::Semver(v),
                _ => GitRef::Commit(v),
            };
            Some((g, o))
        })
        .collect();
    match given.as_slice() {
        [(g, _)] => g.clone(),
        [] => {
            diags.push(
                Diagnostic::error(
                    codes::SHAPE,
                    r.origin.clone(),
                    "`git.ref` names no branch, tag, semver or commit",
                )
                .with_help("give exactly one, e.g. `ref: {branch: main}`"),
            );
            GitRef::Branch("main".into())
        }
        [first, second, ..] => {
            diags.push(
                Diagnostic::error(
                    codes::SHAPE,
                    second.1.clone(),
                    format!(
                        "`git.ref` gives both `{}` and `{}`; Flux would follow one and ignore the other",
                        first.0.flux_field(),
                        second.0.flux_field()
                    ),
                )
                .with_label("a second ref")
                .with_related(first.1.clone(), "the first")
                .with_help("keep exactly one of branch, tag, semver and commit"),
            );
            first.0.clone()
        }
    }
}

fn decode_selection(n: &Node, diags: &mut Vec<Diagnostic>) -> Selection {
    // Keys other than include and exclude name components.
    let f = Fields::open(n, "`components`", SELECTION_KEYS, diags);
    let mut settings = std::collections::BTreeMap::new();
    for (name, e) in n.as_map().into_iter().flatten() {
        if SELECTION_KEYS.contains(&name.as_str()) {
            continue;
        }
        let what = format!("`components.{name}`");
        let cf = Fields::new(&e.node, &what, COMPONENT_HERE_KEYS, diags);
        let ha = cf.bool("ha", diags).zip(cf.get("ha").map(|n| n.origin.clone()));
        settings.insert(name.clone(), (ComponentHere { ha }, e.key_origin.clone()));
    }
    let mut sel = Selection {
        include: f.string_list("include", diags).unwrap_or_default(),
        exclude: f.string_list("exclude", diags).unwrap_or_default(),
        origin: Some(n.origin.clone()),
        settings,
    };
    for (entry, o) in sel.include.iter().chain(sel.exclude.iter()) {
        if let Some(t) = entry.strip_prefix("tier:")
            && t != "core"
            && t != "addon"
        {
            diags.push(
                Diagnostic::error(codes::SHAPE, o.clone(), format!("`{entry}` names no tier"))
                    .with_label("tiers are core and addon")
                    .with_help("write `tier:core` or `tier:addon`, or a component name"),
            );
        }
    }
    if f.get("include").is_none() && f.get("exclude").is_none() {
        sel.origin = None;
    }
    sel
}

impl Environment {
    /// Whether the environment takes a component.
    pub fn takes(&self, component: &str) -> bool {
        self.selected.contains(component)
    }

    /// Whether the HA rules judge every Deployment and StatefulSet of a
    /// component here: `components.<name>.ha` of the environment, else the
    /// component's own `ha:`; and where that is said.
    pub fn ha<'c>(&'c self, c: &'c super::Component) -> Option<&'c (bool, Origin)> {
        self.components
            .as_ref()
            .and_then(|s| s.settings.get(&c.name))
            .and_then(|(here, _)| here.ha.as_ref())
            .or(c.ha.as_ref())
    }
}

/// The contract file each environment of a world's platform names (as a
/// path from the root), read without loading the platform: the files a
/// compile of that world needs besides what git holds.
pub fn contract_paths(world: &dyn crate::world::World) -> Vec<String> {
    let sources = crate::diag::Sources::default();
    let Ok(project) = super::project::Project::read(world, &sources, &mut Vec::new()) else {
        return Vec::new();
    };
    let Ok(entries) = world.list(&project.environments) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| !e.is_dir && e.name.ends_with(".yaml")) {
        let file = crate::world::join(&project.environments, &e.name);
        let Ok(node) = super::files::read_yaml(world, &sources, &file) else {
            continue;
        };
        let header = decode_header(&node, &file, &mut Vec::new());
        if let Some(p) = header.contract.and_then(|(c, _)| crate::world::normalize(&c).ok()) {
            out.push(p);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// An error for each `components.<name>` entry that names no component.
fn unknown_settings(
    env: &Environment,
    components: &std::collections::BTreeMap<String, super::Component>,
    names: &[&str],
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (name, (_, o)) in env.components.iter().flat_map(|s| &s.settings) {
        if components.contains_key(name) {
            continue;
        }
        let d = Diagnostic::error(
            codes::SHAPE,
            o.clone(),
            format!("`components.{name}` names no component"),
        )
        .with_label("no such component");
        diags.push(match super::decode::suggest(name, names) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "keys of `components` are include, exclude and component names: {}",
                super::decode::list_names(names.iter().copied(), ", ")
            )),
        });
    }
    diags
}

/// Resolves an environment's `components:` against the platform's
/// components: names must exist, and a component left out that an included
/// one requires is an error naming both.
pub fn resolve_selection(
    env: &Environment,
    components: &std::collections::BTreeMap<String, super::Component>,
) -> Result<std::collections::BTreeSet<String>, Vec<Diagnostic>> {
    use super::component::Tier;
    let names: Vec<&str> = components.keys().map(String::as_str).collect();
    let mut diags = unknown_settings(env, components, &names);
    let Some(sel) = env.components.as_ref().filter(|s| s.origin.is_some()) else {
        return if diags.is_empty() {
            Ok(components.keys().cloned().collect())
        } else {
            Err(diags)
        };
    };
    let matches = |entry: &str, c: &super::Component| match entry.strip_prefix("tier:") {
        Some("core") => c.tier == Tier::Core,
        Some("addon") => c.tier == Tier::Addon,
        Some(_) => false,
        None => c.name == entry,
    };
    for (entry, o) in sel.include.iter().chain(sel.exclude.iter()) {
        if !entry.starts_with("tier:") && !components.contains_key(entry) {
            let mut d = Diagnostic::error(
                codes::SHAPE,
                o.clone(),
                format!("`components` names `{entry}`, which is no component"),
            )
            .with_label("no such component");
            d = match super::decode::suggest(entry, &names) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!(
                    "components: {}",
                    super::decode::list_names(names.iter().copied(), ", ")
                )),
            };
            diags.push(d);
        }
    }
    let mut selected = std::collections::BTreeSet::new();
    for c in components.values() {
        let included = sel.include.is_empty() || sel.include.iter().any(|(e, _)| matches(e, c));
        let excluded = sel.exclude.iter().any(|(e, _)| matches(e, c));
        if included && !excluded {
            selected.insert(c.name.clone());
        }
    }
    // Bounded: a platform where every component requires every other one
    // and an environment that leaves one out would otherwise get a
    // diagnostic per requirement.
    let mut left_out = 0usize;
    let mut first_unreported: Option<Origin> = None;
    for name in &selected {
        for (req, o) in &components[name].requires {
            if components.contains_key(req) && !selected.contains(req) {
                left_out += 1;
                if left_out > super::graph::MAX_REPORTED {
                    first_unreported.get_or_insert_with(|| o.clone());
                    continue;
                }
                diags.push(
                    Diagnostic::error(
                        codes::GRAPH,
                        o.clone(),
                        format!(
                            "environment {} takes `{name}`, which requires `{req}`, but leaves `{req}` out",
                            env.name
                        ),
                    )
                    .with_label(format!("`{name}` requires it"))
                    .with_related(
                        sel.origin.clone().unwrap_or_else(|| env.origin.clone()),
                        "the environment's `components`",
                    )
                    .with_help(format!(
                        "include `{req}` in environment {}, or leave `{name}` out too",
                        env.name
                    )),
                );
            }
        }
    }
    if let Some(origin) = first_unreported {
        diags.push(
            Diagnostic::error(
                codes::GRAPH,
                origin,
                format!(
                    "environment {} leaves out {} more required component(s); the first is named here",
                    env.name,
                    left_out - super::graph::MAX_REPORTED
                ),
            )
            .with_help("include every component that a component of the environment requires"),
        );
    }
    if diags.is_empty() { Ok(selected) } else { Err(diags) }
}

pub fn decode_header(node: &Node, what: &str, diags: &mut Vec<Diagnostic>) -> Header {
    let f = Fields::new(node, what, KEYS, diags);
    let substrate = f.required_string("substrate", diags);
    let contract = f.required_string("contract", diags);
    let topology = match f.choice("topology", &["ha", "single"], diags) {
        Some((s, o)) if s == "single" => (Topology::Single, o),
        Some((_, o)) => (Topology::Ha, o),
        None => (Topology::Ha, node.origin.clone()),
    };
    let targets = decode_targets(&f, diags);
    let git = match f.required("git", diags) {
        Some(g) => decode_git(g, diags),
        None => Git {
            url: String::new(),
            git_ref: GitRef::Branch("main".into()),
            secret: None,
            path: None,
        },
    };
    let components = f.get("components").map(|n| decode_selection(n, diags));
    let patches = super::component::decode_patches(f.get("patches"), true, diags);
    let engines = EngineSettings {
        hydrate: f
            .get("hydrate")
            .and_then(|n| f.bool("hydrate", diags).map(|b| (b, n.origin.clone()))),
        charts: f
            .get("charts")
            .map(|n| super::project::ChartSettings::decode(n, diags))
            .unwrap_or_default(),
    };
    let mut waivers = Vec::new();
    if let Some(w) = f.get("waivers") {
        match &w.value {
            crate::yaml::Value::Seq(items) => {
                for item in items {
                    if let Some(waiver) = decode_waiver(item, diags) {
                        waivers.push(waiver);
                    }
                }
            }
            _ => diags.push(super::decode::type_error(w, "waivers", "a list of waivers")),
        }
    }
    Header {
        substrate,
        contract,
        topology,
        targets,
        git,
        waivers,
        components,
        patches,
        engines,
    }
}

fn decode_waiver(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<Waiver> {
    let f = Fields::new(node, "a waiver", WAIVER_KEYS, diags);
    let rule = f.required_string("rule", diags);
    let component = f.string("component", diags);
    let object = f.string("object", diags);
    let reason = f.required_string("reason", diags);
    let expires = f.required_string("expires", diags);
    if component.is_none() && object.is_none() {
        diags.push(
            Diagnostic::error(
                codes::WAIVER,
                node.origin.clone(),
                "a waiver names no `component` or `object`",
            )
            .with_help("say what the waiver is for: `component: NAME`, or `object: Kind/namespace/name`"),
        );
    }
    if let Some((e, o)) = &expires
        && !is_date(e)
    {
        diags.push(
            Diagnostic::error(
                codes::WAIVER,
                o.clone(),
                format!("`expires` must be a date YYYY-MM-DD, found `{e}`"),
            )
            .with_label("not a date"),
        );
    }
    Some(Waiver {
        rule: rule?,
        component,
        object,
        reason: reason?.0,
        expires: expires?,
        origin: node.origin.clone(),
    })
}

pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&s[5..7].parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u32>().unwrap_or(0))
}
