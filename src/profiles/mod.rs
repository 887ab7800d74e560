//! Chart profiles: for one Helm chart and version range, where its values
//! keep what the rules judge (replicas, PodDisruptionBudget switches, spread,
//! Service settings, requests) and what the chart does when a value is unset.
//! The built-in profiles are embedded; a repository's `profiles/` folder
//! (strata.yaml `profiles`) replaces a built-in profile of the same chart.
//! The format is described in `substrates/profiles/README.md`.

pub mod known;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::charts::ChartInfo;
use crate::charts::archive::Dependency;
use crate::diag::{Diagnostic, Sources, codes};
use crate::load::decode::{Fields, expect_str, suggest, type_error};
use crate::load::{Component, Platform};
use crate::world::World;
use crate::yaml::{self, Node, Origin, Value};

/// The built-in profiles, embedded in the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    ("argo-cd.yaml", include_str!("../../substrates/profiles/argo-cd.yaml")),
    (
        "cert-manager.yaml",
        include_str!("../../substrates/profiles/cert-manager.yaml"),
    ),
    ("cilium.yaml", include_str!("../../substrates/profiles/cilium.yaml")),
    ("coredns.yaml", include_str!("../../substrates/profiles/coredns.yaml")),
    (
        "external-secrets.yaml",
        include_str!("../../substrates/profiles/external-secrets.yaml"),
    ),
    ("longhorn.yaml", include_str!("../../substrates/profiles/longhorn.yaml")),
    ("traefik.yaml", include_str!("../../substrates/profiles/traefik.yaml")),
];

/// A value of the chart: its dotted path and the chart's default.
#[derive(Clone, Debug)]
pub struct ValueRef {
    pub path: String,
    pub default: Node,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Deployment => "Deployment",
            Kind::StatefulSet => "StatefulSet",
            Kind::DaemonSet => "DaemonSet",
        }
    }
}

/// An `int-or-string` bound of a PodDisruptionBudget, as the chart writes it.
#[derive(Clone, Debug, Default)]
pub struct Unset {
    pub min_available: Option<Node>,
    pub max_unavailable: Option<Node>,
}

#[derive(Clone, Debug)]
pub struct PdbSpec {
    /// Absent: the PDB always exists (e.g. created by the software at run time).
    pub enabled: Option<ValueRef>,
    pub min_available: Option<ValueRef>,
    pub max_unavailable: Option<ValueRef>,
    pub rendered_when_unset: Unset,
    /// Who creates the PDB when it is not the chart.
    pub managed_by: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpreadKind {
    RequiredAntiAffinity,
    PreferredAntiAffinity,
    TopologySpread,
}

#[derive(Clone, Debug)]
pub struct BuiltinSpread {
    pub kind: SpreadKind,
    pub topology_key: String,
}

#[derive(Clone, Debug)]
pub struct Condition {
    pub value: ValueRef,
    pub equals: Node,
    pub when_replicas_above: i64,
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub id: String,
    pub title: String,
    pub kind: Kind,
    pub adr007: bool,
    /// The software creates it at run time (no chart renders it), so it is
    /// judged through the profile even when the chart is rendered.
    pub runtime: bool,
    pub enabled: Option<ValueRef>,
    pub replicas: Option<ValueRef>,
    pub pod_labels: BTreeMap<String, String>,
    pub pdb: Option<PdbSpec>,
    pub affinity: Option<ValueRef>,
    pub topology_spread: Option<ValueRef>,
    pub builtin_spread: Option<BuiltinSpread>,
    pub resources: Option<ValueRef>,
    pub node_selector: Option<ValueRef>,
    /// CPU the software reserves on every node this workload runs on, in
    /// percent of the node (Longhorn's instance managers).
    pub reserved_cpu_percent: Option<ValueRef>,
    pub conditions: Vec<Condition>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct ServiceSpec {
    pub id: String,
    pub enabled: Option<ValueRef>,
    pub kind: Option<ValueRef>,
    pub external_traffic_policy: Option<ValueRef>,
}

#[derive(Clone, Debug)]
pub struct Storage {
    pub replica_count: Option<ValueRef>,
    pub default_setting_replica_count: Option<ValueRef>,
    pub node_selectors: Vec<ValueRef>,
    pub tolerations: Vec<ValueRef>,
    pub system_managed_node_selector: Option<ValueRef>,
}

#[derive(Clone, Debug)]
pub struct Profile {
    pub chart: String,
    pub versions: semver::VersionReq,
    pub versions_text: String,
    pub versions_origin: Origin,
    pub source: String,
    pub workloads: Vec<Workload>,
    pub services: Vec<ServiceSpec>,
    pub storage: Option<Storage>,
    /// `crd_groups:` API groups whose CRDs the chart ships, or its
    /// controllers register when they start (Cilium's operator): what
    /// ORD001 knows of a chart it cannot see rendered, or of CRDs no
    /// render shows.
    pub crd_groups: Vec<(String, Origin)>,
    pub file: Arc<str>,
    /// The profile as written, for tools that look up a path's default.
    pub node: Node,
}

impl Profile {
    /// `profile traefik (>=37.0.0, <38.0.0)`, for notes.
    pub fn describe(&self) -> String {
        format!(
            "profile {} for versions {}, {}",
            self.chart, self.versions_text, self.file
        )
    }
}

/// Profiles by chart name.
#[derive(Clone, Debug, Default)]
pub struct Profiles {
    pub by_chart: BTreeMap<String, Profile>,
}

impl Profiles {
    /// The profile that describes a component's chart, if any.
    pub fn for_component(&self, c: &Component) -> Option<&Profile> {
        self.by_chart.get(c.profile_name())
    }

