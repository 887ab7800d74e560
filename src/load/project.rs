//! `strata.yaml`: where things are in the repository. Every key has a default.

use std::path::{Path, PathBuf};

use super::decode::Fields;
use crate::diag::{Diagnostic, Sources, codes};
use crate::world::World;
use crate::yaml::{Node, Origin, Value};

pub const FILE: &str = "strata.yaml";
/// Where the rendered tree goes unless `output:` says otherwise.
pub const DEFAULT_OUTPUT: &str = "rendered";

/// A GitOps engine strata writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Flux,
    Argo,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Flux, Target::Argo];

    pub fn name(self) -> &'static str {
        match self {
            Target::Flux => "flux",
            Target::Argo => "argo",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        match s {
            "flux" => Some(Target::Flux),
            "argo" => Some(Target::Argo),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Project {
    pub platform: String,
    pub environments: String,
    pub output: String,
    pub targets: Vec<Target>,
    pub layers: Vec<String>,
    pub host_label: Option<String>,
    pub kubernetes_version: String,
    /// `schemas:` as written; `None` when absent (`[]` says: no schemas,
    /// and no note about it).
    pub schemas: Option<Vec<String>>,
    pub profiles: String,
    pub substrates: String,
    pub templates: String,
    /// When charts are rendered with helm.
    pub inflate: InflateMode,
    /// Where `inflate:` is written, if it is.
    pub inflate_origin: Option<Origin>,
    /// Argo CD: where Applications live, their AppProject, their retry.
    pub argo: ArgoSettings,
    /// Where `strata schemas pull` fetches schemas from.
    pub schemas_source: SchemaSources,
    /// Decision records whose rollout gates `strata gates` computes.
    pub decisions: Vec<Decision>,
    /// `hydrate:`: environments are written as the objects the charts
    /// render, not as Helm releases (an environment may say otherwise),
    /// and where it is written.
    pub hydrate: (bool, Option<Origin>),
    /// `crds_provided:`: API groups whose CRDs the cluster already has,
    /// each a group or an API version of one (`group/version`, or
    /// `group/version/Kind`); see [`Project::provided_group`].
    pub crds_provided: Vec<(String, Origin)>,
    /// `charts:`: where `strata charts pull` fetches charts from.
    pub charts: ChartSettings,
    /// `cni:`: the component that is the cluster's CNI, when strata should
    /// not recognise it from what is rendered.
    pub cni: Option<(String, Origin)>,
    /// `cni: {component, bootstrap: external}`: the CNI is installed
    /// outside strata (a Talos patch of the user's own, helmfile, …), so
    /// the substrate files carry none of its objects; where it is said.
    pub cni_external: Option<Origin>,
    pub origin: Origin,
}

/// `charts:` of strata.yaml or an environment.
#[derive(Clone, Debug, Default)]
pub struct ChartSettings {
    /// `mirrors:`, upstream URL prefix to mirror prefix, in the order written.
    pub mirrors: Vec<Mirror>,
}

/// A chart mirror: charts whose repository URL starts with `upstream` are
/// fetched from (or, in an environment, pulled by the engines from) the
/// same path under `mirror`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    pub upstream: String,
    pub mirror: String,
    pub origin: Origin,
}

impl ChartSettings {
    /// The mirror's URL for a chart repository URL: the longest upstream
    /// prefix that matches, replaced by its mirror; `None` without one.
    /// Both are compared as URLs (see [`url_key`]): a key with or without
    /// a trailing slash, in another case of host, or with the scheme's
    /// default port written out, matches the same repositories.
    pub fn mirrored(&self, repo_url: &str) -> Option<(String, &Mirror)> {
        let url = url_key(repo_url);
        self.mirrors
            .iter()
            .filter_map(|m| {
                let key = url_key(&m.upstream);
                let rest = url.strip_prefix(key.as_str())?;
                (rest.is_empty() || rest.starts_with('/')).then(|| (key.len(), rest.to_owned(), m))
            })
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, rest, m)| {
                let url = if rest.is_empty() {
                    m.mirror.clone()
                } else {
                    format!("{}{rest}", m.mirror.trim_end_matches('/'))
                };
                (url, m)
            })
    }

    /// The mirrors no URL of `urls` goes through.
    pub fn unused(&self, urls: &[&str]) -> Vec<&Mirror> {
        let used: Vec<&Mirror> = urls.iter().filter_map(|u| self.mirrored(u).map(|(_, m)| m)).collect();
        self.mirrors
            .iter()
            .filter(|m| !used.iter().any(|u| std::ptr::eq(*u, *m)))
            .collect()
    }

    /// `charts:` as written in strata.yaml or an environment file.
    pub fn decode(node: &Node, diags: &mut Vec<Diagnostic>) -> ChartSettings {
        let f = Fields::new(node, "`charts`", CHARTS_KEYS, diags);
        let mut mirrors = Vec::new();
        if let Some(m) = f.get("mirrors") {
            match m.as_map() {
                Some(map) => {
                    for (upstream, e) in map {
                        let Some(mirror) = e.node.as_str() else {
                            diags.push(super::decode::type_error(&e.node, upstream, "a URL prefix"));
                            continue;
                        };
                        match mirror_problem(upstream, mirror) {
                            Some(why) => diags.push(
                                Diagnostic::error(codes::SHAPE, e.node.origin.clone(), why)
                                    .with_help("map an upstream prefix to a mirror of the same kind: `https://charts.example.org: https://mirror.example.net/charts`, or `oci://ghcr.io/: oci://registry.example.net/ghcr/`"),
                            ),
                            None => mirrors.push(Mirror {
                                upstream: upstream.clone(),
                                mirror: mirror.to_owned(),
                                origin: e.node.origin.clone(),
                            }),
                        }
                    }
                }
                None => diags.push(super::decode::type_error(
                    m,
                    "mirrors",
                    "a mapping of upstream URL prefix to mirror",
                )),
            }
        }
        ChartSettings { mirrors }
    }
}

