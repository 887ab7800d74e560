//! Workloads judged through a chart profile: for a component whose chart
//! was not rendered, and for what the software creates at run time; and
//! the PodDisruptionBudget a profile says the chart makes.

use serde_json::Value as J;

use super::workloads::requests;
use super::{Ctx, Judged, Pdb, ProfilePdb, Workload, show_json};
use crate::invariants::controllers;
use crate::invariants::selector::Labels;
use crate::load::Component;
use crate::profiles::{Kind, Profile, ValueRef, version_origin};
use crate::yaml::Origin;

/// Profile pod labels with `{release}`, `{namespace}` and `{chart}` filled in.
pub(super) fn profile_labels(w: &crate::profiles::Workload, c: &Component) -> Labels {
    w.pod_labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace("{release}", &c.name)
                .replace("{namespace}", &c.namespace)
                .replace("{chart}", c.chart.name());
            (k.clone(), v)
        })
        .collect()
}

impl<'a> Ctx<'a> {
    pub(super) fn workload_of_profile(
        &self,
        c: &'a Component,
        p: &'a Profile,
        w: &'a crate::profiles::Workload,
        judged: Judged,
    ) -> Option<Workload<'a>> {
        if let Some(e) = &w.enabled
            && !self.value(c, e).truthy()
        {
            return None;
        }
        let pod_labels = profile_labels(w, c);
        let recognised = controllers::recognise(&pod_labels, &[]);
        let requests = w
            .resources
            .as_ref()
            .map_or((0, 0), |r| self::requests(&self.value(c, r).value));
        Some(Workload {
            component: Some(c),
            kind: w.kind,
            namespace: c.namespace.clone(),
            name: w.id.clone(),
            controller: w
                .adr007
                .then(|| recognised.map_or_else(|| w.title.clone(), |r| r.title.to_owned())),
            recognised: if w.adr007 { recognised } else { None },
            title: w.title.clone(),
            replicas: if w.kind == Kind::DaemonSet {
                None
            } else {
                w.replicas.as_ref().map(|r| self.value(c, r))
            },
            pod_labels,
            affinity: w.affinity.as_ref().map(|r| self.value(c, r)),
            topology_spread: w.topology_spread.as_ref().map(|r| self.value(c, r)),
            node_selector: w.node_selector.as_ref().map(|r| self.value(c, r)),
            tolerations: None,
            requests,
            builtin_spread: w.builtin_spread.clone(),
            reserved_cpu_percent: w.reserved_cpu_percent.as_ref().map(|r| self.value(c, r)),
            conditions: w.conditions.clone(),
            profile_pdb: self.profile_pdb(c, p, w),
            judged,
            origin: version_origin(c),
            profile: Some(p),
        })
    }

    /// The chart's (or software's) PodDisruptionBudget as a profile describes it.
    pub(super) fn profile_pdb(&self, c: &Component, p: &Profile, w: &crate::profiles::Workload) -> ProfilePdb {
        let Some(spec) = &w.pdb else {
            return ProfilePdb::None;
        };
        if let Some(e) = &spec.enabled {
            let v = self.value(c, e);
            if !v.truthy() {
                return ProfilePdb::Off(v);
            }
        }
        let bound = |r: &Option<ValueRef>| -> Option<(J, Origin)> {
            let v = self.value(c, r.as_ref()?);
            match &v.value {
                J::Null => None,
                J::String(s) if s.is_empty() => None,
                other => Some((other.clone(), v.origin.clone())),
            }
        };
        let mut min = bound(&spec.min_available);
        let mut max = bound(&spec.max_unavailable);
        let mut notes = Vec::new();
        if min.is_none() && max.is_none() {
            let at = version_origin(c);
            min = spec
                .rendered_when_unset
                .min_available
                .as_ref()
                .map(|n| (n.to_json(), at.clone()));
            max = spec
                .rendered_when_unset
                .max_unavailable
                .as_ref()
                .map(|n| (n.to_json(), at));
            if let Some((key, (v, _))) = min
                .as_ref()
                .map(|m| ("minAvailable", m))
                .or(max.as_ref().map(|m| ("maxUnavailable", m)))
            {
                notes.push(format!(
                    "with neither bound set the chart writes `{key}: {}` ({})",
                    show_json(v),
                    p.describe()
                ));
            }
        }
        if let Some(by) = &spec.managed_by {
            notes.push(format!(
                "{by} creates this PodDisruptionBudget at run time ({})",
                p.describe()
            ));
        }
        ProfilePdb::On(Pdb {
            name: format!("{} (chart)", w.id),
            namespace: c.namespace.clone(),
            selector: None,
            min_available: min,
            max_unavailable: max,
            origin: version_origin(c),
            from_chart: true,
            notes,
        })
    }
}
