//! The review summary of a diff: what a reviewer asks of a change before
//! reading its object diffs. For each environment: the container images
//! added, changed and removed ([`images`]); the changes that need care,
//! each under a lint code of its own ([`lints`]: a field the API server
//! refuses to update, RBAC widened, a volume shrunk, pruning or
//! suspension turned, a CRD version dropped while objects use it, a
//! replica or PodDisruptionBudget change that breaks high availability);
//! and each chart bump as one line with what it does to the rendered
//! objects ([`releases`], which also takes the chart's relabelling out of
//! the object diffs). [`fold`] then makes one entry of the same change in
//! several environments.
//!
//! The summary is gathered while the two compiles are compared, object by
//! object, from the objects that differ: an object the same on both sides
//! says nothing new.

pub mod fold;
pub mod images;
pub mod immutable;
pub mod lints;
pub mod releases;
pub mod show;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as J;

use crate::diff::view::{Charts, View};
use crate::render::hydrate::Delivery;
use crate::render::{EnvRender, Object, Source};
use crate::yaml::Origin;

pub use images::ImageChange;
pub use releases::{Audit, Release};

/// A change that needs care, under its lint code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Danger {
    pub code: &'static str,
    pub env: String,
    pub component: Option<String>,
    /// `Kind namespace/name`.
    pub object: String,
    pub message: String,
    /// What to do, one step a line (a `patches:` entry is one step).
    pub help: Vec<String>,
    /// The input that produced the object.
    pub origin: Origin,
}

/// The review summary of one or more environments.
#[derive(Clone, Debug, Default)]
pub struct Review {
    pub images: Vec<ImageChange>,
    pub dangers: Vec<Danger>,
    /// Each release whose chart version changed, or whose objects changed
    /// only in what a chart writes for its version and checksums.
    pub releases: Vec<Release>,
}

impl Review {
    pub fn is_empty(&self) -> bool {
        self.images.is_empty() && self.dangers.is_empty() && self.releases.is_empty()
    }

    /// Adds the review of more environments, keeping each list sorted.
    pub fn absorb(&mut self, more: Review) {
        self.images.extend(more.images);
        self.images.sort();
        self.dangers.extend(more.dangers);
        self.dangers
            .sort_by(|a, b| (a.code, &a.env, &a.object, &a.message).cmp(&(b.code, &b.env, &b.object, &b.message)));
        self.releases.extend(more.releases);
        self.releases
            .sort_by(|a, b| (&a.component, &a.env).cmp(&(&b.component, &b.env)));
    }

    /// Puts each chart bump's audit under its release's line (see
    /// [`crate::diff::Diff::loose_bumps`] for a bump no release here
    /// stands for).
    pub fn audit(&mut self, bumps: &[crate::diff::bump::Bump]) {
        for b in bumps {
            if let Some(r) = self.release_mut(&b.env, &b.component) {
                r.audit = Some(Audit {
                    origin: b.origin.clone(),
                    old_version: b.old_version.clone(),
                    outcome: b.outcome.clone(),
                });
            }
        }
    }

    /// Whether `bump`'s audit is shown under a release's line.
    pub fn audits(&self, bump: &crate::diff::bump::Bump) -> bool {
        self.releases
            .iter()
            .any(|r| r.env == bump.env && r.component == bump.component && r.audit.is_some())
    }

    /// The release of `component` in `env`, for a signal that adds a line
    /// to a chart bump (an audit of the user's overrides against the new
    /// chart, say): its [`Release::notes`] are shown under the bump.
    pub fn release_mut(&mut self, env: &str, component: &str) -> Option<&mut Release> {
        self.releases
            .iter_mut()
            .find(|r| r.env == env && r.component == component)
    }
}

/// The identity of an object within an environment, whatever tree
/// (target) it is written to: a hydrated chart's objects are written to
/// the Flux and the Argo CD tree alike, and are one object to review.
pub(crate) type Identity = (String, String, String, Option<String>, String);