/// A repository URL as mirrors compare it, the way a URL names a place
/// (RFC 3986 section 6.2.3): the scheme and host in lower case, the
/// scheme's default port left out (443 for `https://` and `oci://`, whose
/// registries Helm reaches over HTTPS; 80 for `http://`), and no trailing
/// slash. The path keeps its case: servers tell paths apart by it.
pub fn url_key(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.trim_end_matches('/').to_owned();
    };
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let (userinfo, host) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
    let mut host = host.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "https" | "oci" => ":443",
        "http" => ":80",
        _ => "",
    };
    if !default.is_empty() && host.ends_with(default) {
        host.truncate(host.len() - default.len());
    }
    let at = if userinfo.is_empty() { "" } else { "@" };
    format!("{scheme}://{userinfo}{at}{host}{}", path.trim_end_matches('/'))
}

/// What is wrong with a mirror entry, if anything: both sides must be
/// `http(s)://` URLs, or both `oci://` references.
fn mirror_problem(upstream: &str, mirror: &str) -> Option<String> {
    let kind = |u: &str| {
        let u = u.to_ascii_lowercase();
        if u.starts_with("oci://") {
            Some("oci")
        } else if u.starts_with("https://") || u.starts_with("http://") {
            Some("http")
        } else {
            None
        }
    };
    match (kind(upstream), kind(mirror)) {
        (None, _) => Some(format!(
            "mirror key `{upstream}` is not an http(s):// or oci:// URL prefix"
        )),
        (_, None) => Some(format!("mirror `{mirror}` is not an http(s):// or oci:// URL prefix")),
        (Some(a), Some(b)) if a != b => Some(format!(
            "`{upstream}` and its mirror `{mirror}` are not the same kind of repository (one is OCI, the other is not)"
        )),
        _ if mirror.chars().any(char::is_whitespace) || upstream.chars().any(char::is_whitespace) => {
            Some("a mirror URL holds no spaces".to_owned())
        }
        _ => None,
    }
}

/// When strata renders charts with helm (`inflate:` in strata.yaml, `--inflate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InflateMode {
    /// Every component whose chart is in the store, when helm is on the PATH;
    /// the rest through profiles.
    #[default]
    Auto,
    /// Every component; a missing helm or archive is an input error.
    Helm,
    /// Never: every component through profiles.
    Off,
}

impl InflateMode {
    pub fn parse(s: &str) -> Option<InflateMode> {
        match s {
            "auto" => Some(InflateMode::Auto),
            "helm" => Some(InflateMode::Helm),
            "off" => Some(InflateMode::Off),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            InflateMode::Auto => "auto",
            InflateMode::Helm => "helm",
            InflateMode::Off => "off",
        }
    }
}

/// Where Kubernetes' schemas are fetched from by default: kubeconform's
/// layout, standalone and strict.
pub const DEFAULT_KUBERNETES: &str = "https://raw.githubusercontent.com/yannh/kubernetes-json-schema/master/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json";

