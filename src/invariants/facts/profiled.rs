//! Workloads judged through a chart profile: for a component whose chart
//! was not rendered, and for what the software creates at run time; and
//! the PodDisruptionBudget a profile says the chart makes.

use serde_json::Value as J;

use super::workloads::requests;
use super::{Ctx, Judged, Pdb, ProfilePdb, Workload, show_json};
use crate::invariants::controllers;
use crate::invariants::selector::Labels;
use crate::load::Component;
use crate::profiles::{Binding, Kind, Nested, Profile, ValueRef, version_origin};
use crate::yaml::Origin;

/// Profile pod labels with `{release}`, `{namespace}` and `{chart}` filled
/// in. A wrapper's dependency is rendered in the wrapper's release, under
/// its own chart name.
pub(super) fn profile_labels(w: &crate::profiles::Workload, c: &Component, nested: Option<&Nested>) -> Labels {
    let chart = nested.map_or_else(|| c.chart.name(), |n| n.chart.as_str());
    w.pod_labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace("{release}", &c.name)
                .replace("{namespace}", &c.namespace)
                .replace("{chart}", chart);
            (k.clone(), v)
        })
        .collect()
}

impl<'a> Ctx<'a> {
    /// Whether a wrapper's dependency is switched on: the first of its
    /// `condition` paths that holds a boolean decides, as Helm reads it
    /// (the merged values, else the charts' defaults); none, and it is on.
    pub fn dependency_enabled(&self, c: &Component, nested: &Nested) -> bool {
        let Some(condition) = &nested.condition else {
            return true;
        };
        let info = self.render.chart_info.get(&c.name).map(AsRef::as_ref);
        for path in condition.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let value = match self.merged(c).and_then(|m| m.get_path(path)) {
                Some(n) => Some(n.to_json()),
                None => info.and_then(|i| super::chart_default(i, path)).map(|(v, _)| v.clone()),
            };
            if let Some(J::Bool(b)) = value {
                return b;
            }
        }
        true
    }

    pub(super) fn workload_of_profile(
        &self,
        c: &'a Component,
        b: &Binding<'a>,
        w: &'a crate::profiles::Workload,
        judged: Judged,
    ) -> Option<Workload<'a>> {
        let p = b.profile;
        let nested = b.nested.as_ref().map(|n| (p, n));
        let value = |r: &ValueRef| self.value_in(c, nested, r);
        if let Some(e) = &w.enabled
            && !value(e).truthy()
        {
            return None;
        }
        let pod_labels = profile_labels(w, c, b.nested.as_ref());
        let recognised = controllers::recognise(&pod_labels, &[]);
        let requests = w.resources.as_ref().map_or((0, 0), |r| self::requests(&value(r).value));
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
                w.replicas.as_ref().map(value)
            },
            pod_labels,
            affinity: w.affinity.as_ref().map(value),
            topology_spread: w.topology_spread.as_ref().map(value),
            node_selector: w.node_selector.as_ref().map(value),
            tolerations: None,
            requests,
            builtin_spread: w.builtin_spread.clone(),
            reserved_cpu_percent: w.reserved_cpu_percent.as_ref().map(value),
            conditions: w.conditions.clone(),
            profile_pdb: self.profile_pdb(c, b, w),
            judged,
            origin: version_origin(c),
            profile: Some(p),
            nested: b.nested.clone(),
        })
    }

    /// The chart's (or software's) PodDisruptionBudget as a profile describes it.
    pub(super) fn profile_pdb(&self, c: &Component, b: &Binding<'_>, w: &crate::profiles::Workload) -> ProfilePdb {
        let Some(spec) = &w.pdb else {
            return ProfilePdb::None;
        };
        let p: &Profile = b.profile;
        let nested = b.nested.as_ref().map(|n| (p, n));
        if let Some(e) = &spec.enabled {
            let v = self.value_in(c, nested, e);
            if !v.truthy() {
                return ProfilePdb::Off(v);
            }
        }
        let bound = |r: &Option<ValueRef>| -> Option<(J, Origin)> {
            let v = self.value_in(c, nested, r.as_ref()?);
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
