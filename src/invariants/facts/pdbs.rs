//! The PodDisruptionBudget objects of an environment, and which of them
//! (and of the profiles' budgets) select a workload's pods.

use super::{Ctx, Pdb, ProfilePdb, Workload};
use crate::invariants::selector::Selector;
use crate::profiles::version_origin;
use crate::render::Source;

impl Ctx<'_> {
    /// Every PodDisruptionBudget object of the environment: from any
    /// component's chart or manifests.
    pub(super) fn collect_pdbs(&self) -> Vec<Pdb> {
        let mut out = Vec::new();
        for o in self.objects_of_kind("PodDisruptionBudget") {
            let sel = &o.value["spec"]["selector"];
            // policy/v1: a null selector selects no pods; an empty one all of the namespace.
            let selector = if sel.is_null() {
                None
            } else {
                Selector::from_label_selector(sel).ok()
            };
            let c = o.component.as_ref().and_then(|n| self.platform.components.get(n));
            let bound = |key: &str| {
                let v = &o.value["spec"][key];
                (!v.is_null()).then(|| {
                    let val = self.field(c, o, &format!("spec.{key}"), v.clone(), None);
                    (v.clone(), val.origin)
                })
            };
            let mut notes = Vec::new();
            if let Source::Chart { template } = &o.source {
                notes.push(format!("PodDisruptionBudget {} is rendered by {template}", o.name()));
            }
            out.push(Pdb {
                name: o.name().to_owned(),
                namespace: o.namespace().unwrap_or("").to_owned(),
                selector,
                min_available: bound("minAvailable"),
                max_unavailable: bound("maxUnavailable"),
                origin: match (&o.source, c) {
                    (Source::Chart { .. }, Some(c)) => version_origin(c),
                    _ => o.origin.clone(),
                },
                from_chart: matches!(o.source, Source::Chart { .. }),
                notes,
            });
        }
        out
    }

    /// The PodDisruptionBudgets that select a workload's pods.
    pub fn pdbs_of(&self, w: &Workload<'_>) -> Vec<Pdb> {
        let mut out = Vec::new();
        if let ProfilePdb::On(p) = &w.profile_pdb {
            out.push(p.clone());
        }
        for p in &self.pdbs {
            if p.namespace == w.namespace && p.selector.as_ref().is_some_and(|s| s.matches(&w.pod_labels)) {
                out.push(p.clone());
            }
        }
        out
    }
}
