//! Schemas of the objects strata writes: Kubernetes kinds from a
//! kubeconform-style folder (`<kind><-group-first-label>-<version>.json`, as
//! the `kubernetes-validate` package ships them, with their `$ref`s into a
//! sibling `_definitions.json`) and custom resources from a CRDs-catalog
//! folder (`<group>/<kind>_<version>.json`). A location is a folder, tried in
//! both layouts, or a kubeconform template such as
//! `{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`.
//!
//! Each (apiVersion, kind) is looked up and compiled once and then shared
//! by every thread; documents a schema refers to are read from the schema's
//! own folder and registered offline, so nothing is ever fetched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use jsonschema::{Registry, Validator};
use serde_json::Value;

use super::refdoc::{RefDoc, external_refs};
use crate::load::names::check_names;
use crate::world::{World, WorldError};

/// `apiVersion` and `kind`.
pub type Gvk = (String, String);

/// What a lookup found for one kind.
pub enum Lookup {
    Found(KindSchema),
    /// The apiVersion or kind is not a Kubernetes name, so no file name was
    /// made from it; why.
    Invalid(String),
    /// No location has a schema for the kind; the paths tried.
    Missing(Vec<String>),
    /// A schema file exists but cannot be used.
    Broken {
        path: String,
        error: String,
    },
}

pub struct KindSchema {
    pub validator: Validator,
    pub path: String,
    pub docs: BTreeMap<String, Arc<Value>>,
    pub root: Arc<Value>,
}

/// A referenced document, read on first use: its `$id` (or its file's URI)
/// and its contents.
type Referenced = Arc<(String, RefDoc)>;

/// A referenced file's slot, filled by the first kind that needs it.
type Slot = Arc<OnceLock<Result<Referenced, String>>>;

/// The schema locations of one compile and the kinds compiled so far.
pub struct Catalog {
    locations: Vec<String>,
    version: String,
    kinds: RwLock<BTreeMap<Gvk, Arc<Lookup>>>,
    /// Documents kinds refer to, by file, read once and shared by every kind.
    referenced: Mutex<BTreeMap<String, Slot>>,
}

/// The template variables kubeconform defines for a kind.
fn variables(api_version: &str, kind: &str, k8s_version: &str) -> [(&'static str, String); 6] {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (api_version.to_owned(), api_version.to_owned()),
    };
    let first_label = group.split('.').next().unwrap_or("").to_lowercase();
    let kind_suffix = if api_version.contains('/') {
        format!("-{first_label}-{}", version.to_lowercase())
    } else {
        format!("-{}", version.to_lowercase())
    };
    [
        ("NormalizedKubernetesVersion", normalized_version(k8s_version)),
        ("StrictSuffix", "-strict".to_owned()),
        ("ResourceKind", kind.to_lowercase()),
        ("ResourceAPIVersion", version),
        ("Group", group),
        ("KindSuffix", kind_suffix),
    ]
}

/// `1.35` → `v1.35.0`, as kubeconform names its version folders.
pub fn normalized_version(v: &str) -> String {
    if v == "master" {
        return v.to_owned();
    }
    let v = v.trim_start_matches('v');
    let dots = v.matches('.').count();
    if dots == 1 { format!("v{v}.0") } else { format!("v{v}") }
}

/// Expands a kubeconform location template; `None` if it uses a variable
/// strata does not know.
pub fn expand(template: &str, api_version: &str, kind: &str, k8s_version: &str) -> Result<String, String> {
    let vars = variables(api_version, kind, k8s_version);
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("`{template}`: `{{{{` without `}}}}`"))?;
        let name = after[..end].trim().trim_start_matches('.');
        let value = vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| {
            let known: Vec<String> = vars.iter().map(|(n, _)| format!(".{n}")).collect();
            format!("`{template}`: unknown variable `{name}` (known: {})", known.join(", "))
        })?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The file paths a location gives for a kind, in the order they are tried.