    /// The profiles that describe what a component's chart runs, each with
    /// where its values sit. The profile the component names (`profile:`,
    /// else its chart's name) describes the chart itself — unless the chart
    /// (`info`, when strata has it) is a wrapper with a dependency of that
    /// chart, whose values sit under the dependency's key. A chart no
    /// profile describes, and whose component names none, is described by
    /// the profiles of its dependencies, each under its key.
    pub fn bindings<'a>(&'a self, c: &Component, info: Option<&ChartInfo>) -> Vec<Binding<'a>> {
        let nested = |d: &Dependency, profile: &'a Profile| {
            let info = info?;
            let version = info
                .subchart(d.values_key())
                .map_or_else(|| d.version.clone(), |s| s.version.clone());
            Some(Binding {
                profile,
                nested: Some(Nested {
                    key: d.values_key().to_owned(),
                    chart: d.name.clone(),
                    version,
                    wrapper: info.name.clone(),
                    condition: d.condition.clone(),
                }),
            })
        };
        let deps = info.map(|i| i.dependencies.as_slice()).unwrap_or_default();
        if let Some(p) = self.for_component(c) {
            let of_p: Vec<Binding<'a>> = deps
                .iter()
                .filter(|d| d.name == p.chart)
                .filter_map(|d| nested(d, p))
                .collect();
            if of_p.is_empty() {
                return vec![Binding {
                    profile: p,
                    nested: None,
                }];
            }
            return of_p;
        }
        if c.profile.is_some() {
            return Vec::new();
        }
        deps.iter()
            .filter_map(|d| nested(d, self.by_chart.get(&d.name)?))
            .collect()
    }
}

/// A chart a profile describes inside a component's chart: a dependency of
/// a wrapper chart, whose values sit under its key in the wrapper's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nested {
    /// The values key: the dependency's alias, or its name.
    pub key: String,
    /// The dependency's chart name.
    pub chart: String,
    /// The dependency's version: the bundled chart's, else the version (or
    /// range) the wrapper's Chart.yaml asks for.
    pub version: String,
    /// The wrapper chart's name.
    pub wrapper: String,
    /// The values path(s) that switch the dependency on (`condition:`).
    pub condition: Option<String>,
}

impl Nested {
    /// A profile's values path, as the wrapper's values hold it.
    pub fn path(&self, path: &str) -> String {
        format!("{}.{path}", self.key)
    }

    /// `its values sit under `traefik:` (dependency traefik 37.1.0 of chart edge)`.
    pub fn describe(&self) -> String {
        format!(
            "its values sit under `{}:` (dependency {} {} of chart {})",
            self.key, self.chart, self.version, self.wrapper
        )
    }
}

/// A chart profile as it applies to one component: to its chart, or, for a
/// wrapper chart, to one of its dependencies.
#[derive(Clone, Debug)]
pub struct Binding<'a> {
    pub profile: &'a Profile,
    pub nested: Option<Nested>,
}

