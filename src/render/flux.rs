//! The Flux objects of an environment: the GitRepository, the namespaces'
//! Kustomization, and per component a Kustomization, its chart source and
//! its HelmRelease; the bootstrap root.

use rayon::prelude::*;
use serde_json::{Value as J, json};

use super::generate::{Gen, component_json, labels};
use super::{
    BOOTSTRAP, CLUSTER, CLUSTER_APP, FLUX_NAMESPACE, NAMESPACES, NAMESPACES_APP, NamespaceSpec, Object, ROOT_APP,
    SYSTEM_NAMESPACES, Source, VALUES_MARKER, in_repo, repo_path,
};
use crate::diag::Diagnostic;
use crate::load::{Chart, Component, SyncMode, Target, Tier};
use crate::yaml::Origin;

impl Gen<'_> {
    pub(super) fn flux(&self, cluster_requires: &[String], shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let (platform, env) = (self.platform, self.env);
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
        // The namespaces, from one Kustomization that never prunes them.
        let has_namespaces = !self.namespaces.is_empty();
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
                    &env_origin,
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
        if has_namespaces {
            let mut ctx = base.clone();
            ctx["name"] = json!(NAMESPACES_APP);
            ctx["path"] = json!(format!(
                "./{}",
                repo_path(platform, env, self.layout, Target::Flux, NAMESPACES)
            ));
            ctx["depends_on"] = json!([]);
            ctx["prune"] = json!(false);
            ctx["orphan"] = json!(true);
            self.push(
                &mut out,
                &mut diags,
                "flux/kustomization.yaml.j2",
                "",
                &ctx,
                &env_origin,
                None,
                None,
            );
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
        if shared.iter().any(|o| o.source == Source::Cluster) {
            let mut ctx = base.clone();
            ctx["name"] = json!(CLUSTER_APP);
            ctx["path"] = json!(format!(
                "./{}",
                repo_path(platform, env, self.layout, Target::Flux, CLUSTER)
            ));
            ctx["depends_on"] = json!(cluster_requires);
            ctx["prune"] = json!(true);
            ctx["orphan"] = json!(false);
            self.push(
                &mut out,
                &mut diags,
                "flux/kustomization.yaml.j2",
                "",
                &ctx,
                &env_origin,
                None,
                None,
            );
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
        ctx["path"] = json!(format!("./{}", repo_path(platform, env, self.layout, Target::Flux, "")));
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

    /// The Flux objects of one component: its Kustomization, its chart
    /// source and its HelmRelease.
    pub(super) fn flux_component(
        &self,
        c: &Component,
        base: &J,
        has_namespaces: bool,
    ) -> (Vec<Object>, Vec<Diagnostic>) {
        let (platform, env) = (self.platform, self.env);
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let folder = format!("components/{}", c.name);
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values"] = json!(VALUES_MARKER);
        ctx["name"] = json!(c.name);
        ctx["path"] = json!(format!(
            "./{}",
            repo_path(platform, env, self.layout, Target::Flux, &folder)
        ));
        let mut deps: Vec<String> = c.requires.iter().map(|(r, _)| r.clone()).collect();
        if has_namespaces && !SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) {
            deps.insert(0, NAMESPACES_APP.to_owned());
        }
        ctx["depends_on"] = json!(deps);
        ctx["prune"] = json!(true);
        ctx["orphan"] = json!(c.tier == Tier::Core);
        ctx["manual"] = json!(c.sync == SyncMode::Manual);
        ctx["remediation"] = json!({
            "install": c.remediation.install.name(),
            "upgrade": c.remediation.upgrade.name(),
            "retries": c.remediation.retries,
        });
        if let Chart::Remote {
            repo_url, oci: true, ..
        } = &c.chart
        {
            ctx["oci_url"] = json!(crate::charts::lock::normalize_repo(repo_url, true));
        }
        if let Chart::Local { path } = &c.chart {
            ctx["chart_path"] = json!(format!("./{}", in_repo(env, self.layout, path)));
        }
        let values = self.values(c);
        self.push(
            &mut out,
            &mut diags,
            "flux/kustomization.yaml.j2",
            "",
            &ctx,
            &origin,
            Some(c),
            values,
        );
        match &c.chart {
            Chart::Remote { oci: true, .. } => {
                self.push(
                    &mut out,
                    &mut diags,
                    "flux/ocirepository.yaml.j2",
                    &folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Remote { .. } => {
                self.push(
                    &mut out,
                    &mut diags,
                    "flux/helmrepository.yaml.j2",
                    &folder,
                    &ctx,
                    &origin,
                    Some(c),
                    values,
                );
            }
            Chart::Local { .. } => {}
        }
        self.push(
            &mut out,
            &mut diags,
            "flux/helmrelease.yaml.j2",
            &folder,
            &ctx,
            &origin,
            Some(c),
            values,
        );
        (out, diags)
    }
}
