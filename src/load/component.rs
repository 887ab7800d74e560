//! A component folder: `config.yaml`, its values layers and `manifests/`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decode::{Fields, expect_str};
use super::files::{read_text, read_yaml, read_yaml_if_exists, syntax_error};
use crate::diag::{Diagnostic, Sources, codes};
use crate::world::{World, join};
use crate::yaml::{self, Node, Origin};

#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    Remote {
        repo_url: String,
        name: String,
        version: String,
        oci: bool,
    },
    Local {
        path: String,
    },
    /// No chart: the component is its manifests alone.
    None,
}

impl Chart {
    /// The chart's name: the Helm chart name, or the last folder of a local path.
    pub fn name(&self) -> &str {
        match self {
            Chart::Remote { name, .. } => name,
            Chart::Local { path } => path.rsplit('/').next().unwrap_or(path),
            Chart::None => "",
        }
    }

    pub fn version(&self) -> Option<&str> {
        match self {
            Chart::Remote { version, .. } => Some(version),
            Chart::Local { .. } | Chart::None => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    Automated,
    Manual,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Core,
    Addon,
}

/// An extra Kubernetes manifest of a component; `.j2` files are templates.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub path: Arc<str>,
    pub text: String,
    pub template: bool,
}

/// An RFC 6902 JSON patch on the objects strata generates for a component
/// (by kind: see [`Patch::on_generated`]) or on those its chart renders.
#[derive(Clone, Debug)]
pub struct Patch {
    /// The kind of object it applies to (`HelmRelease`, `Application`, …).
    pub kind: String,
    /// Its name; every object of the kind when absent.
    pub name: Option<String>,
    /// Its namespace; any when absent.
    pub namespace: Option<String>,
    /// In an environment file: the component whose objects it patches; every
    /// component when absent.
    pub component: Option<String>,
    /// The operations, as JSON.
    pub ops: serde_json::Value,
    /// The `patch:` list as written, for errors at the failing operation.
    pub node: Node,
    pub origin: Origin,
}

/// How Flux's helm-controller remediates a failed install or upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `RetryOnFailure`: retry with an upgrade after an interval; nothing is
    /// uninstalled or rolled back (Flux 2.7+).
    Retry,
    /// `RemediateOnFailure` with uninstall between attempts.
    Uninstall,
    /// `RemediateOnFailure` with rollback between attempts (upgrades only).
    Rollback,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Retry => "retry",
            Strategy::Uninstall => "uninstall",
            Strategy::Rollback => "rollback",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remediation {
    pub install: Strategy,
    pub upgrade: Strategy,
    pub retries: i64,
}

/// Argo CD's `syncPolicy.retry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Attempts after the first; negative: no limit.
    pub limit: i64,
    /// Whether each attempt syncs the newest revision (Argo CD 3.2+).
    pub refresh: bool,
    pub duration: String,
    pub factor: i64,
    pub max_duration: String,
}

