//! The Services of type LoadBalancer: rendered or written in a manifest,
//! and, for components whose chart was not rendered, the profiles' ones.

use serde_json::Value as J;

use super::profiled::profile_labels;
use super::workloads::labels_of;
use super::{Ctx, Judged, Service};
use crate::load::Platform;
use crate::render::Source;

impl<'a> Ctx<'a> {
    /// Every Service of type LoadBalancer.
    pub(super) fn collect_services(&self) -> Vec<Service<'a>> {
        let mut out = Vec::new();
        let platform: &'a Platform = self.platform;
        for o in self.objects_of_kind("Service") {
            if o.value["spec"]["type"] != J::String("LoadBalancer".into()) {
                continue;
            }
            let c = o.component.as_ref().and_then(|n| platform.components.get(n));
            // The profile's path for the policy, when a profile Service
            // describes this one (it selects the profile workload's pods).
            let selector = labels_of(&o.value["spec"]["selector"]);
            let hint = c.and_then(|c| {
                let p = self.profiles.for_component(c)?;
                p.services.iter().find_map(|s| {
                    let w = p.workloads.iter().find(|w| w.id == s.id)?;
                    let labels = profile_labels(w, c);
                    (!labels.is_empty() && labels.iter().all(|(k, v)| selector.get(k) == Some(v)))
                        .then(|| s.external_traffic_policy.as_ref().map(|r| r.path.clone()))
                        .flatten()
                })
            });
            let etp = o.value["spec"]
                .get("externalTrafficPolicy")
                .map(|v| self.field(c, o, "spec.externalTrafficPolicy", v.clone(), hint.clone()));
            out.push(Service {
                component: c,
                namespace: o.namespace().unwrap_or("").to_owned(),
                name: o.name().to_owned(),
                labels: labels_of(&o.value["metadata"]["labels"]),
                etp,
                etp_path: hint,
                judged: match &o.source {
                    Source::Chart { template } => Judged::Chart {
                        template: template.clone(),
                    },
                    _ => Judged::Manifest,
                },
            });
        }
        // Components whose chart was not rendered: the profiles' Services.
        for c in platform.components.values().filter(|c| !self.render.inflated(&c.name)) {
            let Some(p) = self.profiles.for_component(c) else {
                continue;
            };
            for s in &p.services {
                if let Some(e) = &s.enabled
                    && !self.value(c, e).truthy()
                {
                    continue;
                }
                let Some(t) = &s.kind else { continue };
                if self.value(c, t).value != J::String("LoadBalancer".into()) {
                    continue;
                }
                let labels = p
                    .workloads
                    .iter()
                    .find(|w| w.id == s.id)
                    .map(|w| profile_labels(w, c))
                    .unwrap_or_default();
                out.push(Service {
                    component: Some(c),
                    namespace: c.namespace.clone(),
                    name: s.id.clone(),
                    labels,
                    etp: s.external_traffic_policy.as_ref().map(|r| self.value(c, r)),
                    etp_path: s.external_traffic_policy.as_ref().map(|r| r.path.clone()),
                    judged: Judged::Profile,
                });
            }
        }
        out
    }
}