/// What the review reads of one environment on both sides.
pub struct EnvSides<'a> {
    pub env: &'a str,
    pub base: Option<&'a EnvRender>,
    pub head: Option<&'a EnvRender>,
    /// The platform of the head side (the base's when the head lacks the
    /// environment).
    pub platform: &'a crate::load::Platform,
    /// The platform of the base side (the head's without a base).
    pub base_platform: &'a crate::load::Platform,
    /// The base's charts where its renders do not say them.
    pub base_charts: Option<&'a Charts>,
    /// The head's CRDs, by group and kind, once asked for.
    crds: std::sync::OnceLock<BTreeMap<(String, String), &'a J>>,
}

impl<'a> EnvSides<'a> {
    /// How a component reaches the cluster here (the head's word first).
    pub fn delivery(&self, component: &str) -> Delivery {
        self.head
            .or(self.base)
            .map_or(Delivery::Release, |r| r.plan.of(component))
    }

    /// The engines this environment is written for.
    pub fn targets(&self) -> Vec<crate::load::Target> {
        self.platform
            .environments
            .get(self.env)
            .map(|e| self.platform.targets(e))
            .unwrap_or_default()
    }

    /// Whether the environment holds ADR 007's topology.
    pub fn ha(&self) -> bool {
        self.platform
            .environments
            .get(self.env)
            .is_some_and(|e| e.topology == crate::load::Topology::Ha)
    }

    /// The `openAPIV3Schema` of the version `api_version` of the CRD of
    /// `kind`, when the head renders that CRD.
    pub fn crd_schema(&self, api_version: &str, kind: &str) -> Option<&'a J> {
        let (g, version) = api_version.rsplit_once('/')?;
        let crds = self.crds.get_or_init(|| {
            Self::objects(self.head)
                .into_iter()
                .filter(|o| o.kind() == "CustomResourceDefinition")
                .filter_map(|o| {
                    let spec = o.value.get("spec")?;
                    let g = spec.get("group")?.as_str()?.to_owned();
                    let k = spec.get("names")?.get("kind")?.as_str()?.to_owned();
                    Some(((g, k), &o.value))
                })
                .collect()
        });
        let crd = crds.get(&(g.to_owned(), kind.to_owned()))?;
        crd.get("spec")?
            .get("versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(J::as_str) == Some(version))?
            .get("schema")?
            .get("openAPIV3Schema")
    }

    /// The head's objects of `kind` written in `api_version`, as
    /// `Kind namespace/name`.
    pub fn users(&self, api_version: &str, kind: &str) -> Vec<String> {
        Self::objects(self.head)
            .into_iter()
            .filter(|o| o.api_version() == api_version && o.kind() == kind)
            .map(|o| match o.namespace() {
                Some(ns) => format!("{} {ns}/{}", o.kind(), o.name()),
                None => format!("{} {}", o.kind(), o.name()),
            })
            .collect()
    }

    /// The head's Deployments and StatefulSets: `Kind namespace/name`,
    /// namespace, object.
    pub fn workloads(&self) -> Vec<(String, Option<&'a str>, &'a J)> {
        Self::objects(self.head)
            .into_iter()
            .filter(|o| matches!(o.kind(), "Deployment" | "StatefulSet"))
            .map(|o| {
                let id = match o.namespace() {
                    Some(ns) => format!("{} {ns}/{}", o.kind(), o.name()),
                    None => format!("{} {}", o.kind(), o.name()),
                };
                (id, o.namespace(), &o.value)
            })
            .collect()
    }

    /// Every object of one side, once: what charts render (a hydrated
    /// chart's objects are in the targets too), the trees' objects of the
    /// first target, and the substrate's.
    pub fn objects(side: Option<&'a EnvRender>) -> Vec<&'a Object> {
        let Some(r) = side else { return Vec::new() };
        let mut seen: BTreeSet<(&str, &str, Option<&str>, &str)> = BTreeSet::new();
        let mut out = Vec::new();
        let all = r
            .charts
            .values()
            .flatten()
            .chain(r.targets.values().flatten())
            .chain(&r.substrate);
        for o in all {
            if seen.insert((o.api_version(), o.kind(), o.namespace(), o.name())) {
                out.push(o);
            }
        }
        out
    }
}

/// One object that differs between the sides, as the lints see it.
pub struct Pair<'a> {
    pub env: &'a str,
    pub component: Option<&'a str>,
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub base: Option<&'a J>,
    pub head: Option<&'a J>,
    /// The object as the head renders it (the base's when removed).
    pub object: &'a Object,
}

