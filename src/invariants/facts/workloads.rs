//! The workloads of rendered objects: Deployments, StatefulSets and
//! DaemonSets from the charts helm rendered and from component manifests,
//! each matched to the chart profile that describes it, if any.

use serde_json::Value as J;

use super::profiled::profile_labels;
use super::{Ctx, Judged, ProfilePdb, Val, Workload};
use crate::invariants::controllers::{self, Controller};
use crate::invariants::quantity;
use crate::invariants::selector::Labels;
use crate::invariants::trace;
use crate::load::{Component, Platform};
use crate::profiles::{Binding, Kind, Nested, Profile, Profiles, ValueRef, version_origin};
use crate::render::{EnvRender, Object, Source};

/// The requests of a `resources` value: (millicores, MiB).
pub fn requests(v: &J) -> (u64, u64) {
    let r = &v["requests"];
    (
        quantity::cpu_milli(&r["cpu"]).unwrap_or(0),
        quantity::memory_mib(&r["memory"]).unwrap_or(0),
    )
}

/// The requests of one pod of a pod spec: its containers' sum, or its
/// largest init container's when that is more (as the scheduler counts).
pub fn pod_requests(spec: &J) -> (u64, u64) {
    let sum = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| requests(&c["resources"]))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let init = spec["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| requests(&c["resources"]))
        .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    (sum.0.max(init.0), sum.1.max(init.1))
}