impl Binding<'_> {
    /// A profile's values path, as the component's values hold it.
    pub fn path(&self, path: &str) -> String {
        self.nested.as_ref().map_or_else(|| path.to_owned(), |n| n.path(path))
    }
}

const KEYS: &[&str] = &[
    "chart",
    "versions",
    "source",
    "workloads",
    "services",
    "storage",
    "notes",
    "crd_groups",
];
const WORKLOAD_KEYS: &[&str] = &[
    "id",
    "title",
    "kind",
    "adr007",
    "runtime",
    "enabled",
    "replicas",
    "pod_labels",
    "pdb",
    "affinity",
    "topology_spread",
    "builtin_spread",
    "resources",
    "node_selector",
    "reserved_cpu_percent",
    "conditions",
];
const PDB_KEYS: &[&str] = &[
    "enabled",
    "min_available",
    "max_unavailable",
    "rendered_when_unset",
    "managed_by",
];
const UNSET_KEYS: &[&str] = &["min_available", "max_unavailable"];
const REF_KEYS: &[&str] = &["path", "default"];
const SPREAD_KEYS: &[&str] = &["kind", "topology_key"];
const COND_KEYS: &[&str] = &["path", "default", "equals", "when_replicas_above", "why"];
const SERVICE_KEYS: &[&str] = &["id", "enabled", "type", "external_traffic_policy"];
const STORAGE_KEYS: &[&str] = &[
    "replica_count",
    "default_setting_replica_count",
    "node_selectors",
    "tolerations",
    "system_managed_node_selector",
];

fn null_at(origin: &Origin) -> Node {
    Node {
        value: Value::Null,
        origin: origin.clone(),
    }
}

fn value_ref(n: &Node, what: &str, diags: &mut Vec<Diagnostic>) -> Option<ValueRef> {
    let f = Fields::new(n, what, REF_KEYS, diags);
    let (path, _) = f.required_string("path", diags)?;
    let default = f.get("default").cloned().unwrap_or_else(|| null_at(&n.origin));
    Some(ValueRef { path, default })
}

fn opt_ref(f: &Fields<'_>, key: &str, diags: &mut Vec<Diagnostic>) -> Option<ValueRef> {
    f.get(key).and_then(|n| value_ref(n, &format!("`{key}`"), diags))
}

fn ref_list(f: &Fields<'_>, key: &str, diags: &mut Vec<Diagnostic>) -> Vec<ValueRef> {
    match f.get(key).map(|n| (n, &n.value)) {
        Some((_, Value::Seq(items))) => items
            .iter()
            .filter_map(|i| value_ref(i, &format!("an entry of `{key}`"), diags))
            .collect(),
        Some((n, _)) => {
            diags.push(type_error(n, key, "a list of value references"));
            Vec::new()
        }
        None => Vec::new(),
    }
}

fn decode_pdb(n: &Node, diags: &mut Vec<Diagnostic>) -> PdbSpec {
    let f = Fields::new(n, "`pdb`", PDB_KEYS, diags);
    let rendered_when_unset = match f.get("rendered_when_unset") {
        Some(u) => {
            let uf = Fields::new(u, "`rendered_when_unset`", UNSET_KEYS, diags);
            Unset {
                min_available: uf.get("min_available").cloned(),
                max_unavailable: uf.get("max_unavailable").cloned(),
            }
        }
        None => Unset::default(),
    };
    PdbSpec {
        enabled: opt_ref(&f, "enabled", diags),
        min_available: opt_ref(&f, "min_available", diags),
        max_unavailable: opt_ref(&f, "max_unavailable", diags),
        rendered_when_unset,
        managed_by: f.string("managed_by", diags).map(|(s, _)| s),
    }
}

