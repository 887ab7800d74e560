//! The Argo CD objects of an environment: per component an Application
//! (and one for its manifests), the cluster objects' Application, and the
//! bootstrap root (app of apps).

use std::collections::BTreeSet;

use rayon::prelude::*;
use serde_json::{Value as J, json};

use super::generate::{Gen, component_json, labels};
use super::{BOOTSTRAP, CLUSTER, CLUSTER_APP, Object, ROOT_APP, Source, VALUES_YAML_MARKER, in_repo, repo_path};
use crate::diag::Diagnostic;
use crate::load::{Chart, Component, SyncMode, Target, Tier};
use crate::yaml::Origin;

impl Gen<'_> {
    pub(super) fn argo(&self, cluster_wave: u32, shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let (platform, env) = (self.platform, self.env);
        // Room for the shared objects that join them.
        let mut out = Vec::with_capacity(shared.len() + 4 * self.platform.components.len() + 16);
        let mut diags = Vec::new();
        let argo = &platform.project.argo;
        let retry_json = |r: &crate::load::component::Retry| json!({"limit": r.limit, "duration": r.duration, "factor": r.factor, "max_duration": r.max_duration});
        let base = json!({
            "argo": {"namespace": argo.namespace, "project": argo.project},
            "git": self.git(),
            "labels": labels(),
            "retry": retry_json(&argo.retry),
        });
        let with_manifests: BTreeSet<&str> = shared.iter().filter_map(|o| o.component.as_deref()).collect();
        for (objs, ds) in self
            .chosen()
            .par_iter()
            .with_max_len(1)
            .map(|c| self.argo_component(c, &base, &with_manifests))
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        if shared.iter().any(|o| o.source == Source::Cluster) {
            let origin = Origin::file_start(env.file.as_str());
            let mut ctx = base.clone();
            ctx["name"] = json!(CLUSTER_APP);
            ctx["namespace"] = json!("default");
            ctx["wave"] = json!(cluster_wave);
            ctx["automated"] = json!(true);
            ctx["cascade"] = json!(false);
            ctx["server_side_diff"] = json!(false);
            ctx["namespace_metadata"] = J::Null;
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, CLUSTER));
            self.push(
                &mut out,
                &mut diags,
                "argo/application.yaml.j2",
                "",
                &ctx,
                &origin,
                None,
                None,
            );
        }
        let origin = Origin::file_start(env.file.as_str());
        let mut ctx = base.clone();
        ctx["name"] = json!(ROOT_APP);
        ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, ""));
        self.push(
            &mut out,
            &mut diags,
            "argo/root.yaml.j2",
            BOOTSTRAP,
            &ctx,
            &origin,
            None,
            None,
        );
        if diags.is_empty() { Ok(out) } else { Err(diags) }
    }

    /// The Argo CD Applications of one component: its chart, and its
    /// manifests when it has any.
    pub(super) fn argo_component(
        &self,
        c: &Component,
        base: &J,
        with_manifests: &BTreeSet<&str>,
    ) -> (Vec<Object>, Vec<Diagnostic>) {
        let (platform, env) = (self.platform, self.env);
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let retry_json = |r: &crate::load::component::Retry| json!({"limit": r.limit, "duration": r.duration, "factor": r.factor, "max_duration": r.max_duration});
        let origin = c.origin();
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values_yaml"] = json!(VALUES_YAML_MARKER);
        ctx["name"] = json!(c.name);
        ctx["namespace"] = json!(c.namespace);
        ctx["wave"] = json!(self.depths.get(&c.name).copied().unwrap_or(0));
        ctx["automated"] = json!(c.sync == SyncMode::Automated);
        ctx["cascade"] = json!(c.tier == Tier::Addon);
        ctx["server_side_diff"] = json!(c.server_side_diff);
        if let Some(r) = &c.retry {
            ctx["retry"] = retry_json(r);
        }
        ctx["namespace_metadata"] = match self.namespaces.get(&c.namespace) {
            Some(ns) if !(ns.labels.is_empty() && ns.annotations.is_empty()) => {
                let mut m = serde_json::Map::new();
                if !ns.labels.is_empty() {
                    m.insert("labels".into(), json!(ns.labels));
                }
                if !ns.annotations.is_empty() {
                    m.insert("annotations".into(), json!(ns.annotations));
                }
                J::Object(m)
            }
            _ => J::Null,
        };
        match &c.chart {
            Chart::Remote { repo_url, oci, .. } => {
                ctx["source"] = json!("chart");
                // Argo CD's Helm OCI form has no scheme.
                ctx["repo_url"] = json!(if *oci {
                    repo_url.trim_start_matches("oci://").trim_end_matches('/').to_owned()
                } else {
                    repo_url.clone()
                });
            }
            Chart::Local { path } => {
                ctx["source"] = json!("git");
                ctx["path"] = json!(in_repo(env, self.layout, path));
            }
        }
        let values = self.values(c);
        self.push(
            &mut out,
            &mut diags,
            "argo/application.yaml.j2",
            "",
            &ctx,
            &origin,
            Some(c),
            values,
        );
        if with_manifests.contains(c.name.as_str()) {
            let folder = format!("components/{}", c.name);
            ctx["name"] = json!(format!("{}-manifests", c.name));
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, &folder));
            self.push(
                &mut out,
                &mut diags,
                "argo/application.yaml.j2",
                "",
                &ctx,
                &origin,
                Some(c),
                values,
            );
        }
        (out, diags)
    }
}
