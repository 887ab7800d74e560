//! The Services of type LoadBalancer: rendered or written in a manifest,
//! and, for components whose chart was not rendered, the profiles' ones.

use serde_json::Value as J;

use super::profiled::profile_labels;
use super::workloads::labels_of;
use super::{Ctx, Judged, Service};
use crate::load::{Component, Platform};
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
            // describes this one (it selects the profile workload's pods):
            // relative to the (sub)chart that renders it, and as the
            // component's values hold it.
            let selector = labels_of(&o.value["spec"]["selector"]);
            let hint = match (&o.source, c) {
                (Source::Chart { template }, Some(c)) => self.template_binding(c, template).and_then(|b| {
                    let p = b.profile;
                    p.services.iter().find_map(|s| {
                        let w = p.workloads.iter().find(|w| w.id == s.id)?;
                        let labels = profile_labels(w, c, b.nested.as_ref());
                        let r = s.external_traffic_policy.as_ref()?;
                        (!labels.is_empty() && labels.iter().all(|(k, v)| selector.get(k) == Some(v)))
                            .then(|| (r.path.clone(), b.path(&r.path)))
                    })
                }),
                _ => None,
            };
            let etp = o.value["spec"].get("externalTrafficPolicy").map(|v| {
                self.field(
                    c,
                    o,
                    "spec.externalTrafficPolicy",
                    v.clone(),
                    hint.as_ref().map(|(h, _)| h.clone()),
                )
            });
            out.push(Service {
                component: c,
                namespace: o.namespace().unwrap_or("").to_owned(),
                name: o.name().to_owned(),
                labels: labels_of(&o.value["metadata"]["labels"]),
                etp,
                etp_path: hint.map(|(_, full)| full),
                judged: match &o.source {
                    Source::Chart { template } => Judged::Chart {
                        template: template.clone(),
                    },
                    _ => Judged::Manifest,
                },
                gateway: None,
            });
        }
        // Components whose chart was not rendered: the profiles' Services.
        for c in platform
            .components_in(self.env)
            .filter(|c| !self.render.inflated(&c.name))
        {
            out.extend(self.profiled_services(c));
        }
        out
    }

    /// The LoadBalancer Services the profiles of a component's chart say
    /// it renders, with their values.
    fn profiled_services(&self, c: &'a Component) -> Vec<Service<'a>> {
        let mut out = Vec::new();
        for b in self.bindings(c) {
            if b.nested.as_ref().is_some_and(|n| !self.dependency_enabled(c, n)) {
                continue;
            }
            let p = b.profile;
            let nested = b.nested.as_ref().map(|n| (p, n));
            for s in &p.services {
                if let Some(e) = &s.enabled
                    && !self.value_in(c, nested, e).truthy()
                {
                    continue;
                }
                let Some(t) = &s.kind else { continue };
                if self.value_in(c, nested, t).value != J::String("LoadBalancer".into()) {
                    continue;
                }
                let labels = p
                    .workloads
                    .iter()
                    .find(|w| w.id == s.id)
                    .map(|w| profile_labels(w, c, b.nested.as_ref()))
                    .unwrap_or_default();
                out.push(Service {
                    component: Some(c),
                    namespace: c.namespace.clone(),
                    name: s.id.clone(),
                    labels,
                    etp: s.external_traffic_policy.as_ref().map(|r| self.value_in(c, nested, r)),
                    etp_path: s.external_traffic_policy.as_ref().map(|r| b.path(&r.path)),
                    judged: Judged::Profile,
                    gateway: None,
                });
            }
        }
        out
    }
}