fn decode_workload(n: &Node, diags: &mut Vec<Diagnostic>) -> Option<Workload> {
    let f = Fields::new(n, "a workload", WORKLOAD_KEYS, diags);
    let id = f.required_string("id", diags)?.0;
    let kind = match f.choice("kind", &["Deployment", "StatefulSet", "DaemonSet"], diags) {
        Some((k, _)) if k == "StatefulSet" => Kind::StatefulSet,
        Some((k, _)) if k == "DaemonSet" => Kind::DaemonSet,
        Some(_) => Kind::Deployment,
        None => {
            f.required("kind", diags);
            return None;
        }
    };
    let mut pod_labels = BTreeMap::new();
    if let Some(l) = f.get("pod_labels") {
        match l.as_map() {
            Some(m) => {
                for (k, e) in m {
                    if let Some((v, _)) = expect_str(&e.node, k, diags) {
                        pod_labels.insert(k.clone(), v);
                    }
                }
            }
            None => diags.push(type_error(l, "pod_labels", "a mapping of label to value")),
        }
    }
    let builtin_spread = f.get("builtin_spread").and_then(|s| {
        let sf = Fields::new(s, "`builtin_spread`", SPREAD_KEYS, diags);
        let kind = match sf.choice(
            "kind",
            &["required-anti-affinity", "preferred-anti-affinity", "topology-spread"],
            diags,
        )? {
            (k, _) if k == "required-anti-affinity" => SpreadKind::RequiredAntiAffinity,
            (k, _) if k == "preferred-anti-affinity" => SpreadKind::PreferredAntiAffinity,
            _ => SpreadKind::TopologySpread,
        };
        Some(BuiltinSpread {
            kind,
            topology_key: sf.required_string("topology_key", diags)?.0,
        })
    });
    let mut conditions = Vec::new();
    if let Some(c) = f.get("conditions") {
        match &c.value {
            Value::Seq(items) => {
                for item in items {
                    let cf = Fields::new(item, "a condition", COND_KEYS, diags);
                    let Some((path, _)) = cf.required_string("path", diags) else {
                        continue;
                    };
                    let Some(equals) = cf.required("equals", diags).cloned() else {
                        continue;
                    };
                    let above = match cf.get("when_replicas_above").map(|n| &n.value) {
                        Some(Value::Int(i)) => *i,
                        Some(_) => {
                            diags.push(type_error(
                                cf.get("when_replicas_above").unwrap_or(item),
                                "when_replicas_above",
                                "an integer",
                            ));
                            0
                        }
                        None => 0,
                    };
                    conditions.push(Condition {
                        value: ValueRef {
                            path,
                            default: cf.get("default").cloned().unwrap_or_else(|| null_at(&item.origin)),
                        },
                        equals,
                        when_replicas_above: above,
                        why: cf.string("why", diags).map(|(s, _)| s).unwrap_or_default(),
                    });
                }
            }
            _ => diags.push(type_error(c, "conditions", "a list of conditions")),
        }
    }
    Some(Workload {
        title: f.string("title", diags).map_or_else(|| id.clone(), |(s, _)| s),
        id,
        kind,
        adr007: f.bool("adr007", diags).unwrap_or(false),
        runtime: f.bool("runtime", diags).unwrap_or(false),
        enabled: opt_ref(&f, "enabled", diags),
        replicas: opt_ref(&f, "replicas", diags),
        pod_labels,
        pdb: f.get("pdb").map(|p| decode_pdb(p, diags)),
        affinity: opt_ref(&f, "affinity", diags),
        topology_spread: opt_ref(&f, "topology_spread", diags),
        builtin_spread,
        resources: opt_ref(&f, "resources", diags),
        node_selector: opt_ref(&f, "node_selector", diags),
        reserved_cpu_percent: opt_ref(&f, "reserved_cpu_percent", diags),
        conditions,
        origin: n.origin.clone(),
    })
}

fn decode_service(n: &Node, diags: &mut Vec<Diagnostic>) -> Option<ServiceSpec> {
    let f = Fields::new(n, "a service", SERVICE_KEYS, diags);
    Some(ServiceSpec {
        id: f.required_string("id", diags)?.0,
        enabled: opt_ref(&f, "enabled", diags),
        kind: opt_ref(&f, "type", diags),
        external_traffic_policy: opt_ref(&f, "external_traffic_policy", diags),
    })
}

fn seq<'a>(f: &Fields<'a>, key: &str, diags: &mut Vec<Diagnostic>) -> &'a [Node] {
    match f.get(key) {
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => items,
        Some(n) => {
            diags.push(type_error(n, key, "a list"));
            &[]
        }
        None => &[],
    }
}