/// Where custom resources' schemas are fetched from by default: the CRDs
/// catalog's layout.
pub const DEFAULT_CRDS: &str = "https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json";

/// The URL templates to fetch from (`schemas_source:` in strata.yaml).
#[derive(Clone, Debug)]
pub struct SchemaSources {
    pub kubernetes: String,
    pub crds: String,
}

impl Default for SchemaSources {
    fn default() -> Self {
        SchemaSources {
            kubernetes: DEFAULT_KUBERNETES.to_owned(),
            crds: DEFAULT_CRDS.to_owned(),
        }
    }
}

/// A decision record and its rollout gates (`decisions:`).
#[derive(Clone, Debug)]
pub struct Decision {
    /// The record, a Markdown file relative to the repository root.
    pub record: (String, Origin),
    pub gates: Vec<Gate>,
    pub origin: Origin,
}

/// A rollout gate: its text in the record, and what must hold for it to be
/// done — every listed rule without a finding and every listed check
/// passing, in every listed environment.
#[derive(Clone, Debug)]
pub struct Gate {
    pub text: (String, Origin),
    /// Environment names, or `*` for every environment.
    pub envs: Vec<(String, Origin)>,
    pub rules: Vec<(String, Origin)>,
    pub checks: Vec<(String, Origin)>,
    /// Where `measured: true` is written, when it is.
    pub measured: Option<Origin>,
    pub origin: Origin,
}

const KEYS: &[&str] = &[
    "project",
    "platform",
    "environments",
    "output",
    "targets",
    "layers",
    "host_label",
    "kubernetes_version",
    "schemas",
    "profiles",
    "substrates",
    "templates",
    "inflate",
    "argo",
    "schemas_source",
    "decisions",
    "hydrate",
    "crds_provided",
    "charts",
    "cni",
];
const CHARTS_KEYS: &[&str] = &["mirrors"];
const CNI_KEYS: &[&str] = &["component", "bootstrap"];
const SOURCE_KEYS: &[&str] = &["kubernetes", "crds"];
const DECISION_KEYS: &[&str] = &["record", "gates"];
const GATE_KEYS: &[&str] = &["gate", "envs", "rules", "checks", "measured"];
const ARGO_KEYS: &[&str] = &["namespace", "project", "retry"];

/// Argo CD settings of the platform.
#[derive(Clone, Debug)]
pub struct ArgoSettings {
    /// The namespace Argo CD watches for Applications.
    pub namespace: String,
    /// The AppProject every Application belongs to.
    pub project: String,
    /// `syncPolicy.retry` of every Application (a component may set its own).
    pub retry: super::component::Retry,
}

impl Default for ArgoSettings {
    fn default() -> Self {
        ArgoSettings {
            namespace: "argocd".into(),
            project: "default".into(),
            retry: super::component::Retry::default(),
        }
    }
}

pub const DEFAULT_LAYERS: [&str; 3] = ["values.yaml", "values-{env}.yaml", "values-substrate-{substrate}.yaml"];

impl Project {
    /// Whether the cluster has the CRDs of an API group before any
    /// component runs (`crds_provided:` names it, or a version of it).
    pub fn provided_group(&self, group: &str) -> bool {
        self.crds_provided
            .iter()
            .any(|(g, _)| g.split('/').next() == Some(group))
    }

    /// `strata.yaml` of a world, decoded; absent, every key takes its
    /// default. `Err`: the file is there but cannot be read.
    pub fn read(world: &dyn World, sources: &Sources, diags: &mut Vec<Diagnostic>) -> Result<Project, Diagnostic> {
        let node = match super::files::read_yaml_if_exists(world, sources, FILE)? {
            Some(node) => node,
            None => Node {
                value: Value::Map(Default::default()),
                origin: Origin::file_start(FILE),
            },
        };
        Ok(Project::decode(&node, diags))
    }