pub fn candidates(location: &str, api_version: &str, kind: &str, k8s_version: &str) -> Result<Vec<String>, String> {
    if location.contains("{{") {
        return Ok(vec![expand(location, api_version, kind, k8s_version)?]);
    }
    let dir = location.trim_end_matches('/');
    Ok(vec![
        expand(
            &format!("{dir}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"),
            api_version,
            kind,
            k8s_version,
        )?,
        expand(
            &format!("{dir}/{{{{ .Group }}}}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json"),
            api_version,
            kind,
            k8s_version,
        )?,
    ])
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

impl Catalog {
    pub fn new(locations: Vec<String>, k8s_version: &str) -> Result<Catalog, String> {
        for l in &locations {
            candidates(l, "v1", "ConfigMap", k8s_version)?;
        }
        Ok(Catalog {
            locations,
            version: k8s_version.to_owned(),
            kinds: RwLock::new(BTreeMap::new()),
            referenced: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }

    pub fn locations(&self) -> &[String] {
        &self.locations
    }

    /// The schema of a kind, looked up and compiled on first use.
    pub fn get(&self, world: &dyn World, gvk: &Gvk) -> Arc<Lookup> {
        if let Some(l) = self.kinds.read().ok().and_then(|k| k.get(gvk).cloned()) {
            return l;
        }
        let lookup = Arc::new(self.lookup(world, gvk));
        match self.kinds.write() {
            Ok(mut k) => Arc::clone(k.entry(gvk.clone()).or_insert(lookup)),
            Err(_) => lookup,
        }
    }

    fn lookup(&self, world: &dyn World, (api_version, kind): &Gvk) -> Lookup {
        if let Err(why) = check_names(api_version, kind) {
            return Lookup::Invalid(why);
        }
        let mut tried = Vec::new();
        for location in &self.locations {
            let Ok(paths) = candidates(location, api_version, kind, &self.version) else {
                continue;
            };
            for path in paths {
                match world.read_schema(&path) {
                    Ok(text) => return self.compile(world, path, &text),
                    Err(WorldError::NotFound) => tried.push(path),
                    Err(e) => {
                        return Lookup::Broken {
                            path,
                            error: e.to_string(),
                        };
                    }
                }
            }
        }
        Lookup::Missing(tried)
    }

    fn compile(&self, world: &dyn World, path: String, text: &str) -> Lookup {
        let broken = |error: String| Lookup::Broken {
            path: path.clone(),
            error,
        };
        let root: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return broken(format!("not JSON: {e}")),
        };
        let mut refs = BTreeMap::new();
        external_refs(&root, &mut refs);
        // Referenced documents are looked for beside the schema, by file name.
        let mut files: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        for (base, fragments) in &refs {
            let Some(f) = base.rsplit('/').next().filter(|f| !f.is_empty()) else {
                continue;
            };
            let file = match dir_of(&path) {
                "" => f.to_owned(),
                dir => format!("{dir}/{f}"),
            };
            files
                .entry(file)
                .or_default()
                .extend(fragments.iter().map(String::as_str));
        }
        // Each document pruned to what this kind reaches, under its own URI.
        let mut docs = BTreeMap::new();
        for (file, fragments) in &files {
            let referenced = match self.referenced(world, file) {
                Ok(d) => d,
                Err(e) => return broken(e),
            };
            let (id, doc) = &*referenced;
            match doc.pruned(fragments.iter().copied()) {
                Ok(v) => docs.insert(id.clone(), v),
                Err(e) => return broken(format!("its reference {file} is not JSON: {e}")),
            };
        }
        let registry = match Registry::new()
            .extend(docs.iter().map(|(id, v)| (id.as_str(), Arc::clone(v))))
            .and_then(|b| b.prepare())
        {
            Ok(r) => r,
            Err(e) => return broken(format!("its references do not resolve: {e}")),
        };
        let validator = match jsonschema::options()
            .with_registry(&registry)
            .should_validate_formats(false)
            .build(&root)
        {
            Ok(v) => v,
            Err(e) => return broken(format!("does not compile: {e}")),
        };
        let root = Arc::new(root);
        if let Some(id) = root.get("$id").and_then(Value::as_str) {
            docs.insert(id.to_owned(), Arc::clone(&root));
        }
        Lookup::Found(KindSchema {
            validator,
            path,
            docs,
            root,
        })
    }

    /// A referenced file, read and skimmed once per catalog; other kinds
    /// that need it meanwhile wait for it.
    fn referenced(&self, world: &dyn World, file: &str) -> Result<Referenced, String> {
        let cell = {
            let mut cache = self.referenced.lock().map_err(|_| "schema cache poisoned".to_owned())?;
            Arc::clone(cache.entry(file.to_owned()).or_default())
        };
        cell.get_or_init(|| {
            let text = world
                .read_schema(file)
                .map_err(|e| format!("its reference {file}: {e}"))?;
            let doc = RefDoc::parse(&text).map_err(|e| format!("its reference {file} is not JSON: {e}"))?;
            let id = doc
                .id()
                .map_or_else(|| format!("file:///{}", file.trim_start_matches('/')), str::to_owned);
            Ok(Arc::new((id, doc)))
        })
        .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconform_names() {
        let c = |loc: &str, av: &str, k: &str| candidates(loc, av, k, "1.35").unwrap();
        assert_eq!(
            c("k8s", "apps/v1", "Deployment"),
            vec!["k8s/deployment-apps-v1.json", "k8s/apps/deployment_v1.json"]
        );
        assert_eq!(c("k8s/", "v1", "ConfigMap")[0], "k8s/configmap-v1.json");
        assert_eq!(
            c("k8s", "networking.k8s.io/v1", "NetworkPolicy")[0],
            "k8s/networkpolicy-networking-v1.json"
        );
        assert_eq!(
            c(
                "/s/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json",
                "v1",
                "Service"
            ),
            vec!["/s/v1.35.0-local-strict/service-v1.json"]
        );
        assert_eq!(
            c(
                "crds/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json",
                "cilium.io/v2alpha1",
                "CiliumL2AnnouncementPolicy"
            ),
            vec!["crds/cilium.io/ciliuml2announcementpolicy_v2alpha1.json"]
        );
        assert!(candidates("x/{{ .Nope }}.json", "v1", "Pod", "1.35").is_err());
        assert_eq!(normalized_version("1.35"), "v1.35.0");
        assert_eq!(normalized_version("v1.35.2"), "v1.35.2");
    }

    #[test]
    fn names_that_would_leave_the_schema_folder_are_refused() {
        for (av, k) in [
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy"),
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
        ] {
            assert_eq!(check_names(av, k), Ok(()), "{av} {k}");
        }
        for (av, k) in [
            ("v1", "../../../etc/passwd"),
            ("v1", "Config/Map"),
            ("v1", "Config\\Map"),
            ("v1", ""),
            ("v1", "1Map"),
            ("../../x/v1", "Pod"),
            ("a..b/v1", "Pod"),
            ("apps/v1/x", "Pod"),
            ("apps/../v1", "Pod"),
            ("/v1", "Pod"),
            ("apps/", "Pod"),
            ("V1", "Pod"),
            ("v1 ", "Pod"),
        ] {
            assert!(check_names(av, k).is_err(), "{av} {k}");
        }
    }
}
