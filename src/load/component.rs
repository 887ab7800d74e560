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
}

impl Chart {
    /// The chart's name: the Helm chart name, or the last folder of a local path.
    pub fn name(&self) -> &str {
        match self {
            Chart::Remote { name, .. } => name,
            Chart::Local { path } => path.rsplit('/').next().unwrap_or(path),
        }
    }

    pub fn version(&self) -> Option<&str> {
        match self {
            Chart::Remote { version, .. } => Some(version),
            Chart::Local { .. } => None,
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

#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub dir: String,
    pub namespace: String,
    pub chart: Chart,
    pub sync: SyncMode,
    pub tier: Tier,
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

const KEYS: &[&str] = &["component", "namespace", "chart", "sync", "tier", "requires", "profile"];
const CHART_KEYS: &[&str] = &["repoURL", "name", "version", "oci", "path"];

/// Whether `s` is a DNS-1123 label (what Kubernetes wants for names).
pub fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
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

    let name = match f.required_string("component", &mut diags) {
        Some((name, origin)) => {
            if name != folder {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        origin.clone(),
                        format!("component `{name}` lives in folder `{folder}`; the two must match"),
                    )
                    .with_label("differs from the folder name")
                    .with_help(format!("rename the folder or set `component: {folder}`")),
                );
            }
            if !is_dns_label(&name, 53) {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        origin,
                        format!("component name `{name}` is not a valid Helm release name"),
                    )
                    .with_help("use lower-case letters, digits and `-`, at most 53 characters"),
                );
            }
            name
        }
        None => folder.to_owned(),
    };
    let namespace = match f.required_string("namespace", &mut diags) {
        Some((ns, origin)) => {
            if !is_dns_label(&ns, 63) {
                diags.push(
                    Diagnostic::error(
                        codes::SHAPE,
                        origin,
                        format!("namespace `{ns}` is not a DNS-1123 label"),
                    )
                    .with_help("use lower-case letters, digits and `-`, at most 63 characters"),
                );
            }
            ns
        }
        None => String::new(),
    };
    let chart = f
        .required("chart", &mut diags)
        .and_then(|n| decode_chart(n, &mut diags));
    let sync = match f.choice("sync", &["automated", "manual"], &mut diags) {
        Some((s, _)) if s == "manual" => SyncMode::Manual,
        _ => SyncMode::Automated,
    };
    let tier = match f.choice("tier", &["core", "addon"], &mut diags) {
        Some((s, _)) if s == "core" => Tier::Core,
        _ => Tier::Addon,
    };
    let requires = f.string_list("requires", &mut diags).unwrap_or_default();
    let profile = f.string("profile", &mut diags).map(|(s, _)| s);

    let mut layers = BTreeMap::new();
    for file in layer_files {
        let path = join(dir, file);
        // A missing layer is skipped; one that cannot be read (a link out of
        // the repository, a loop of links) is an error.
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
    Ok(Component {
        name,
        dir: dir.to_owned(),
        namespace,
        chart,
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
    if oci != is_oci_url {
        let d = if oci {
            Diagnostic::error(
                codes::SHAPE,
                repo_origin,
                "`oci: true` needs a repoURL that starts with oci://",
            )
            .with_help("write the registry as oci://host/path")
        } else {
            Diagnostic::error(codes::SHAPE, repo_origin, "an oci:// repoURL needs `oci: true`")
                .with_help("add `oci: true` to the chart")
        };
        diags.push(d);
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
        repo_url: repo_url.trim_end_matches('/').to_owned() + if oci { "" } else { "/" },
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
                    text,
                    template,
                });
            }
            Err(d) => diags.push(d),
        }
    }
    out
}
