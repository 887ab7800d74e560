//! The Flux objects of an environment: the GitRepository, the namespaces'
//! Kustomization, and per component a Kustomization, its chart source and
//! its HelmRelease; the bootstrap root.

use rayon::prelude::*;
use serde_json::{Value as J, json};

use super::generate::{Gen, component_json, labels};
use super::hydrate::{CRDS, CRDS_APP, Delivery, POST_HOOKS, PRE_HOOKS};
use super::versions::Feature;
use super::{
    BOOTSTRAP, CLUSTER, CLUSTER_APP, FLUX_NAMESPACE, NAMESPACES, NAMESPACES_APP, NamespaceSpec, Object, ROOT_APP,
    SYSTEM_NAMESPACES, Source, VALUES_YAML_MARKER, in_repo, repo_path,
};
use crate::diag::{Diagnostic, codes};
use crate::load::{Chart, Component, SyncMode, Target};
use crate::yaml::Origin;

impl Gen<'_> {
    pub(super) fn flux(&self, cluster_requires: &[String], shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let env = self.env;
        // Room for the shared objects that join them.
        let mut out = Vec::with_capacity(shared.len() + 4 * self.platform.components.len() + 16);
        let mut diags = Vec::new();
        let env_origin = Origin::file_start(env.file.as_str());
        let base = json!({"flux_namespace": FLUX_NAMESPACE, "git": self.git(), "labels": labels()});
        self.push(
            &mut out,
            &mut diags,
            "flux/gitrepository.yaml.j2",
            "",
            &base,
            &env_origin,
            None,
            None,
        );
        let has_namespaces = !self.namespaces.is_empty();
        if has_namespaces {
            self.flux_namespaces(&mut out, &mut diags, &base, &env_origin);
        }
        // Each component's objects depend on nothing else rendered: in parallel,
        // collected in component order.
        for (objs, ds) in self
            .chosen()
            .par_iter()
            .with_max_len(1)
            .map(|c| self.flux_component(c, &base, has_namespaces))
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        if self.plan.crds {
            // A CRD removed from the tree stays: deleting it would delete
            // every object of its kind.
            self.flux_env_kustomization(&mut out, &mut diags, &base, CRDS_APP, CRDS, Vec::new(), false);
        }
        if shared.iter().any(|o| o.source == Source::Cluster) {
            let deps: Vec<String> = cluster_requires
                .iter()
                .filter(|r| self.plan.has_app(r))
                .cloned()
                .chain(
                    cluster_requires
                        .iter()
                        .filter(|r| self.plan.with_manifests.contains(*r))
                        .map(|r| format!("{r}-manifests")),
                )
                .chain(
                    cluster_requires
                        .iter()
                        .filter(|r| self.plan.post_hooks.contains(*r))
                        .map(|r| format!("{r}-{POST_HOOKS}")),
                )
                .collect();
            self.flux_env_kustomization(&mut out, &mut diags, &base, CLUSTER_APP, CLUSTER, deps, true);
        }
        // Bootstrap: the GitRepository and the root Kustomization, applied once.
        self.push(
            &mut out,
            &mut diags,
            "flux/gitrepository.yaml.j2",
            BOOTSTRAP,
            &base,
            &env_origin,
            None,
            None,
        );
        let mut ctx = base.clone();
        ctx["name"] = json!(ROOT_APP);
        ctx["path"] = json!(format!(
            "./{}",
            repo_path(self.platform, env, self.layout, Target::Flux, "")
        ));
        self.push(
            &mut out,
            &mut diags,
            "flux/root.yaml.j2",
            BOOTSTRAP,
            &ctx,
            &env_origin,
            None,
            None,
        );
        if diags.is_empty() { Ok(out) } else { Err(diags) }
    }

    /// One Namespace per namespace of the environment, and the
    /// Kustomization that applies them and never prunes them.
    fn flux_namespaces(&self, out: &mut Vec<Object>, diags: &mut Vec<Diagnostic>, base: &J, origin: &Origin) {
        // One per namespace, in parallel, collected in name order.
        let namespaces: Vec<&NamespaceSpec> = self.namespaces.values().collect();
        for (objs, ds) in namespaces
            .par_iter()
            .with_max_len(1)
            .map(|ns| {
                let (mut objs, mut ds) = (Vec::new(), Vec::new());
                let mut ctx = base.clone();
                let mut spec = serde_json::to_value(ns).unwrap_or(J::Null);
                spec["labels"]
                    .as_object_mut()
                    .map(|m| m.insert("app.kubernetes.io/managed-by".into(), json!("strata")));
                spec["annotations"]
                    .as_object_mut()
                    .map(|m| m.insert("kustomize.toolkit.fluxcd.io/prune".into(), json!("disabled")));
                ctx["namespace"] = spec;
                self.push(
                    &mut objs,
                    &mut ds,
                    "flux/namespace.yaml.j2",
                    NAMESPACES,
                    &ctx,
                    origin,
                    None,
                    None,
                );
                (objs, ds)
            })
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        self.flux_env_kustomization(out, diags, base, NAMESPACES_APP, NAMESPACES, Vec::new(), false);
    }

    /// A Kustomization of the environment's own, for one of its folders:
    /// one that does not prune never loses what it applied, and deleting it
    /// leaves its objects.
    #[allow(clippy::too_many_arguments)]
    fn flux_env_kustomization(
        &self,
        out: &mut Vec<Object>,
        diags: &mut Vec<Diagnostic>,
        base: &J,
        name: &str,
        folder: &str,
        depends_on: Vec<String>,
        prune: bool,
    ) {
        let mut ctx = base.clone();
        ctx["name"] = json!(name);
        ctx["path"] = json!(format!(
            "./{}",
            repo_path(self.platform, self.env, self.layout, Target::Flux, folder)
        ));
        ctx["depends_on"] = json!(depends_on);
        ctx["prune"] = json!(prune);
        ctx["orphan"] = json!(!prune);
        ctx["timeout"] = json!("10m");
        let origin = Origin::file_start(self.env.file.as_str());
        self.push(out, diags, "flux/kustomization.yaml.j2", "", &ctx, &origin, None, None);
    }

    /// A Kustomization of the component's own (`name`) applying `folder`.
    #[allow(clippy::too_many_arguments)]
    fn flux_kustomization(
        &self,
        out: &mut Vec<Object>,
        diags: &mut Vec<Diagnostic>,
        base: &J,
        c: &Component,
        name: &str,
        folder: &str,
        depends_on: Vec<String>,
    ) {
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["name"] = json!(name);
        ctx["path"] = json!(format!(
            "./{}",
            repo_path(self.platform, self.env, self.layout, Target::Flux, folder)
        ));
        ctx["depends_on"] = json!(depends_on);
        ctx["prune"] = json!(true);
        ctx["orphan"] = json!(self.plan.orphans(c));
        ctx["timeout"] = json!(kustomization_timeout(c));
        self.push(
            out,
            diags,
            "flux/kustomization.yaml.j2",
            "",
            &ctx,
            &c.origin(),
            Some(c),
            None,
        );
    }

    /// The Flux objects of one component: a Kustomization applying its
    /// folder; for a Helm release, the chart source, the values ConfigMap
    /// and the HelmRelease in that folder, and its manifests' own
    /// Kustomization after it.
    pub(super) fn flux_component(
        &self,
        c: &Component,
        base: &J,
        has_namespaces: bool,
    ) -> (Vec<Object>, Vec<Diagnostic>) {
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let folder = format!("components/{}", c.name);
        let namespaced = has_namespaces && !SYSTEM_NAMESPACES.contains(&c.namespace.as_str());
        if self.plan.has_app(&c.name) {
            let mut deps = self.plan.depends_on(c, namespaced);
            // A hydrated chart's Helm hooks, in Helm's order: pre-hooks
            // applied and ready first, post-hooks after the rest.
            if self.plan.pre_hooks.contains(&c.name) {
                let name = format!("{}-{PRE_HOOKS}", c.name);
                let hooks = format!("{folder}/{PRE_HOOKS}");
                self.flux_kustomization(&mut out, &mut diags, base, c, &name, &hooks, deps.clone());
                deps.push(name);
            }
            self.flux_kustomization(&mut out, &mut diags, base, c, &c.name, &folder, deps);
            if self.plan.post_hooks.contains(&c.name) {
                let name = format!("{}-{POST_HOOKS}", c.name);
                let hooks = format!("{folder}/{POST_HOOKS}");
                self.flux_kustomization(&mut out, &mut diags, base, c, &name, &hooks, vec![c.name.clone()]);
            }
        }
        if self.plan.of(&c.name) != Delivery::Release {
            return (out, diags);
        }
        self.flux_release(&mut out, &mut diags, base, c, &folder);
        if self.plan.with_manifests.contains(&c.name) {
            let mut deps = vec![c.name.clone()];
            if namespaced {
                deps.insert(0, NAMESPACES_APP.to_owned());
            }
            let name = format!("{}-manifests", c.name);
            let folder = format!("{folder}/{MANIFESTS}");
            self.flux_kustomization(&mut out, &mut diags, base, c, &name, &folder, deps);
        }
        (out, diags)
    }

    /// The chart source, the values ConfigMap and the HelmRelease of a
    /// component delivered as a Helm release.
    fn flux_release(&self, out: &mut Vec<Object>, diags: &mut Vec<Diagnostic>, base: &J, c: &Component, folder: &str) {
        let env = self.env;
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["name"] = json!(c.name);
        ctx["manual"] = json!(c.sync == SyncMode::Manual);
        ctx["remediation"] = super::versions::flux_remediation(c, self.versions);
        ctx["timeout"] = json!(c.timeout.as_ref().map(|(t, _)| t));
        ctx["post_renderers"] = super::patches::post_renderers(c, env);
        ctx["repo_url"] = json!(self.repo_url(c));
        if let Chart::Remote { oci: true, .. } = &c.chart {
            ctx["oci_url"] = json!(crate::charts::lock::normalize_repo(&self.repo_url(c), true));
            ctx["oci_digest"] = json!(self.pins.get(&c.name));
            ctx["oci_api_version"] = json!(if self.versions.accepts(Feature::OciRepositoryV1) {
                "source.toolkit.fluxcd.io/v1"
            } else {
                "source.toolkit.fluxcd.io/v1beta2"
            });
        }
        if let Chart::Local { path } = &c.chart {
            ctx["chart_path"] = json!(format!("./{}", in_repo(env, self.layout, path)));
        }
        let values = self.values(c);
        let text = values.map(|v| v.yaml()).unwrap_or_default();
        if text.len() > MAX_CONFIGMAP {
            diags.push(too_large(c, &env.name, text.len()));
            return;
        }
        ctx["values_configmap"] = json!(format!("{}-values-{}", c.name, short_hash(&text)));
        ctx["values_yaml"] = json!(VALUES_YAML_MARKER);
        match &c.chart {
            Chart::Remote { oci: true, .. } => {
                self.push(
                    out,
                    diags,
                    "flux/ocirepository.yaml.j2",
                    folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Remote { .. } => {
                self.push(
                    out,
                    diags,
                    "flux/helmrepository.yaml.j2",
                    folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Local { .. } | Chart::None => {}
        }
        self.push(
            out,
            diags,
            "flux/values.yaml.j2",
            folder,
            &ctx,
            &origin,
            Some(c),
            values,
        );
        self.push(
            out,
            diags,
            "flux/helmrelease.yaml.j2",
            folder,
            &ctx,
            &origin,
            Some(c),
            values,
        );
    }
}

/// The folder of a Helm release's manifests, under its own.
pub const MANIFESTS: &str = "manifests";

/// What a ConfigMap holds at most (Kubernetes refuses larger ones).
const MAX_CONFIGMAP: usize = 1024 * 1024 - 1024;

/// The first ten hex digits of the SHA-256 of a text: a change of the
/// values renames their ConfigMap, so the HelmRelease changes with them and
/// Flux upgrades at once (helm-controller otherwise notices a changed
/// ConfigMap only at its next interval).
fn short_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::world::disk::hex(&Sha256::digest(text.as_bytes())[..5])
}

/// How long a component's Kustomization waits for its objects: its
/// `timeout` and five minutes more (the HelmRelease's own wait comes
/// first), else ten minutes.
fn kustomization_timeout(c: &Component) -> String {
    match &c.timeout {
        Some((t, _)) => format!("{}s", crate::load::component::duration_seconds(t) + 300),
        None => "10m".to_owned(),
    }
}

fn too_large(c: &Component, env: &str, len: usize) -> Diagnostic {
    Diagnostic::error(
        codes::OBJECT,
        c.origin(),
        format!(
            "the merged values of {} are {len} bytes; the ConfigMap that carries them to Flux holds at most 1 MiB",
            c.name
        ),
    )
    .with_help(
        "hydrate the environment (`hydrate: true`), so that the chart's objects are written instead of its values",
    )
    .in_env(env)
}