    pub fn decode(node: &Node, diags: &mut Vec<Diagnostic>) -> Project {
        let f = Fields::new(node, FILE, KEYS, diags);
        let dir = |key: &str, default: &str, diags: &mut Vec<Diagnostic>| -> String {
            match f.string(key, diags) {
                Some((s, o)) => match crate::world::normalize(&s) {
                    Ok(p) => p,
                    Err(e) => {
                        diags.push(
                            Diagnostic::error(codes::SHAPE, o, format!("`{key}`: {e}"))
                                .with_help("use a path relative to the repository root"),
                        );
                        default.to_owned()
                    }
                },
                None => default.to_owned(),
            }
        };
        let platform = dir("platform", "gitops/platform", diags);
        let environments = dir("environments", "environments", diags);
        let output = dir("output", DEFAULT_OUTPUT, diags);
        let profiles = dir("profiles", "profiles", diags);
        let substrates = dir("substrates", "substrates", diags);
        let templates = dir("templates", "templates", diags);
        let targets = decode_targets(&f, diags).unwrap_or_else(|| Target::ALL.to_vec());
        let layers = f
            .string_list("layers", diags)
            .map(|l| l.into_iter().map(|(s, _)| s).collect())
            .unwrap_or_else(|| DEFAULT_LAYERS.iter().map(|s| s.to_string()).collect());
        let host_label = f.string("host_label", diags).map(|(s, _)| s);
        let kubernetes_version = f
            .string("kubernetes_version", diags)
            .map_or_else(|| "1.35".to_owned(), |(s, _)| s);
        let schemas = f
            .string_list("schemas", diags)
            .map(|l| l.into_iter().map(|(s, _)| s).collect());
        let (inflate, inflate_origin) = match f.choice("inflate", &["auto", "helm", "off"], diags) {
            Some((s, o)) => (InflateMode::parse(&s).unwrap_or_default(), Some(o)),
            None => (InflateMode::Auto, None),
        };
        let argo = f.get("argo").map(|a| decode_argo(a, diags)).unwrap_or_default();
        let schemas_source = f
            .get("schemas_source")
            .map(|n| decode_schemas_source(n, diags))
            .unwrap_or_default();
        let decisions = f
            .get("decisions")
            .map(|d| decode_decisions(d, diags))
            .unwrap_or_default();
        let hydrate = (
            f.bool("hydrate", diags).unwrap_or(false),
            f.get("hydrate").map(|n| n.origin.clone()),
        );
        let crds_provided = f.string_list("crds_provided", diags).unwrap_or_default();
        let charts = f
            .get("charts")
            .map(|n| ChartSettings::decode(n, diags))
            .unwrap_or_default();
        let (cni, cni_external) = f.get("cni").map_or((None, None), |n| decode_cni(n, diags));
        Project {
            hydrate,
            crds_provided,
            charts,
            cni,
            cni_external,
            schemas_source,
            argo,
            decisions,
            inflate,
            inflate_origin,
            platform,
            environments,
            output,
            targets,
            layers,
            host_label,
            kubernetes_version,
            schemas,
            profiles,
            substrates,
            templates,
            origin: node.origin.clone(),
        }
    }
}

/// `cni:`: a component name, or `{component: NAME, bootstrap: external}`
/// (`bootstrap: strata`, the default, has strata's substrate files apply
/// the CNI); the name, and where `bootstrap: external` is written.
fn decode_cni(n: &Node, diags: &mut Vec<Diagnostic>) -> (Option<(String, Origin)>, Option<Origin>) {
    if let Some(name) = n.as_str() {
        return (Some((name.to_owned(), n.origin.clone())), None);
    }
    if n.as_map().is_none() {
        diags.push(super::decode::type_error(
            n,
            "cni",
            "a component name, or `{component: NAME, bootstrap: external}`",
        ));
        return (None, None);
    }
    let f = Fields::new(n, "`cni`", CNI_KEYS, diags);
    let component = f.required_string("component", diags);
    let external = match f.choice("bootstrap", &["strata", "external"], diags) {
        Some((b, o)) if b == "external" => Some(o),
        _ => None,
    };
    (component, external)
}

/// `argo:`: the namespace and project of the Applications, and their retry.
fn decode_argo(a: &Node, diags: &mut Vec<Diagnostic>) -> ArgoSettings {
    let mut argo = ArgoSettings::default();
    let af = Fields::new(a, "`argo`", ARGO_KEYS, diags);
    if let Some((ns, o)) = af.string("namespace", diags) {
        if super::names::is_dns_label(&ns, 63) {
            argo.namespace = ns;
        } else {
            diags.push(Diagnostic::error(
                codes::NAME,
                o,
                format!("`{ns}` is not a namespace name"),
            ));
        }
    }
    if let Some((p, _)) = af.string("project", diags) {
        argo.project = p;
    }
    if let Some(r) = af.get("retry") {
        argo.retry = super::component::decode_retry(r, diags);
    }
    argo
}

