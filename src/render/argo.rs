//! The Argo CD objects of an environment: per component an Application
//! (and one for its manifests), the cluster objects' Application, and the
//! bootstrap root (app of apps).

use rayon::prelude::*;
use serde_json::{Value as J, json};

use super::generate::{Gen, component_json, labels};
use super::hydrate::{CRDS, CRDS_APP, Delivery};
use super::plan::{CRDS_WAVE, manifests_wave, wave};
use super::versions::{Feature, argo_retry};
use super::{BOOTSTRAP, CLUSTER, CLUSTER_APP, Object, ROOT_APP, Source, VALUES_YAML_MARKER, in_repo, repo_path};
use crate::diag::Diagnostic;
use crate::load::{Chart, Component, SyncMode, Target};
use crate::yaml::Origin;

impl Gen<'_> {
    pub(super) fn argo(&self, cluster_wave: i64, shared: &[Object]) -> Result<Vec<Object>, Vec<Diagnostic>> {
        let (platform, env) = (self.platform, self.env);
        // Room for the shared objects that join them.
        let mut out = Vec::with_capacity(shared.len() + 4 * self.platform.components.len() + 16);
        let mut diags = Vec::new();
        let argo = &platform.project.argo;
        let base = json!({
            "argo": {"namespace": argo.namespace, "project": argo.project},
            "git": self.git(),
            "labels": labels(),
            "retry": argo_retry(&argo.retry, self.versions),
        });
        for (objs, ds) in self
            .chosen()
            .par_iter()
            .with_max_len(1)
            .map(|c| self.argo_component(c, &base))
            .collect::<Vec<_>>()
        {
            out.extend(objs);
            diags.extend(ds);
        }
        // strata's own folders, each an Application that syncs by itself
        // and cascades into nothing: the CRDs first, the cluster objects at
        // their wave.
        let own_folders = [
            (self.plan.crds, CRDS_APP, CRDS_WAVE, CRDS),
            (
                shared.iter().any(|o| o.source == Source::Cluster),
                CLUSTER_APP,
                cluster_wave,
                CLUSTER,
            ),
        ];
        let origin = Origin::file_start(env.file.as_str());
        for (wanted, name, wave, folder) in own_folders {
            if !wanted {
                continue;
            }
            let mut ctx = base.clone();
            ctx["name"] = json!(name);
            ctx["namespace"] = json!("default");
            ctx["wave"] = json!(wave);
            ctx["automated"] = json!(true);
            ctx["cascade"] = json!(false);
            ctx["server_side_diff"] = json!(false);
            ctx["namespace_metadata"] = J::Null;
            ctx["source"] = json!("manifests");
            ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, folder));
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

    /// The Argo CD Applications of one component: its Helm release (and
    /// its manifests one wave later), or a directory source over its folder.
    pub(super) fn argo_component(&self, c: &Component, base: &J) -> (Vec<Object>, Vec<Diagnostic>) {
        let (platform, env) = (self.platform, self.env);
        let mut out = Vec::new();
        let mut diags = Vec::new();
        let origin = c.origin();
        let depth = self.depths.get(&c.name).copied().unwrap_or(0);
        let mut ctx = base.clone();
        ctx["component"] = component_json(c);
        ctx["values_yaml"] = json!(VALUES_YAML_MARKER);
        ctx["name"] = json!(c.name);
        ctx["namespace"] = json!(c.namespace);
        ctx["wave"] = json!(wave(depth));
        ctx["automated"] = json!(c.sync == SyncMode::Automated);
        ctx["cascade"] = json!(!self.plan.orphans(c));
        ctx["server_side_diff"] = json!(c.server_side_diff && self.versions.accepts(Feature::ServerSideDiff));
        if let Some(r) = &c.retry {
            ctx["retry"] = argo_retry(r, self.versions);
        }
        ctx["namespace_metadata"] = self.namespace_metadata(c);
        let folder = format!("components/{}", c.name);
        let values = self.values(c);
        match (self.plan.of(&c.name), &c.chart) {
            (Delivery::Release, Chart::Remote { oci, .. }) => {
                ctx["source"] = json!("chart");
                let url = self.repo_url(c);
                // Argo CD's Helm OCI form has no scheme.
                ctx["repo_url"] = json!(if *oci {
                    url.trim_start_matches("oci://").trim_end_matches('/').to_owned()
                } else {
                    url
                });
            }
            (Delivery::Release, Chart::Local { path }) => {
                ctx["source"] = json!("git");
                ctx["path"] = json!(in_repo(env, self.layout, path));
            }
            _ => {
                ctx["source"] = json!("manifests");
                ctx["path"] = json!(repo_path(platform, env, self.layout, Target::Argo, &folder));
            }
        }
        if self.plan.has_app(&c.name) {
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
        if self.plan.with_manifests.contains(&c.name) {
            ctx["name"] = json!(format!("{}-manifests", c.name));
            ctx["source"] = json!("manifests");
            ctx["wave"] = json!(manifests_wave(depth));
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

    /// `managedNamespaceMetadata` for the namespace a component uses: the
    /// labels and annotations the environment's components give it.
    fn namespace_metadata(&self, c: &Component) -> J {
        match self.namespaces.get(&c.namespace) {
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
        }
    }
}