impl Default for Retry {
    /// No limit, back off from 10 s, doubling, up to 5 min, each attempt
    /// on the newest revision. Argo CD's automated sync never tries a
    /// failed revision again by itself (docs `user-guide/auto_sync.md`,
    /// "Automatic sync will not reattempt a sync if the previous sync
    /// attempt against the same commit-SHA and parameters had failed"), so
    /// retries that gave up leave a component waiting for the next commit;
    /// `refresh` keeps an endless retry from holding on to a broken one.
    fn default() -> Self {
        Retry {
            limit: -1,
            refresh: true,
            duration: "10s".into(),
            factor: 2,
            max_duration: "5m".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub dir: String,
    pub namespace: String,
    /// Labels and annotations of the namespace (`namespace: {name, labels,
    /// annotations}`), e.g. Pod Security labels.
    pub namespace_labels: BTreeMap<String, String>,
    pub namespace_annotations: BTreeMap<String, String>,
    /// Where `namespace:` is written.
    pub namespace_origin: Origin,
    /// `diff: server-side`: Argo CD compares with a server-side dry run.
    pub server_side_diff: bool,
    pub patches: Vec<Patch>,
    pub remediation: Remediation,
    /// Argo CD's retry, when the component sets its own.
    pub retry: Option<Retry>,
    pub chart: Chart,
    /// `hydrate: false`: stays a Helm release in a hydrated environment.
    pub hydrate: Option<bool>,
    /// `ha:`: the HA rules (HA001-HA003) judge every Deployment and
    /// StatefulSet the component renders, not only ADR 007's controllers
    /// (an environment may say otherwise: [`super::Environment::ha`]).
    pub ha: Option<(bool, Origin)>,
    /// `timeout:`, how long the engine waits for the release (a Go
    /// duration such as `15m`), and where it is written.
    pub timeout: Option<(String, Origin)>,
    pub sync: SyncMode,
    pub tier: Tier,
    /// `tier:` as written, and where (TIER002 judges values other than
    /// core and addon, which render as addon).
    pub tier_text: Option<(String, Origin)>,
    pub requires: Vec<(String, Origin)>,
    pub profile: Option<String>,
    /// `config.yaml` as written, for templates and diagnostics.
    pub config: Node,
    /// Every values layer file found, by file name.
    pub layers: BTreeMap<String, Node>,
    pub manifests: Vec<Manifest>,
    /// `values.schema.json`, if the component has one.
    pub values_schema: Option<Node>,
}

impl Patch {
    /// Whether the patch is on an object strata generates (a kind only
    /// strata writes for a component), else on what the chart renders.
    pub fn on_generated(&self) -> bool {
        GENERATED_KINDS.contains(&self.kind.as_str())
    }

    /// Whether the patch targets an object of this kind, name and namespace.
    pub fn targets(&self, kind: &str, name: &str, namespace: Option<&str>) -> bool {
        self.kind == kind
            && self.name.as_ref().is_none_or(|n| n == name)
            && self.namespace.as_ref().is_none_or(|n| Some(n.as_str()) == namespace)
    }
}

/// The kinds strata writes for a component: a patch of one of these is on
/// strata's own objects, any other on what the component's chart renders.
pub const GENERATED_KINDS: &[&str] = &[
    "HelmRelease",
    "HelmRepository",
    "OCIRepository",
    "Kustomization",
    "Application",
    "GitRepository",
];

impl Component {
    pub fn config_path(&self) -> String {
        join(&self.dir, "config.yaml")
    }

    /// The place to point at for findings about the component as a whole.
    pub fn origin(&self) -> Origin {
        self.config.origin.clone()
    }

    /// The name of the profile that describes its chart.
    pub fn profile_name(&self) -> &str {
        self.profile.as_deref().unwrap_or_else(|| self.chart.name())
    }
}

const KEYS: &[&str] = &[
    "component",
    "namespace",
    "chart",
    "sync",
    "tier",
    "requires",
    "profile",
    "diff",
    "patches",
    "remediation",
    "retry",
    "hydrate",
    "timeout",
    "ha",
];
const NAMESPACE_KEYS: &[&str] = &["name", "labels", "annotations"];
const PATCH_KEYS: &[&str] = &["target", "component", "patch"];
const TARGET_KEYS: &[&str] = &["kind", "name", "namespace"];
const REMEDIATION_KEYS: &[&str] = &["install", "upgrade", "retries"];
const RETRY_KEYS: &[&str] = &["limit", "backoff", "refresh"];
const BACKOFF_KEYS: &[&str] = &["duration", "factor", "maxDuration"];

/// `timeout:`, a Go duration.
fn timeout_of(f: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
    f.string("timeout", diags).filter(|(t, o)| {
        let ok = is_duration(t);
        if !ok {
            diags.push(
                Diagnostic::error(codes::SHAPE, o.clone(), format!("`timeout: {t}` is not a duration"))
                    .with_help("write a Go duration, e.g. `10m`, `1h30m` or `90s`"),
            );
        }
        ok
    })
}

/// Whether `s` is a Go duration as Flux reads one: numbers with units
/// (`ms`, `s`, `m`, `h`), e.g. `1h30m`.
pub fn is_duration(s: &str) -> bool {
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        if digits == 0 || rest[..digits].matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "h", "m", "s"].iter().find(|u| rest.starts_with(**u));
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

/// The whole seconds of a duration [`is_duration`] accepts (0 for one it
/// does not).
pub fn duration_seconds(s: &str) -> u64 {
    let mut total = 0.0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        let Ok(n) = rest[..digits].parse::<f64>() else { return 0 };
        rest = &rest[digits..];
        let (unit, scale) = if rest.starts_with("ms") {
            ("ms", 0.001)
        } else if rest.starts_with('h') {
            ("h", 3600.0)
        } else if rest.starts_with('m') {
            ("m", 60.0)
        } else if rest.starts_with('s') {
            ("s", 1.0)
        } else {
            return 0;
        };
        total += n * scale;
        rest = &rest[unit.len()..];
    }
    total.ceil() as u64
}

/// A mapping of strings (labels, annotations).
fn string_map(n: &Node, what: &str, diags: &mut Vec<Diagnostic>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    match n.as_map() {
        Some(m) => {
            for (k, e) in m {
                match &e.node.value {
                    yaml::Value::Str(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    _ => diags.push(super::decode::type_error(&e.node, k, "a string")),
                }
            }
        }
        None => diags.push(super::decode::type_error(n, what, "a mapping of strings")),
    }
    out
}

/// `patches:` of a config.yaml (`env: false`) or an environment file.
pub fn decode_patches(n: Option<&Node>, env: bool, diags: &mut Vec<Diagnostic>) -> Vec<Patch> {
    let Some(n) = n else { return Vec::new() };
    let yaml::Value::Seq(items) = &n.value else {
        diags.push(super::decode::type_error(n, "patches", "a list of patches"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let f = Fields::new(item, "a patch", PATCH_KEYS, diags);
        let target = f.required("target", diags);
        let (kind, name, namespace) = match target {
            Some(t) => {
                let tf = Fields::new(t, "`target`", TARGET_KEYS, diags);
                (
                    tf.required_string("kind", diags).map(|x| x.0).unwrap_or_default(),
                    tf.string("name", diags).map(|x| x.0),
                    tf.string("namespace", diags).map(|x| x.0),
                )
            }
            None => (String::new(), None, None),
        };
        let component = match f.string("component", diags) {
            Some((c, o)) if !env => {
                diags.push(
                    Diagnostic::error(codes::SHAPE, o, format!("a patch in config.yaml takes no `component` (`{c}`)"))
                        .with_help("a component's patches apply to its own objects; name the component in an environment file's patches"),
                );
                None
            }
            other => other.map(|x| x.0),
        };
        let Some(ops) = f.required("patch", diags) else {
            continue;
        };
        let ok = match &ops.value {
            yaml::Value::Seq(list) => list.iter().all(|op| {
                let has = |k: &str| op.get(k).and_then(Node::as_str).is_some();
                let good = has("op") && has("path");
                if !good {
                    diags.push(
                        Diagnostic::error(
                            codes::SHAPE,
                            op.origin.clone(),
                            "a JSON patch operation needs `op` and `path`",
                        )
                        .with_help("write RFC 6902 operations, e.g. `{op: add, path: /spec/timeout, value: 10m}`"),
                    );
                }
                good
            }),
            _ => {
                diags.push(super::decode::type_error(ops, "patch", "a list of RFC 6902 operations"));
                false
            }
        };
        if ok && !kind.is_empty() {
            out.push(Patch {
                kind,
                name,
                namespace,
                component,
                ops: ops.to_json(),
                node: ops.clone(),
                origin: item.origin.clone(),
            });
        }
    }
    out
}

fn decode_remediation(n: &Node, tier: Tier, diags: &mut Vec<Diagnostic>) -> Remediation {
    let mut r = Remediation::for_tier(tier);
    let f = Fields::new(n, "`remediation`", REMEDIATION_KEYS, diags);
    if let Some((s, _)) = f.choice("install", &["retry", "uninstall"], diags) {
        r.install = if s == "retry" {
            Strategy::Retry
        } else {
            Strategy::Uninstall
        };
    }
    if let Some((s, _)) = f.choice("upgrade", &["retry", "rollback", "uninstall"], diags) {
        r.upgrade = match s.as_str() {
            "retry" => Strategy::Retry,
            "rollback" => Strategy::Rollback,
            _ => Strategy::Uninstall,
        };
    }
    if let Some(x) = f.get("retries") {
        match x.value {
            yaml::Value::Int(i) => r.retries = i,
            _ => diags.push(super::decode::type_error(x, "retries", "an integer")),
        }
    }
    r
}

impl Remediation {
    /// An install keeps retrying, whatever the tier: one that gave up after
    /// a few attempts (a webhook not ready yet, a CRD still arriving) would
    /// stall until the next change of its HelmRelease. A failed upgrade is
    /// retried on core components (CNI, storage: their charts do not
    /// support downgrades) and rolled back on addons, three times.
    pub fn for_tier(tier: Tier) -> Remediation {
        match tier {
            Tier::Core => Remediation {
                install: Strategy::Retry,
                upgrade: Strategy::Retry,
                retries: 3,
            },
            Tier::Addon => Remediation {
                install: Strategy::Retry,
                upgrade: Strategy::Rollback,
                retries: 3,
            },
        }
    }
}

/// Argo CD's retry, as written in config.yaml or strata.yaml.
pub fn decode_retry(n: &Node, diags: &mut Vec<Diagnostic>) -> Retry {
    let mut r = Retry::default();
    let f = Fields::new(n, "`retry`", RETRY_KEYS, diags);
    if let Some(x) = f.get("limit") {
        match x.value {
            yaml::Value::Int(i) => r.limit = i,
            _ => diags.push(super::decode::type_error(x, "limit", "an integer (negative: no limit)")),
        }
    }
    if let Some(refresh) = f.bool("refresh", diags) {
        r.refresh = refresh;
    }
    if let Some(b) = f.get("backoff") {
        let bf = Fields::new(b, "`retry.backoff`", BACKOFF_KEYS, diags);
        if let Some((d, _)) = bf.string("duration", diags) {
            r.duration = d;
        }
        if let Some((d, _)) = bf.string("maxDuration", diags) {
            r.max_duration = d;
        }
        if let Some(x) = bf.get("factor") {
            match x.value {
                yaml::Value::Int(i) => r.factor = i,
                _ => diags.push(super::decode::type_error(x, "factor", "an integer")),
            }
        }
    }
    r
}
const CHART_KEYS: &[&str] = &["repoURL", "name", "version", "oci", "path"];

/// What an entry of the platform directory is.
pub enum Folder {
    /// A component folder: it has a `config.yaml` (which may still fail to load).
    Component,
    /// Not a component, and nothing that looks like one: a note, an empty
    /// folder (with a warning for a folder).
    Other(Option<Diagnostic>),
    /// Looks like a component but cannot be one; the diagnostic says why.
    Refused(Diagnostic),
}

/// Files that only a component folder holds, besides `config.yaml`.
fn component_like(name: &str) -> bool {
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    (name.starts_with("values") && (yaml || name.ends_with(".json")))
        || name == "manifests"
        || name.starts_with("config.")
        || name.eq_ignore_ascii_case("config.yaml")
}

/// Decides what the entry `entry` of the platform directory `platform` is,
/// without guessing: a folder that holds component files but no readable
/// `config.yaml`, or that cannot be read at all (a link out of the
/// repository, a loop, a link to nothing), is refused with the reason.
pub fn classify(world: &dyn World, platform: &str, entry: &crate::world::DirEntry) -> Folder {
    let dir = join(platform, &entry.name);
    let here = || Origin::file_start(dir.as_str());
    let unreadable = |e: &crate::world::WorldError| {
        Folder::Refused(
            Diagnostic::error(codes::IO, here(), format!("component folder {dir} cannot be read: {e}")).with_help(
                "a component lives in a real folder inside the repository; replace the link with the folder \
                 itself, or move the entry out of the platform directory",
            ),
        )
    };
    if !entry.is_dir {
        // A link that leads nowhere readable is not a file either: if it
        // has a component's name, it may be one that went missing.
        if world.is_file(&dir) || !super::names::is_dns_label(&entry.name, 63) {
            return Folder::Other(None);
        }
        return match world.list(&dir) {
            Err(e) => unreadable(&e),
            Ok(_) => Folder::Other(None),
        };
    }
    let files = match world.list(&dir) {
        Ok(f) => f,
        Err(e) => return unreadable(&e),
    };
    if files.iter().any(|f| f.name == "config.yaml") {
        return Folder::Component;
    }
    let like: Vec<&str> = files
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| component_like(n))
        .collect();
    if like.is_empty() {
        return Folder::Other(Some(
            Diagnostic::warning(
                codes::IO,
                here(),
                format!("folder {dir} has no config.yaml and is not a component"),
            )
            .with_help("add a config.yaml, or move the folder out of the platform directory"),
        ));
    }
    let misnamed = like
        .iter()
        .find(|n| n.starts_with("config.") || n.eq_ignore_ascii_case("config.yaml"));
    let quoted: Vec<String> = like.iter().map(|n| format!("`{n}`")).collect();
    let d = match misnamed {
        Some(m) => Diagnostic::error(
            codes::IO,
            Origin::file_start(join(&dir, m).as_str()),
            format!("component folder {dir} has `{m}` but no config.yaml; strata reads only config.yaml"),
        )
        .with_label("not read")
        .with_help(format!(
            "rename it: `git mv {} {}`; without config.yaml the component and its files would leave the tree",
            join(&dir, m),
            join(&dir, "config.yaml")
        )),
        None => Diagnostic::error(
            codes::IO,
            here(),
            format!(
                "folder {dir} holds {} but no config.yaml, so it cannot be loaded as a component",
                super::decode::list_names(quoted.iter().map(String::as_str), ", ")
            ),
        )
        .with_help(
            "add its config.yaml (component, namespace, chart), or move the folder out of the platform \
             directory if it is not a component",
        ),
    };
    Folder::Refused(d)
}

/// Loads the component in `dir` (a folder of the platform directory), reading
/// the layer files named in `layer_files`.
pub fn load(
    world: &dyn World,
    sources: &Sources,
    dir: &str,
    folder: &str,
    layer_files: &[String],
) -> Result<Component, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let config_path = join(dir, "config.yaml");
    let config = read_yaml(world, sources, &config_path).map_err(|d| vec![d])?;
    let f = Fields::new(&config, "config.yaml", KEYS, &mut diags);

    let name = component_name(&f, folder, &mut diags);
    let namespace = namespace_of(&f, &config, &mut diags);
    // Without `chart`, the component is its manifests alone.
    let chart = match f.get("chart") {
        Some(n) => decode_chart(n, &mut diags),
        None => Some(Chart::None),
    };
    let hydrate = f.bool("hydrate", &mut diags);
    let ha = f.bool("ha", &mut diags).zip(f.get("ha").map(|n| n.origin.clone()));
    let timeout = timeout_of(&f, &mut diags);
    let sync = match f.choice("sync", &["automated", "manual"], &mut diags) {
        Some((s, _)) if s == "manual" => SyncMode::Manual,
        _ => SyncMode::Automated,
    };
    let tier_text = f.string("tier", &mut diags);
    let tier = match tier_text.as_ref().map(|(t, _)| t.as_str()) {
        Some("core") => Tier::Core,
        _ => Tier::Addon,
    };
    let requires = f.string_list("requires", &mut diags).unwrap_or_default();
    let profile = f.string("profile", &mut diags).map(|(s, _)| s);
    let server_side_diff =
        matches!(f.choice("diff", &["server-side", "client-side"], &mut diags), Some((s, _)) if s == "server-side");
    let patches = decode_patches(f.get("patches"), false, &mut diags);
    let remediation = match f.get("remediation") {
        Some(n) => decode_remediation(n, tier, &mut diags),
        None => Remediation::for_tier(tier),
    };
    let retry = f.get("retry").map(|n| decode_retry(n, &mut diags));

    let layers = read_layers(world, sources, dir, layer_files, &mut diags);

    let manifests = load_manifests(world, sources, dir, &mut diags);
    let schema_path = join(dir, "values.schema.json");
    let values_schema = read_yaml_if_exists(world, sources, &schema_path).unwrap_or_else(|d| {
        diags.push(d);
        None
    });

    if !diags.is_empty() {
        return Err(diags);
    }
    let Some(chart) = chart else {
        return Err(diags);
    };
    if chart == Chart::None && manifests.is_empty() {
        return Err(vec![
            Diagnostic::error(
                codes::SHAPE,
                config.origin.clone(),
                format!("component {name} has no `chart` and no manifests/: it would deliver nothing"),
            )
            .with_help("add `chart:` (repoURL, name, version; or path) to config.yaml, or put the component's objects in manifests/"),
        ]);
    }
    Ok(Component {
        tier_text,
        name,
        dir: dir.to_owned(),
        namespace: namespace.name,
        namespace_labels: namespace.labels,
        namespace_annotations: namespace.annotations,
        namespace_origin: namespace.origin,
        server_side_diff,
        patches,
        remediation,
        retry,
        chart,
        hydrate,
        ha,
        timeout,
        sync,
        tier,
        requires,
        profile,
        config,
        layers,
        manifests,
        values_schema,
    })
}

/// The component's name: `component:` of config.yaml, which must be its
/// folder's name and a valid Helm release name (the folder's name when it
/// is missing).
fn component_name(f: &Fields<'_>, folder: &str, diags: &mut Vec<Diagnostic>) -> String {
    match f.required_string("component", diags) {
        Some((name, origin)) => {
            if name != folder {
                diags.push(
                    Diagnostic::error(
                        codes::NAME,
                        origin.clone(),
                        format!("component `{name}` lives in folder `{folder}`; the two must match"),
                    )
                    .with_label("differs from the folder name")
                    .with_help(format!("rename the folder or set `component: {folder}`")),
                );
            }
            if !super::names::is_dns_label(&name, 53) {
                diags.push(
                    Diagnostic::error(
                        codes::NAME,
                        origin,
                        format!("component name `{name}` is not a valid Helm release name"),
                    )
                    .with_help("use lower-case letters, digits and `-`, at most 53 characters"),
                );
            }
            name
        }
        None => folder.to_owned(),
    }
}

/// The namespace a component deploys into, as config.yaml gives it.
struct Namespace {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    /// `namespace:` (or config.yaml, when it has none).
    origin: Origin,
}

/// `namespace:` of config.yaml: a name, or a mapping with the name, labels
/// and annotations.
fn namespace_of(f: &Fields<'_>, config: &Node, diags: &mut Vec<Diagnostic>) -> Namespace {
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    let origin = f
        .get("namespace")
        .map_or_else(|| config.origin.clone(), |n| n.origin.clone());
    let value = match f.get("namespace") {
        Some(n) if n.as_map().is_some() => {
            let nf = Fields::new(n, "`namespace`", NAMESPACE_KEYS, diags);
            if let Some(l) = nf.get("labels") {
                labels = string_map(l, "labels", diags);
            }
            if let Some(a) = nf.get("annotations") {
                annotations = string_map(a, "annotations", diags);
            }
            nf.required_string("name", diags)
        }
        _ => f.required_string("namespace", diags),
    };
    let name = match value {
        Some((ns, at)) => {
            if !super::names::is_dns_label(&ns, 63) {
                diags.push(
                    Diagnostic::error(codes::NAME, at, format!("namespace `{ns}` is not a DNS-1123 label"))
                        .with_help("use lower-case letters, digits and `-`, at most 63 characters"),
                );
            }
            ns
        }
        None => String::new(),
    };
    Namespace {
        name,
        labels,
        annotations,
        origin,
    }
}

/// Reads the values layers named in `layer_files` from the component folder
/// `dir`. A missing layer is skipped; one that cannot be read (a link out
/// of the repository, a loop of links) or is not a mapping is an error.
pub fn read_layers(
    world: &dyn World,
    sources: &Sources,
    dir: &str,
    layer_files: &[String],
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Node> {
    let mut layers = BTreeMap::new();
    for file in layer_files {
        let path = join(dir, file);
        match read_yaml_if_exists(world, sources, &path) {
            Ok(None) => {}
            Ok(Some(node)) => {
                if node.as_map().is_none() && node.value != yaml::Value::Null {
                    diags.push(
                        Diagnostic::error(
                            codes::SHAPE,
                            node.origin.clone(),
                            format!(
                                "{path} must hold a mapping of Helm values, found {}",
                                node.value.type_name()
                            ),
                        )
                        .with_help("a values file is a YAML mapping at the top level"),
                    );
                } else {
                    layers.insert(file.clone(), node);
                }
            }
            Err(d) => diags.push(d),
        }
    }
    layers
}

fn decode_chart(node: &Node, diags: &mut Vec<Diagnostic>) -> Option<Chart> {
    let f = Fields::new(node, "`chart`", CHART_KEYS, diags);
    if let Some(path) = f.get("path") {
        let (path, origin) = expect_str(path, "path", diags)?;
        for key in ["repoURL", "name", "version", "oci"] {
            if let Some(n) = f.get(key) {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        n.origin.clone(),
                        format!("a local chart (`path`) takes no `{key}`"),
                    )
                    .with_help("give either `path`, or `repoURL`, `name` and `version`"),
                );
            }
        }
        return match crate::world::normalize(&path) {
            Ok(p) => Some(Chart::Local { path: p }),
            Err(e) => {
                diags.push(
                    Diagnostic::error(codes::SHAPE, origin, format!("chart path: {e}"))
                        .with_help("a local chart lives inside this repository; give its path from the root"),
                );
                None
            }
        };
    }
    let repo = f.required_string("repoURL", diags);
    let name = f.required_string("name", diags);
    let version = f.required_string("version", diags);
    let oci = f.bool("oci", diags).unwrap_or(false);
    let (repo_url, repo_origin) = repo?;
    let is_oci_url = repo_url.starts_with("oci://");
    // With `oci: true` the registry may be written as Argo CD writes it, as
    // a host and path without a scheme (`docker.io/envoyproxy`).
    let scheme_less = !repo_url.contains("://");
    if is_oci_url && !oci {
        diags.push(
            Diagnostic::error(codes::SHAPE, repo_origin, "an oci:// repoURL needs `oci: true`")
                .with_help("add `oci: true` to the chart"),
        );
    } else if oci && !(is_oci_url || scheme_less) {
        diags.push(
            Diagnostic::error(
                codes::SHAPE,
                repo_origin,
                "`oci: true` needs a registry: oci://host/path, or host/path as Argo CD writes it",
            )
            .with_help("write the registry as oci://host/path"),
        );
    } else if !(oci || repo_url.starts_with("https://") || repo_url.starts_with("http://")) {
        diags.push(
            Diagnostic::error(
                codes::SHAPE,
                repo_origin,
                format!("repoURL `{repo_url}` is not an http(s) or oci URL"),
            )
            .with_help("give the Helm repository URL, e.g. https://charts.example.com"),
        );
    }
    Some(Chart::Remote {
        // Exactly as written: Argo CD matches credentials and AppProject
        // sourceRepos by this string, trailing slash included.
        repo_url,
        name: name?.0,
        version: version?.0,
        oci,
    })
}

fn load_manifests(world: &dyn World, sources: &Sources, dir: &str, diags: &mut Vec<Diagnostic>) -> Vec<Manifest> {
    let mdir = join(dir, "manifests");
    let entries = match world.list(&mdir) {
        Ok(e) => e,
        Err(e) => {
            diags.push(super::files::io_error(&Arc::from(mdir.as_str()), &e));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let template = entry.name.ends_with(".yaml.j2") || entry.name.ends_with(".yml.j2");
        let plain = entry.name.ends_with(".yaml") || entry.name.ends_with(".yml");
        if entry.is_dir || !(template || plain) {
            continue;
        }
        let path = join(&mdir, &entry.name);
        match read_text(world, sources, &path) {
            Ok((file, text)) => {
                if plain && let Err(e) = yaml::parse_multi(&file, &text) {
                    diags.push(syntax_error(e));
                    continue;
                }
                out.push(Manifest {
                    path: file,
                    text: text.to_string(),
                    template,
                });
            }
            Err(d) => diags.push(d),
        }
    }
    out
}