/// `schemas_source:`: where `strata schemas pull` fetches from.
fn decode_schemas_source(n: &Node, diags: &mut Vec<Diagnostic>) -> SchemaSources {
    let mut schemas_source = SchemaSources::default();
    let sf = Fields::new(n, "`schemas_source`", SOURCE_KEYS, diags);
    if let Some((k, _)) = sf.string("kubernetes", diags) {
        schemas_source.kubernetes = k;
    }
    if let Some((c, _)) = sf.string("crds", diags) {
        schemas_source.crds = c;
    }
    schemas_source
}

/// `decisions:`: a list of records, each with its gates.
fn decode_decisions(node: &Node, diags: &mut Vec<Diagnostic>) -> Vec<Decision> {
    let Value::Seq(items) = &node.value else {
        diags.push(super::decode::type_error(
            node,
            "decisions",
            "a list of decision records",
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let f = Fields::new(item, "a decision", DECISION_KEYS, diags);
        let record = f
            .required_string("record", diags)
            .and_then(|(r, o)| match crate::world::normalize(&r) {
                Ok(p) => Some((p, o)),
                Err(e) => {
                    diags.push(
                        Diagnostic::error(codes::SHAPE, o, format!("`record`: {e}"))
                            .with_help("use a path relative to the repository root"),
                    );
                    None
                }
            });
        let mut gates = Vec::new();
        match f.required("gates", diags).map(|g| (g, &g.value)) {
            Some((_, Value::Seq(list))) => {
                for g in list {
                    if let Some(gate) = decode_gate(g, diags) {
                        gates.push(gate);
                    }
                }
            }
            Some((g, _)) => diags.push(super::decode::type_error(g, "gates", "a list of gates")),
            None => {}
        }
        if let Some(record) = record {
            out.push(Decision {
                record,
                gates,
                origin: item.origin.clone(),
            });
        }
    }
    out
}

fn decode_gate(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<Gate> {
    let f = Fields::new(node, "a gate", GATE_KEYS, diags);
    let text = f.required_string("gate", diags);
    let envs = f.required("envs", diags).and(f.string_list("envs", diags));
    let rules = f.string_list("rules", diags).unwrap_or_default();
    let checks = f.string_list("checks", diags).unwrap_or_default();
    let measured = match f.bool("measured", diags) {
        Some(true) => f.get("measured").map(|n| n.origin.clone()),
        _ => None,
    };
    let (text, envs) = (text?, envs?);
    if envs.is_empty() {
        diags.push(
            Diagnostic::error(
                codes::SHAPE,
                f.get("envs")?.origin.clone(),
                "`envs` lists no environment",
            )
            .with_help("list environment names, or `\"*\"` for every environment"),
        );
        return None;
    }
    if rules.is_empty() && checks.is_empty() && measured.is_none() {
        diags.push(
            Diagnostic::error(
                codes::SHAPE,
                text.1.clone(),
                "this gate lists no `rules`, no `checks` and no `measured: true`, so nothing could tell it is done",
            )
            .with_help("list the rules that must pass (`rules: [TOPO001]`), the checks (`checks: [host-failure]`), or `measured: true`"),
        );
        return None;
    }
    Some(Gate {
        text,
        envs,
        rules,
        checks,
        measured,
        origin: node.origin.clone(),
    })
}

pub fn decode_targets(f: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> Option<Vec<Target>> {
    let list = f.string_list("targets", diags)?;
    let mut out = Vec::new();
    for (s, o) in list {
        match Target::parse(&s) {
            Some(t) if !out.contains(&t) => out.push(t),
            Some(_) => {}
            None => diags.push(
                Diagnostic::error(codes::SHAPE, o, format!("unknown target `{s}`"))
                    .with_label("not a target")
                    .with_help("targets are `flux` and `argo`"),
            ),
        }
    }
    if out.is_empty() {
        diags.push(
            Diagnostic::error(codes::SHAPE, f.origin(), "`targets` lists no target")
                .with_help("list `flux`, `argo`, or both"),
        );
    }
    out.sort();
    Some(out)
}

/// Follows `project: DIR` in a `strata.yaml`: a repository whose platform
/// lives in a subfolder (a monorepo, or this repository's example) says so
/// in a one-line `strata.yaml` at its root, and strata works in `DIR`.
pub fn follow_redirect(root: &Path) -> Result<PathBuf, String> {
    let top = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut root = root.to_path_buf();
    for _ in 0..8 {
        let path = root.join(FILE);
        // Only a regular file inside the repository, within the input size
        // limit, is read here; anything else (a link out of the repository,
        // a device) is left for the load to report.
        let inside = path.canonicalize().is_ok_and(|real| real.starts_with(&top));
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= crate::yaml::MAX_INPUT_BYTES as u64);
        if !(inside && small) {
            return Ok(root);
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(root);
        };
        let file: std::sync::Arc<str> = std::sync::Arc::from(path.display().to_string());
        let Ok(node) = crate::yaml::parse(&file, &text) else {
            return Ok(root);
        };
        let Some(n) = node.get("project") else { return Ok(root) };
        let Some(dir) = n.as_str() else {
            return Err(format!("{}: `project` must be a folder path", n.origin));
        };
        let rel = crate::world::normalize(dir).map_err(|e| format!("{}: `project`: {e}", n.origin))?;
        let next = root.join(&rel);
        if !next.canonicalize().is_ok_and(|real| real.starts_with(&top)) {
            return Err(format!(
                "{}: `project: {dir}` leads out of the repository (through a symbolic link)\n  = help: \
                 point `project:` at a real folder inside the repository",
                n.origin
            ));
        }
        if !next.join(FILE).is_file() {
            return Err(format!("{}: `project: {dir}` names a folder with no {FILE}", n.origin));
        }
        if node.as_map().is_some_and(|m| m.len() > 1) {
            return Err(format!("{}: a strata.yaml with `project` takes no other key", n.origin));
        }
        root = next;
    }
    Err(format!("{}: `project` redirects loop", root.display()))
}

/// Finds the directory holding `strata.yaml`, walking up from `start` as
/// cargo does for Cargo.toml.
pub fn discover(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(FILE).is_file() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirrors(pairs: &[(&str, &str)]) -> ChartSettings {
        ChartSettings {
            mirrors: pairs
                .iter()
                .map(|(u, m)| Mirror {
                    upstream: (*u).to_owned(),
                    mirror: (*m).to_owned(),
                    origin: Origin::file_start(FILE),
                })
                .collect(),
        }
    }

    #[test]
    fn urls_are_compared_as_urls() {
        assert_eq!(
            url_key("HTTPS://Charts.Example.ORG:443/Team/"),
            "https://charts.example.org/Team"
        );
        assert_eq!(url_key("http://example.org:80"), "http://example.org");
        assert_eq!(url_key("http://example.org:8080/x"), "http://example.org:8080/x");
        assert_eq!(url_key("oci://GHCR.io:443/org/"), "oci://ghcr.io/org");
        assert_eq!(url_key("https://u@Host.org/a"), "https://u@host.org/a");
    }

    #[test]
    fn a_mirror_key_matches_whatever_its_trailing_slash_case_or_port() {
        let m = mirrors(&[("https://charts.example.org/", "https://mirror.example.net/charts")]);
        for url in [
            "https://charts.example.org",
            "https://charts.example.org/",
            "https://Charts.Example.org",
            "https://charts.example.org:443",
        ] {
            assert_eq!(m.mirrored(url).unwrap().0, "https://mirror.example.net/charts", "{url}");
        }
        assert_eq!(
            m.mirrored("https://charts.example.org/team/").unwrap().0,
            "https://mirror.example.net/charts/team"
        );
        // Not at a boundary, another port or another scheme: no match.
        for url in [
            "https://charts.example.org.evil",
            "https://charts.example.orgx/a",
            "https://charts.example.org:8443",
            "http://charts.example.org",
        ] {
            assert!(m.mirrored(url).is_none(), "{url}");
        }
        // The longest key wins, however each is written.
        let m = mirrors(&[
            ("oci://ghcr.io", "oci://registry.example.net/ghcr/"),
            ("oci://GHCR.io/team/", "oci://registry.example.net/team"),
        ]);
        assert_eq!(
            m.mirrored("oci://ghcr.io/org/charts").unwrap().0,
            "oci://registry.example.net/ghcr/org/charts"
        );
        assert_eq!(
            m.mirrored("oci://ghcr.io/team/charts").unwrap().0,
            "oci://registry.example.net/team/charts"
        );
        let unused = m.unused(&["oci://ghcr.io/org/charts"]);
        assert_eq!(unused.len(), 1);
        assert_eq!(unused[0].upstream, "oci://GHCR.io/team/");
    }
}
