//! A root's HelmReleases as releases: the chart from the source they
//! name, and the values helm-controller gives them (fluxcd/pkg
//! `chartutil.ChartValuesFromReferences`; helm-controller
//! `docs/spec/v2/helmreleases.md`, "Values references"): each `valuesFrom`
//! in order, merged at the root or set at its `targetPath`, then the
//! inline `spec.values` on top, a `targetPath` winning over them. Values
//! the import cannot read (a Secret's, an encrypted ConfigMap's, a
//! variable from one) are left out, and the release is marked unproven.

use std::collections::BTreeMap;

use serde_json::Value;

use super::super::tree::Tree;
use super::super::values::{self, Step};
use super::super::{Chart, Read, Release, not_converted};
use super::{Built, ClusterObjects, Root, read_kinds};
use crate::diag::Diagnostic;
use crate::yaml::Origin;

/// An object's namespace (Flux applies namespaced objects without one to
/// `default`) and name.
fn id(v: &Value) -> (String, String) {
    (
        v["metadata"]["namespace"].as_str().unwrap_or("default").to_owned(),
        v["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    )
}

/// Objects of one kind by namespace and name.
fn index<'a>(objects: &'a [Built], kind: &str) -> BTreeMap<(String, String), &'a Value> {
    objects
        .iter()
        .filter(|o| o.value["kind"].as_str() == Some(kind))
        .map(|o| (id(&o.value), &o.value))
        .collect()
}

pub(super) fn releases(tree: &Tree, root: &Root, built: &ClusterObjects, read: &mut Read) {
    let objects = &built.objects[..];
    let ctx = Ctx {
        tree,
        cluster: &root.env,
        folder: &root.folder,
        git: root.git.clone().or_else(|| super::git_source(objects)),
        config_maps: index(objects, "ConfigMap"),
        secrets: index(objects, "Secret"),
        sources: ["HelmRepository", "OCIRepository", "GitRepository", "Bucket"]
            .into_iter()
            .map(|k| (k, index(objects, k)))
            .collect(),
        used: std::cell::RefCell::new(Default::default()),
    };
    let releases: Vec<&Built> = objects
        .iter()
        .filter(|o| o.value["kind"].as_str() == Some("HelmRelease"))
        .collect();
    for o in &releases {
        let mut release = ctx.release(&o.value, &mut read.notes);
        release.unread.extend(o.unread.iter().cloned());
        // A release waits for every release its Kustomization's
        // `dependsOn` waits for.
        if let Some(k) = &o.kustomization {
            let before = built.before(k);
            for r in &releases {
                if r.kustomization.as_ref().is_some_and(|rk| before.contains(rk)) {
                    release.requires.push(id(&r.value).1);
                }
            }
        }
        read.releases.push(Release {
            env: root.env.clone(),
            ..release
        });
    }
    ctx.others(objects, &mut read.notes);
}

struct Ctx<'a> {
    tree: &'a Tree,
    /// The environment, for messages.
    cluster: &'a str,
    /// The root folder, where objects the tree does not show are pointed.
    folder: &'a str,
    /// The repository the cluster's Flux reads (this tree).
    git: Option<super::super::GitSource>,
    config_maps: BTreeMap<(String, String), &'a Value>,
    secrets: BTreeMap<(String, String), &'a Value>,
    sources: BTreeMap<&'static str, BTreeMap<(String, String), &'a Value>>,
    /// ConfigMaps some release reads.
    used: std::cell::RefCell<std::collections::BTreeSet<(String, String)>>,
}