pub(super) fn labels_of(v: &J) -> Labels {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn kind_of(kind: &str) -> Option<Kind> {
    match kind {
        "Deployment" => Some(Kind::Deployment),
        "StatefulSet" => Some(Kind::StatefulSet),
        "DaemonSet" => Some(Kind::DaemonSet),
        _ => None,
    }
}

/// A Helm hook runs once around an install or upgrade; it is not part of
/// what keeps running.
fn is_hook(o: &Object) -> bool {
    o.value["metadata"]["annotations"]["helm.sh/hook"].is_string()
}

impl<'a> Ctx<'a> {
    /// The profile that describes what a chart template renders: the
    /// component's own chart's, or, for a template of a bundled subchart,
    /// that subchart's, with its values under the subchart's keys.
    pub(super) fn template_binding(&self, c: &'a Component, template: &str) -> Option<Binding<'a>> {
        let prefix = trace::subchart_prefix(template);
        if prefix.is_empty() {
            return self.bindings(c).into_iter().find(|b| b.nested.is_none());
        }
        let profiles: &'a Profiles = self.profiles;
        let info = self.render.chart_info.get(&c.name).map(AsRef::as_ref);
        let sub = trace::chart_of(info, &prefix)?;
        Some(Binding {
            profile: profiles.by_chart.get(&sub.name)?,
            nested: Some(Nested {
                key: prefix.join("."),
                chart: sub.name.clone(),
                version: sub.version.clone(),
                wrapper: info.map_or_else(String::new, |i| i.name.clone()),
                condition: None,
            }),
        })
    }

    /// The profile workload that describes a rendered workload, if any:
    /// same kind, and the profile's pod labels among the pods' labels; else
    /// the one workload of the profile that is the same ADR 007 controller.
    fn profile_match(
        &self,
        c: &'a Component,
        o: &Object,
        kind: Kind,
        labels: &Labels,
        recognised: Option<&'static Controller>,
    ) -> Option<(Binding<'a>, &'a crate::profiles::Workload)> {
        let template = match &o.source {
            Source::Chart { template } => template.as_str(),
            _ => return None,
        };
        let b = self.template_binding(c, template)?;
        let profile: &'a Profile = b.profile;
        let nested = b.nested.as_ref();
        let candidates = profile.workloads.iter().filter(|w| w.kind == kind && !w.runtime);
        if let Some(w) = candidates.clone().find(|w| {
            profile_labels(w, c, nested)
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        }) {
            return Some((b, w));
        }
        // A pod label the values override (CoreDNS's k8s-app through
        // `k8sAppLabelOverride`) differs from the profile's default one.
        let id = recognised?.id;
        let mut same = candidates.filter(|w| {
            w.adr007 && controllers::recognise(&profile_labels(w, c, nested), &[]).is_some_and(|r| r.id == id)
        });
        let w = same.next()?;
        same.next().is_none().then_some((b.clone(), w))
    }

    /// What the component's chart profiles say runs: through the profiles
    /// for a chart that was not rendered, only what the software creates at
    /// run time for one that was; a wrapper's dependency only when its
    /// condition switches it on.
    fn profiled_workloads(&self, c: &'a Component, rendered: bool) -> Vec<Workload<'a>> {
        let mut out = Vec::new();
        for b in self.bindings(c) {
            if b.nested.as_ref().is_some_and(|n| !self.dependency_enabled(c, n)) {
                continue;
            }
            let p: &'a Profile = b.profile;
            for w in p.workloads.iter().filter(|w| w.runtime || !rendered) {
                let judged = if w.runtime { Judged::Runtime } else { Judged::Profile };
                out.extend(self.workload_of_profile(c, &b, w, judged));
            }
        }
        out
    }

    pub(super) fn collect_workloads(&self) -> Vec<Workload<'a>> {
        let mut out = Vec::new();
        let platform: &'a Platform = self.platform;
        let render: &'a EnvRender = self.render;
        for c in platform.components_in(self.env) {
            let objects = render.charts.get(&c.name);
            for o in objects.into_iter().flatten().filter(|o| !is_hook(o)) {
                out.extend(self.workload_of_object(Some(c), o));
            }
            // What the software creates at run time is judged through
            // the profile even when the chart is rendered.
            out.extend(self.profiled_workloads(c, objects.is_some()));
        }
        for o in render.workload_objects().filter(|o| o.source == Source::Manifest) {
            let c = o.component.as_ref().and_then(|n| platform.components.get(n));
            if let Some(w) = self.workload_of_object(c, o) {
                out.push(w);
            }
        }
        // A component with `ha: true` has every Deployment and StatefulSet
        // judged as ADR 007's controllers are.
        for w in &mut out {
            let ha = w.component.and_then(|c| self.env.ha(c)).is_some_and(|(on, _)| *on);
            if ha && w.controller.is_none() && w.kind != Kind::DaemonSet {
                w.controller = Some(w.title.clone());
            }
        }
        out
    }

    fn workload_of_object(&self, c: Option<&'a Component>, o: &'a Object) -> Option<Workload<'a>> {
        let kind = kind_of(o.kind())?;
        let spec = &o.value["spec"]["template"]["spec"];
        let pod_labels = labels_of(&o.value["spec"]["template"]["metadata"]["labels"]);
        let images: Vec<&str> = spec["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|ct| ct["image"].as_str())
            .collect();
        let recognised = controllers::recognise(&pod_labels, &images);
        let matched = c.and_then(|c| self.profile_match(c, o, kind, &pod_labels, recognised));
        let hint = |f: fn(&crate::profiles::Workload) -> Option<&ValueRef>| -> Option<String> {
            matched.as_ref().and_then(|(_, w)| f(w).map(|r| r.path.clone()))
        };
        let pod = "spec.template.spec";
        let replicas = (kind != Kind::DaemonSet).then(|| match o.value["spec"].get("replicas") {
            Some(v) => self.field(c, o, "spec.replicas", v.clone(), hint(|w| w.replicas.as_ref())),
            // Kubernetes' default.
            None => {
                let mut v = self.field(c, o, "spec.replicas", J::from(1), hint(|w| w.replicas.as_ref()));
                if !v.set {
                    v.note = Some(format!(
                        "the chart renders no `spec.replicas`, so Kubernetes runs 1 ({})",
                        match &o.source {
                            Source::Chart { template } => template.as_str(),
                            _ => "",
                        }
                    ));
                }
                v
            }
        });
        let opt = |field: &str, h: Option<String>| -> Option<Val> {
            let v = spec.get(field.rsplit('.').next().unwrap_or(field))?;
            Some(self.field(c, o, &format!("{pod}.{field}"), v.clone(), h))
        };
        let affinity = opt("affinity", hint(|w| w.affinity.as_ref()));
        let topology_spread = opt("topologySpreadConstraints", hint(|w| w.topology_spread.as_ref()));
        let node_selector = opt("nodeSelector", hint(|w| w.node_selector.as_ref()));
        let tolerations = opt("tolerations", None);
        let (title, controller) = match (recognised, matched.as_ref().map(|(_, w)| *w)) {
            // The profile's title tells apart workloads that are one ADR 007
            // controller (External Secrets' controller, webhook and
            // cert-controller run the same image), as judging through the
            // profile does.
            (Some(r), Some(w)) => (w.title.clone(), Some(r.title.to_owned())),
            (Some(r), None) => (r.title.to_owned(), Some(r.title.to_owned())),
            (None, Some(w)) if w.adr007 => (w.title.clone(), Some(w.title.clone())),
            _ => (format!("{} {}", o.kind(), o.name()), None),
        };
        let judged = match &o.source {
            Source::Chart { template } => Judged::Chart {
                template: template.clone(),
            },
            _ => Judged::Manifest,
        };
        let origin = match &judged {
            Judged::Chart { .. } => c.map_or_else(|| o.origin.clone(), version_origin),
            _ => o.origin.clone(),
        };
        Some(Workload {
            component: c,
            kind,
            namespace: o.namespace().unwrap_or("").to_owned(),
            name: o.name().to_owned(),
            controller,
            recognised,
            title,
            replicas,
            pod_labels,
            affinity,
            topology_spread,
            node_selector,
            tolerations,
            requests: pod_requests(spec),
            builtin_spread: None,
            reserved_cpu_percent: matched.as_ref().and_then(|(b, w)| {
                let r = w.reserved_cpu_percent.as_ref()?;
                let nested = b.nested.as_ref().map(|n| (b.profile, n));
                Some(self.value_in(c?, nested, r))
            }),
            conditions: matched.as_ref().map(|(_, w)| w.conditions.clone()).unwrap_or_default(),
            profile_pdb: self.switched_off_pdb(c, matched.as_ref()),
            judged,
            origin,
            profile: matched.as_ref().map(|(b, _)| b.profile),
            nested: matched.and_then(|(b, _)| b.nested),
        })
    }

    /// The chart's own PodDisruptionBudget of a rendered workload when its
    /// switch is off, so that HA002 points at the switch as it does through
    /// the profile. The budgets the chart does render are objects: an `On`
    /// here would count them twice.
    fn switched_off_pdb(
        &self,
        c: Option<&'a Component>,
        matched: Option<&(Binding<'a>, &'a crate::profiles::Workload)>,
    ) -> ProfilePdb {
        let (Some(c), Some((b, w))) = (c, matched) else {
            return ProfilePdb::None;
        };
        match self.profile_pdb(c, b, w) {
            off @ ProfilePdb::Off(_) => off,
            _ => ProfilePdb::None,
        }
    }
}
