//! What an environment's engines are given, component by component, once
//! the charts are rendered: how each component is delivered, which have a
//! folder of their own, which must never be cascade-deleted, and in what
//! order they are applied.

use std::collections::{BTreeMap, BTreeSet};

use super::hydrate::{self, Delivery};
use super::{EnvRender, Source};
use crate::load::{Component, Environment, Platform};

/// The delivery of an environment's components.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub delivery: BTreeMap<String, Delivery>,
    /// Components with objects in their own folder: a Plain component's
    /// manifests, a Hydrated one's chart objects and manifests.
    pub filled: BTreeSet<String>,
    /// Release components with manifests, applied by `<c>-manifests` after
    /// the release.
    pub with_manifests: BTreeSet<String>,
    /// Components that are never cascade-deleted (see [`hydrate::kept`]).
    pub kept: BTreeSet<String>,
    /// Whether `crds/` holds objects.
    pub crds: bool,
    /// Hydrated components with Helm pre- and post-hooks, which a Flux tree
    /// applies by Kustomizations of their own (see [`hydrate::hook_phase`]).
    pub pre_hooks: BTreeSet<String>,
    pub post_hooks: BTreeSet<String>,
}

impl Plan {
    pub fn new(platform: &Platform, env: &Environment, r: &EnvRender) -> Plan {
        let delivery = hydrate::deliveries(platform, env);
        let mut filled = BTreeSet::new();
        let mut with_manifests = BTreeSet::new();
        for o in r.shared.iter().filter(|o| o.source == Source::Manifest) {
            let Some(c) = &o.component else { continue };
            match delivery.get(c) {
                Some(Delivery::Release) => with_manifests.insert(c.clone()),
                Some(_) => filled.insert(c.clone()),
                None => false,
            };
        }
        let mut crds = false;
        let (mut pre_hooks, mut post_hooks) = (BTreeSet::new(), BTreeSet::new());
        for (c, objects) in &r.charts {
            if delivery.get(c) != Some(&Delivery::Hydrated) {
                continue;
            }
            for o in objects {
                match hydrate::hook_phase(o) {
                    Some(hydrate::HookPhase::Pre) => pre_hooks.insert(c.clone()),
                    Some(hydrate::HookPhase::Post) => post_hooks.insert(c.clone()),
                    _ => false,
                };
                if o.kind() == "CustomResourceDefinition" {
                    crds = true;
                } else {
                    filled.insert(c.clone());
                }
            }
        }
        Plan {
            delivery,
            filled,
            with_manifests,
            kept: hydrate::kept(platform, env, r),
            crds,
            pre_hooks,
            post_hooks,
        }
    }

    /// How a component is delivered.
    pub fn of(&self, c: &str) -> Delivery {
        self.delivery.get(c).copied().unwrap_or(Delivery::Release)
    }

    /// Whether a component gets its own Kustomization or Application: a
    /// release always does; a folder only when it holds objects.
    pub fn has_app(&self, c: &str) -> bool {
        self.of(c) == Delivery::Release || self.filled.contains(c)
    }

    /// What a component's Kustomization waits for: each component it
    /// requires (and that one's manifests), the CRDs of a hydrated
    /// environment, and the namespaces.
    pub fn depends_on(&self, c: &Component, namespaces: bool) -> Vec<String> {
        let mut deps = Vec::new();
        if namespaces {
            deps.push(super::NAMESPACES_APP.to_owned());
        }
        if self.crds {
            deps.push(hydrate::CRDS_APP.to_owned());
        }
        for (r, _) in &c.requires {
            if self.has_app(r) {
                deps.push(r.clone());
            }
            if self.with_manifests.contains(r) {
                deps.push(format!("{r}-manifests"));
            }
            // Helm counts a release installed once its post-hooks ran.
            if self.post_hooks.contains(r) {
                deps.push(format!("{r}-{}", hydrate::POST_HOOKS));
            }
        }
        deps
    }

    /// Whether deleting the component's Kustomization or Application must
    /// leave its objects: a core component, one that ships CRDs, the
    /// GitOps engine.
    pub fn orphans(&self, c: &Component) -> bool {
        c.tier == crate::load::Tier::Core || self.kept.contains(&c.name)
    }
}

/// Argo CD sync waves: each level of the `requires` graph takes two, its
/// releases and folders first, then the releases' manifests; the CRDs of
/// a hydrated environment go before everything.
pub fn wave(depth: u32) -> i64 {
    2 * i64::from(depth)
}

/// The wave of a release's manifests, one after the release.
pub fn manifests_wave(depth: u32) -> i64 {
    wave(depth) + 1
}

/// The wave of `strata-crds`.
pub const CRDS_WAVE: i64 = -1;