impl Pair<'_> {
    /// `Kind namespace/name`.
    pub fn display(&self) -> String {
        match self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// Whether helm applies the object in the cluster (a chart's object in
    /// a Helm release) rather than the engine applying it as written.
    pub fn by_helm(&self, sides: &EnvSides<'_>) -> bool {
        matches!(self.object.source, Source::Chart { .. })
            && self.component.is_some_and(|c| sides.delivery(c) == Delivery::Release)
    }
}

/// Gathers the review of the environments two compiles share, while the
/// diff compares their objects.
pub(crate) struct Gather<'a> {
    envs: BTreeMap<String, EnvSides<'a>>,
    seen: BTreeSet<Identity>,
    images: images::Images,
    dangers: Vec<Danger>,
    releases: releases::Releases,
}

impl<'a> Gather<'a> {
    pub fn new(base: Option<&'a View<'a>>, head: &'a View<'a>) -> Gather<'a> {
        let mut envs: BTreeMap<String, EnvSides<'a>> = BTreeMap::new();
        let base_platform = base.map_or(head.platform, |b| b.platform);
        let base_charts = base.and_then(|b| b.charts);
        for r in head.renders {
            envs.insert(
                r.env.clone(),
                EnvSides {
                    env: &r.env,
                    base: None,
                    head: Some(r),
                    platform: head.platform,
                    base_platform,
                    base_charts,
                    crds: std::sync::OnceLock::new(),
                },
            );
        }
        for r in base.iter().flat_map(|b| b.renders) {
            envs.entry(r.env.clone())
                .or_insert(EnvSides {
                    env: &r.env,
                    base: None,
                    head: None,
                    platform: base_platform,
                    base_platform,
                    base_charts,
                    crds: std::sync::OnceLock::new(),
                })
                .base = Some(r);
        }
        let releases = releases::Releases::new(&envs);
        Gather {
            envs,
            seen: BTreeSet::new(),
            images: images::Images::default(),
            dangers: Vec::new(),
            releases,
        }
    }

    /// Whether the chart labels of `component`'s objects in `env` are to be
    /// folded out of their diffs: its chart version changed.
    pub fn folds_chart_labels(&self, env: &str, component: Option<&str>) -> bool {
        component.is_some_and(|c| self.releases.bumped(env, c))
    }

    /// One object that differs; `noise_only` when it differs only in its
    /// chart's version labels and checksum annotations.
    pub fn object(&mut self, pair: &Pair<'_>, noise_only: bool) {
        let id: Identity = (
            pair.env.to_owned(),
            pair.api_version.to_owned(),
            pair.kind.to_owned(),
            pair.namespace.map(str::to_owned),
            pair.name.to_owned(),
        );
        // Strata's own objects (a HelmRelease, an Application) are each
        // engine's own; the rest is one object whatever the tree.
        let own = matches!(pair.object.source, Source::Generated);
        if !own && !self.seen.insert(id) {
            return;
        }
        let Some(sides) = self.envs.get(pair.env) else { return };
        self.releases.object(pair, noise_only);
        if let (Some(b), Some(h)) = (pair.base, pair.head) {
            self.releases.restart(pair, b, h);
        }
        // A change folded out of the object's diff may still be one the
        // API server refuses (a chart's label on a StatefulSet's volume
        // claim templates): the lints read the objects as they are.
        self.images.object(pair);
        lints::check(sides, pair, &mut self.dangers);
    }

    pub fn finish(self) -> Review {
        let mut review = Review {
            images: self.images.finish(),
            dangers: self.dangers,
            releases: self.releases.finish(),
        };
        review.absorb(Review::default());
        review.dangers.dedup();
        review
    }
}