/// Decodes one profile file.
pub fn decode(node: &Node, file: &Arc<str>, diags: &mut Vec<Diagnostic>) -> Option<Profile> {
    let f = Fields::new(node, "a chart profile", KEYS, diags);
    let chart = f.required_string("chart", diags)?.0;
    let (versions_text, versions_origin) = f.required_string("versions", diags)?;
    let versions = match semver::VersionReq::parse(&versions_text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    codes::SHAPE,
                    versions_origin,
                    format!("`versions` is not a version range: {e}"),
                )
                .with_label("not a semver range")
                .with_help("write comma-separated comparators, e.g. \">=1.18.0, <1.19.0\""),
            );
            return None;
        }
    };
    let workloads = seq(&f, "workloads", diags)
        .iter()
        .filter_map(|w| decode_workload(w, diags))
        .collect();
    let services = seq(&f, "services", diags)
        .iter()
        .filter_map(|s| decode_service(s, diags))
        .collect();
    let storage = f.get("storage").map(|s| {
        let sf = Fields::new(s, "`storage`", STORAGE_KEYS, diags);
        Storage {
            replica_count: opt_ref(&sf, "replica_count", diags),
            default_setting_replica_count: opt_ref(&sf, "default_setting_replica_count", diags),
            node_selectors: ref_list(&sf, "node_selectors", diags),
            tolerations: ref_list(&sf, "tolerations", diags),
            system_managed_node_selector: opt_ref(&sf, "system_managed_node_selector", diags),
        }
    });
    if let Some(notes) = f.get("notes")
        && !matches!(notes.value, Value::Seq(_))
    {
        diags.push(type_error(notes, "notes", "a list of strings"));
    }
    Some(Profile {
        chart,
        versions,
        versions_text,
        versions_origin,
        source: f.string("source", diags).map(|(s, _)| s).unwrap_or_default(),
        workloads,
        services,
        storage,
        crd_groups: f.string_list("crd_groups", diags).unwrap_or_default(),
        file: Arc::clone(file),
        node: node.clone(),
    })
}

/// Loads the built-in profiles, then the repository's, which replace
/// built-ins of the same chart. Errors are input errors.
pub fn load(world: &dyn World, sources: &Sources, dir: &str) -> Result<Profiles, Vec<Diagnostic>> {
    use rayon::prelude::*;
    let mut diags = Vec::new();
    // A later file's profile of a chart replaces an earlier one's, as read
    // in order: the built-in ones first.
    let mut read: Vec<(Option<Profile>, Vec<Diagnostic>)> = Vec::new();
    for (path, text, profile, d) in builtin() {
        sources.insert(path, text);
        read.push((profile.clone(), d.clone()));
    }
    let mut files: Vec<(String, String)> = Vec::new();
    if world.is_dir(dir)
        && let Ok(entries) = world.list(dir)
    {
        for e in entries.iter().filter(|e| !e.is_dir && e.name.ends_with(".yaml")) {
            let path = crate::world::join(dir, &e.name);
            match world.read_text(&path) {
                Ok(text) => files.push((path, text)),
                Err(err) => diags.push(crate::load::files::io_error(&Arc::from(path.as_str()), &err)),
            }
        }
    }
    // Read side by side.
    read.par_extend(files.par_iter().with_max_len(1).map(|(path, text)| {
        let file: Arc<str> = Arc::from(path.as_str());
        sources.insert(&file, text);
        read_one(&file, text)
    }));
    let mut by_chart = BTreeMap::new();
    for (profile, d) in read {
        diags.extend(d);
        if let Some(p) = profile {
            by_chart.insert(p.chart.clone(), p);
        }
    }
    if diags.is_empty() {
        Ok(Profiles { by_chart })
    } else {
        Err(diags)
    }
}

/// A profile file read and decoded.
fn read_one(file: &Arc<str>, text: &str) -> (Option<Profile>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let profile = match yaml::parse(file, text) {
        Ok(node) => decode(&node, file, &mut diags),
        Err(e) => {
            diags.push(crate::load::files::syntax_error(e));
            None
        }
    };
    (profile, diags)
}

/// Reads the built-in profiles now, if no caller has: beside the load.
pub fn warm_up() {
    let _ = builtin();
}

/// A built-in profile: its file, text, and what it decodes to.
type Builtin = (Arc<str>, &'static str, Option<Profile>, Vec<Diagnostic>);

/// The built-in profiles, read once a process: each compile loads them,
/// and a diff compiles twice. Read in turn: a compile that comes while
/// another reads them waits, and must not be given that one's work.
fn builtin() -> &'static [Builtin] {
    static READ: std::sync::OnceLock<Vec<Builtin>> = std::sync::OnceLock::new();
    READ.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(name, text)| {
                let file: Arc<str> = Arc::from(format!("<builtin>/substrates/profiles/{name}"));
                let (profile, diags) = read_one(&file, text);
                (file, *text, profile, diags)
            })
            .collect()
    })
}