impl Ctx<'_> {
    fn origin(&self, kind: &str, (ns, name): &(String, String)) -> Origin {
        self.tree.find(kind, name, Some(ns)).map_or_else(
            || Origin::file_start(self.tree.shown_path(self.folder)),
            |d| d.origin_of("metadata/name"),
        )
    }

    fn release(&self, hr: &Value, notes: &mut Vec<Diagnostic>) -> Release {
        let (ns, name) = id(hr);
        let origin = self.origin("HelmRelease", &(ns.clone(), name.clone()));
        let spec = &hr["spec"];
        let namespace = spec["targetNamespace"].as_str().unwrap_or(&ns).to_owned();
        let mut r = Release::new(
            format!("{ns}/{name}"),
            name.clone(),
            String::new(),
            namespace,
            origin.clone(),
        );
        let mut unread = Vec::new();
        r.values = self.values(&ns, &name, spec, &origin, &mut unread, notes);
        if spec["postRenderers"].as_array().is_some_and(|p| !p.is_empty()) {
            // helm-controller runs them over what the chart renders
            // (fluxcd/helm-controller `docs/spec/v2/helmreleases.md`, "Post
            // renderers"): the objects it applies are not the chart's.
            unread.push("postRenderers (they change the objects its chart renders)".to_owned());
            notes.push(not_converted(
                origin.clone(),
                format!(
                    "environment {}: HelmRelease {name}: its postRenderers are not imported",
                    self.cluster
                ),
                "set what they change in the component's config.yaml `patches` (RFC 6902), then compare with `strata render`",
            ));
        }
        if spec["chart"]["spec"]["valuesFiles"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
        {
            unread.push("the chart's valuesFiles".to_owned());
        }
        r.unread = unread;
        // `install.crds: Skip` leaves the chart's CRDs out; `Create` (the
        // default) and `CreateReplace` install them.
        r.crds = spec["install"]["crds"].as_str() != Some("Skip");
        r.chart = self.chart(&ns, &name, spec, &origin, notes);
        r.requires = spec["dependsOn"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .collect();
        // helm-controller names the release `<targetNamespace>-<name>`
        // when the HelmRelease sets a target namespace and no name.
        r.release_name = spec["releaseName"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| spec["targetNamespace"].as_str().map(|t| format!("{t}-{name}")));
        r
    }

    /// The chart: `spec.chart.spec` from a HelmRepository, or `spec.chartRef`
    /// to an OCIRepository.
    fn chart(&self, ns: &str, name: &str, spec: &Value, origin: &Origin, notes: &mut Vec<Diagnostic>) -> Option<Chart> {
        let (chart, source_ref) = match (&spec["chart"]["spec"], &spec["chartRef"]) {
            (c @ Value::Object(_), _) => (Some(c), &c["sourceRef"]),
            (_, r @ Value::Object(_)) => (None, r),
            _ => {
                notes.push(self.no_chart(name, "it names no chart", origin));
                return None;
            }
        };
        let kind = source_ref["kind"].as_str().unwrap_or("");
        if kind == "ExternalArtifact" {
            notes.push(self.no_chart(
                name,
                "it is an ExternalArtifact, which the import lays out only for Kustomizations",
                origin,
            ));
            return None;
        }
        let key = (
            source_ref["namespace"].as_str().unwrap_or(ns).to_owned(),
            source_ref["name"].as_str().unwrap_or("").to_owned(),
        );
        let Some(source) = self.sources.get(kind).and_then(|m| m.get(&key)) else {
            notes.push(self.no_chart(
                name,
                &format!("its source {kind} {}/{} is not in what the root applies", key.0, key.1),
                origin,
            ));
            return None;
        };
        let url = source["spec"]["url"].as_str().unwrap_or("").to_owned();
        if chart.is_some_and(|c| c["valuesFiles"].as_array().is_some_and(|f| !f.is_empty())) {
            notes.push(not_converted(
                origin.clone(),
                format!(
                    "environment {}: HelmRelease {name}: the chart's valuesFiles replace its defaults and are not imported",
                    self.cluster
                ),
                "copy those files' values into the component's layers by hand",
            ));
        }
        match (kind, chart) {
            ("HelmRepository", Some(c)) => {
                let oci = source["spec"]["type"].as_str() == Some("oci") || url.starts_with("oci://");
                let version = c["version"].as_str().unwrap_or("*").to_owned();
                Some(Chart::Remote {
                    repo_url: url,
                    name: c["chart"].as_str().unwrap_or("").to_owned(),
                    version,
                    oci,
                })
            }
            ("OCIRepository", None) => {
                let r = &source["spec"]["ref"];
                let version = r["tag"].as_str().or(r["semver"].as_str()).unwrap_or("*").to_owned();
                url.rsplit_once('/').map(|(repo, chart)| Chart::Remote {
                    repo_url: repo.to_owned(),
                    name: chart.to_owned(),
                    version,
                    oci: true,
                })
            }
            ("GitRepository", Some(c)) if self.is_this_repository(source) => {
                let dir = c["chart"].as_str().unwrap_or("").trim_start_matches("./");
                match crate::world::normalize(dir) {
                    Ok(dir) if self.tree.root.join(&dir).join("Chart.yaml").is_file() => Some(Chart::Local { dir }),
                    _ => {
                        notes.push(self.no_chart(name, &format!("its chart folder {dir} is not in the tree"), origin));
                        None
                    }
                }
            }
            _ => {
                notes.push(self.no_chart(
                    name,
                    &format!("its chart comes from a {kind} that is not this repository"),
                    origin,
                ));
                None
            }
        }
    }

    /// Whether a GitRepository is the one the root's Flux reads this
    /// repository through.
    fn is_this_repository(&self, source: &Value) -> bool {
        self.git.as_ref().is_some_and(|g| {
            source["spec"]["url"]
                .as_str()
                .is_some_and(|u| super::same_url(u, &g.url))
        })
    }

    fn no_chart(&self, name: &str, why: &str, origin: &Origin) -> Diagnostic {
        not_converted(
            origin.clone(),
            format!(
                "environment {}: HelmRelease {name}: the chart is not imported: {why}",
                self.cluster
            ),
            "the component is not written: import from the checkout that holds the chart, or write it by hand",
        )
    }

    /// The values helm-controller gives the release; what it cannot read
    /// goes into `unread`.
    fn values(
        &self,
        ns: &str,
        name: &str,
        spec: &Value,
        origin: &Origin,
        unread: &mut Vec<String>,
        notes: &mut Vec<Diagnostic>,
    ) -> Value {
        let inline = match &spec["values"] {
            v @ Value::Object(_) => v.clone(),
            _ => Value::Object(serde_json::Map::new()),
        };
        let mut acc = Acc {
            out: Value::Object(serde_json::Map::new()),
            targets: Vec::new(),
        };
        let release = Named { name, origin };
        for r in spec["valuesFrom"].as_array().into_iter().flatten() {
            if let Some(text) = self.reference(ns, name, r, origin, unread, notes) {
                self.apply(&mut acc, r, text, &inline, &release, notes);
            }
        }
        let inline_paths = values::leaf_paths(&inline);
        if acc.overlaps(&inline_paths) {
            notes.push(not_converted(
                origin.clone(),
                format!("environment {}: HelmRelease {name}: spec.values sets a place a targetPath sets; the targetPath wins, as the documentation says", self.cluster),
                "check what the cluster runs with `flux debug hr --show-values`",
            ));
        }
        values::merge(&mut acc.out, &inline);
        for (path, v) in acc.targets {
            values::set_path(&mut acc.out, &path, v);
        }
        if inline_paths.iter().any(|p| values::null_at(&inline, p)) {
            notes.push(not_converted(
                origin.clone(),
                format!("environment {}: HelmRelease {name}: a null in spec.values is kept; Flux itself may drop it when it updates the object (fluxcd/kustomize-controller#372)", self.cluster),
                "strata passes the null to helm through the values ConfigMap; check the chart default it removes is meant to go",
            ));
        }
        acc.out
    }

    /// One `valuesFrom` reference's text: merged at the root, or set at its
    /// `targetPath` (after the inline values are merged, as the controller
    /// does).
    fn apply(
        &self,
        acc: &mut Acc,
        r: &Value,
        text: String,
        inline: &Value,
        release: &Named<'_>,
        notes: &mut Vec<Diagnostic>,
    ) {
        let (name, origin) = (release.name, release.origin);
        let key = r["valuesKey"].as_str().unwrap_or("values.yaml");
        let Some(target) = r["targetPath"].as_str().filter(|t| !t.is_empty()) else {
            match parse_mapping(&text) {
                Ok(v) => {
                    if acc.overlaps(&values::leaf_paths(&v)) {
                        notes.push(not_converted(
                            origin.clone(),
                            format!("environment {}: HelmRelease {name}: {key} of a later reference sets a place a targetPath set; the result depends on the controller's order of work", self.cluster),
                            "check what the cluster runs with `flux debug hr --show-values`, and set it in the layers",
                        ));
                    }
                    values::merge(&mut acc.out, &v);
                }
                Err(why) => notes.push(not_converted(
                    origin.clone(),
                    format!(
                        "environment {}: HelmRelease {name}: {key} of {} is not a YAML mapping: {why}",
                        self.cluster,
                        r["name"].as_str().unwrap_or("")
                    ),
                    "fix the values text",
                )),
            }
            return;
        };
        match values::parse_path(target) {
            Ok(path) => {
                values::merge(&mut acc.out, inline);
                let v = if r["literal"].as_bool() == Some(true) {
                    Value::String(text)
                } else {
                    target_value(&text)
                };
                values::set_path(&mut acc.out, &path, v.clone());
                acc.targets.push((path, v));
            }
            Err(why) => notes.push(not_converted(
                origin.clone(),
                format!("HelmRelease {name}: targetPath {why}"),
                "fix the targetPath",
            )),
        }
    }

    /// The text one `valuesFrom` reference gives, or `None` (said why,
    /// unless it is optional and missing).
    fn reference(
        &self,
        ns: &str,
        name: &str,
        r: &Value,
        origin: &Origin,
        unread: &mut Vec<String>,
        notes: &mut Vec<Diagnostic>,
    ) -> Option<String> {
        let kind = r["kind"].as_str().unwrap_or("");
        let ref_name = r["name"].as_str().unwrap_or("");
        let key = r["valuesKey"].as_str().unwrap_or("values.yaml");
        let optional = r["optional"].as_bool() == Some(true);
        let mut missing = |notes: &mut Vec<Diagnostic>, why: String| {
            if !optional {
                unread.push(format!("values from ConfigMap {ns}/{ref_name} ({why})"));
                notes.push(not_converted(
                    origin.clone(),
                    format!(
                        "environment {}: HelmRelease {name}: ConfigMap {ns}/{ref_name} {why}; its values are left out",
                        self.cluster
                    ),
                    "add the ConfigMap to the tree in plain text, or the values to the layers by hand",
                ));
            }
        };
        let id = (ns.to_owned(), ref_name.to_owned());
        if kind == "Secret" {
            let sealed = self
                .secrets
                .get(&id)
                .is_some_and(|s| super::super::sops::is_encrypted(s));
            let what = if sealed {
                format!("values from the SOPS-encrypted Secret {ns}/{ref_name}")
            } else {
                format!("values from Secret {ns}/{ref_name} (not in git)")
            };
            unread.push(what.clone());
            notes.push(not_converted(
                origin.clone(),
                format!(
                    "environment {}: HelmRelease {name}: {what}; they are left out",
                    self.cluster
                ),
                "keep them in the cluster (an ExternalSecret), and refer to them from the chart",
            ));
            return None;
        }
        let Some(cm) = self.config_maps.get(&id) else {
            missing(notes, "is not in what the root applies".into());
            return None;
        };
        self.used.borrow_mut().insert(id);
        if super::super::sops::is_encrypted(cm) {
            missing(notes, "is encrypted with SOPS".into());
            return None;
        }
        match cm["data"][key].as_str() {
            Some(t) => Some(t.to_owned()),
            None => {
                missing(notes, format!("has no key {key}"));
                None
            }
        }
    }

    /// Lists, per kind, the objects the import does not read.
    fn others(&self, objects: &[Built], notes: &mut Vec<Diagnostic>) {
        let read = read_kinds();
        let used = self.used.borrow();
        let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for o in objects {
            let v = &o.value;
            let kind = v["kind"].as_str().unwrap_or("");
            let flux_own = v["metadata"]["namespace"].as_str() == Some("flux-system")
                || v["metadata"]["labels"]["app.kubernetes.io/part-of"].as_str() == Some("flux");
            let named = super::super::sops::is_encrypted(v);
            if read.contains(kind) || flux_own || named || (kind == "ConfigMap" && used.contains(&id(v))) {
                continue;
            }
            by_kind
                .entry(kind)
                .or_default()
                .push(format!("{} ({})", id(v).1, o.via));
        }
        for (kind, names) in by_kind {
            notes.push(not_converted(
                Origin::file_start(self.tree.shown_path(self.folder)),
                format!(
                    "environment {}: {} object(s) of kind {kind} are not imported: {}",
                    self.cluster,
                    names.len(),
                    names.join(", ")
                ),
                "strata imports Helm releases; put other objects in a component's manifests/",
            ));
        }
    }
}

/// The values so far, and what each `targetPath` set.
struct Acc {
    out: Value,
    targets: Vec<(Vec<Step>, Value)>,
}

impl Acc {
    /// Whether any of `paths` overlaps a place a `targetPath` set.
    fn overlaps(&self, paths: &[Vec<Step>]) -> bool {
        self.targets
            .iter()
            .any(|(t, _)| paths.iter().any(|p| values::overlaps(p, t)))
    }
}

/// A release as messages name it.
struct Named<'a> {
    name: &'a str,
    origin: &'a Origin,
}

/// A `targetPath` value: quotes make a string, else `--set` typing.
fn target_value(text: &str) -> Value {
    let t = text.trim();
    for q in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return Value::String(t[1..t.len() - 1].to_owned());
        }
    }
    values::typed(t)
}

fn parse_mapping(text: &str) -> Result<Value, String> {
    let name = std::sync::Arc::from("values");
    let node = crate::yaml::parse(&name, text).map_err(|e| format!("line {}: {}", e.origin.line, e.message))?;
    match node.to_json() {
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        v @ Value::Object(_) => Ok(v),
        _ => Err("not a mapping".into()),
    }
}