/// Errors for a `profile:` that names no profile. (Whether a chart's
/// version lies in its profile's range is asked only where the profile is
/// used: see [`out_of_range`].)
pub fn coverage(platform: &Platform, profiles: &Profiles) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in platform.components.values() {
        let name = c.profile_name();
        if profiles.by_chart.contains_key(name) {
            continue;
        }
        let Some(n) = c.config.get("profile") else { continue };
        let known: Vec<&str> = profiles.by_chart.keys().map(String::as_str).collect();
        let mut d = Diagnostic::error(codes::SHAPE, n.origin.clone(), format!("no chart profile `{name}`"))
            .with_label("no profile of that name");
        d = match suggest(name, &known) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "known profiles: {}; add {}/{name}.yaml to describe the chart",
                known.join(", "),
                platform.project.profiles
            )),
        };
        out.push(d);
    }
    out
}

/// A warning when the chart a profile is used for lies outside the
/// profile's version range (its defaults may not hold), or has a version
/// that cannot be compared: the pinned version, a local chart's own, or a
/// wrapper's dependency's. For a component whose chart the rules judge
/// through `b`; `info` is the chart as strata has it.
pub fn out_of_range(
    platform: &Platform,
    c: &Component,
    b: &Binding<'_>,
    info: Option<&ChartInfo>,
) -> Option<Diagnostic> {
    let p = b.profile;
    let (version, what) = match &b.nested {
        Some(n) => (
            n.version.clone(),
            format!("dependency {} {} of chart {}", n.chart, n.version, n.wrapper),
        ),
        None => {
            let version = c
                .chart
                .version()
                .map(str::to_owned)
                .or_else(|| info.map(|i| i.version.clone()))?;
            let what = format!("chart {} {version}", p.chart);
            (version, what)
        }
    };
    let origin = version_origin(c);
    match semver::Version::parse(version.trim_start_matches('v')) {
        Ok(v) if p.versions.matches(&v) => None,
        Ok(_) => Some(
            Diagnostic::warning(
                codes::SHAPE,
                origin,
                format!(
                    "{what} is outside the range {} of chart profile {} ({})",
                    p.versions_text, p.chart, p.file
                ),
            )
            .with_label("pinned here")
            .with_note(format!(
                "the rules judge what component {} runs through this profile, and its unset values by the profile's defaults, which may not hold for this version",
                c.name
            ))
            .with_help(format!(
                "render the chart with helm (`strata charts pull`), or check the chart's defaults at {version} and widen `versions`, or add {}/{}.yaml for it",
                platform.project.profiles, p.chart
            )),
        ),
        Err(e) => Some(
            Diagnostic::warning(
                codes::SHAPE,
                origin,
                format!(
                    "{what}: `{version}` is not a semantic version ({e}); profile {} not range-checked",
                    p.chart
                ),
            )
            .with_help(match &b.nested {
                Some(_) => "pin the dependency to an exact version in Chart.yaml, or run `strata charts pull` so that strata reads the version bundled with the chart",
                None => "pin the chart to an exact version such as 1.2.3",
            }),
        ),
    }
}

/// Where a chart's default at a dotted values path is written: in a chart
/// inside the repository, the line of its values.yaml; else the chart's
/// pin (a stored archive is no file of the repository).
pub fn default_origin(c: &Component, info: Option<&ChartInfo>, path: &str) -> Origin {
    if let (crate::load::Chart::Local { path: dir }, Some(info)) = (&c.chart, info)
        && let Some(n) = info.default_node(path)
    {
        let mut at = n.origin.clone();
        at.file = crate::world::join(dir, "values.yaml").as_str().into();
        return at;
    }
    version_origin(c)
}

/// Where a component pins its chart: the `version` (or `path`) in config.yaml.
pub fn version_origin(c: &Component) -> Origin {
    c.config
        .get_path("chart.version")
        .or_else(|| c.config.get_path("chart.path"))
        .or_else(|| c.config.get("chart"))
        .map_or_else(|| c.origin(), |n| n.origin.clone())
}
