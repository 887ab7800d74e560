//! Switching a component between a Helm release and hydrated objects
//! without the engine uninstalling it. The tree on disk (what strata's
//! record says it wrote under the output folder, see [`Tree`]) shows how a
//! component was delivered; where the new render delivers it the other
//! way, the engine would delete what the old way applied while the new way
//! takes it over:
//!
//! - Flux, release to hydrated: the component's Kustomization prunes the
//!   HelmRelease it no longer finds, and helm-controller's finalizer
//!   uninstalls the release — every object the Kustomization now applies.
//!   helm-controller uninstalls nothing for a HelmRelease deleted while
//!   suspended (fluxcd/helm-controller `internal/controller/helmrelease_controller.go`,
//!   `reconcileDelete`), and kustomize-controller prunes nothing whose live
//!   object says `kustomize.toolkit.fluxcd.io/prune: disabled`
//!   (`internal/controller/kustomization_controller.go` `deleteObjects`,
//!   fluxcd/pkg `ssa/manager_delete.go`, which reads the live object). So
//!   the HelmRelease stays in the tree with both, and its release secrets
//!   stay in the namespace for a switch back. The release's manifests had
//!   a Kustomization of their own (`<c>-manifests`); it stays, suspended
//!   and with `deletionPolicy: Orphan`, so that deleting it leaves them.
//! - Flux, hydrated to release: the Kustomization would prune every object
//!   it applied before helm-controller installs the release over them. They
//!   stay in the tree with `prune: disabled`, so that once they leave it
//!   they stay in the cluster, where helm-controller has taken them over
//!   (it takes ownership of existing objects since v1.2.0, Flux 2.5:
//!   `internal/action/install.go`, `TakeOwnership`). Those that are now
//!   the component's manifests are applied by `<c>-manifests`, so their
//!   copy is `ssa: IfNotPresent` (never patched back; kustomize-controller
//!   deletes only objects whose owner labels name it).
//! - Argo CD, release to hydrated: the `<c>-manifests` Application leaves
//!   the tree and its resources finalizer would delete the manifests the
//!   component's Application now applies. It stays, without the finalizer
//!   and without automated sync, so that its deletion later cascades into
//!   nothing.
//! - Argo CD, hydrated to release: the component's Application, now a Helm
//!   source, would prune the manifests before `<c>-manifests` (a wave
//!   later) takes them; it gets `automated.prune: false` meanwhile.
//!
//! Every object of a hand-over carries [`ANNOTATION`] with a digest of the
//! component's objects in the new tree. A render keeps the hand-over as
//! long as that digest holds — rendering again changes nothing, so `render
//! --check` stays clean — and leaves it out once the component changes
//! again: by then the engine has had the hand-over to apply, and what it
//! left in the cluster is harmless (a suspended HelmRelease, objects
//! helm-controller owns).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as J, json};

use super::hydrate::Delivery;
use super::object::sanitize;
use super::{EnvRender, Object, Source};
use crate::diag::{Diagnostic, Severity, codes};
use crate::load::{Component, Environment, Platform, SyncMode, Target};

/// The annotation of every object a hand-over keeps: the digest of the
/// component's objects it was made for.
pub const ANNOTATION: &str = "strata.dev/hand-over";

const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
const SSA: &str = "kustomize.toolkit.fluxcd.io/ssa";

/// The tree strata wrote before, as its record lists it. Paths are
/// relative to the output folder (`<env>/<target>/...`).
pub trait Tree: Sync + std::fmt::Debug {
    /// Whether the record lists the file.
    fn has(&self, path: &str) -> bool;
    /// The recorded files directly in a folder (their names).
    fn files_in(&self, dir: &str) -> Vec<String>;
    /// Whether the record lists any file under a folder.
    fn has_under(&self, dir: &str) -> bool;
    /// The objects of a recorded file, if it is as strata wrote it.
    fn objects(&self, path: &str) -> Option<Vec<J>>;
    /// Whether a recorded file's text contains `needle` at all: a cheap
    /// look before [`Tree::objects`] reads and checks it.
    fn mentions(&self, path: &str, needle: &str) -> bool;
}

/// Where a hand-over is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// This render switches the component and writes the hand-over.
    Begins,
    /// The tree holds the hand-over, and the component has not changed.
    Continues,
    /// The component changed since: the hand-over leaves the tree.
    Ends,
}

/// One component's hand-over in one engine's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandOver {
    pub target: Target,
    pub component: String,
    /// How the component is delivered now.
    pub to: Delivery,
    pub stage: Stage,
    /// What the hand-over keeps (or, ending, leaves), as `Kind/ns/name`.
    pub objects: Vec<String>,
}

impl HandOver {
    /// One line on what the hand-over does, for a diff.
    pub fn explain(&self) -> String {
        let from = match self.to {
            Delivery::Hydrated => "a Helm release to hydrated objects",
            _ => "hydrated objects to a Helm release",
        };
        let kept = self.objects.join(", ");
        match self.stage {
            Stage::Begins | Stage::Continues => format!(
                "{} switches from {from}: the {} tree keeps {kept} so that nothing is uninstalled, until {} changes again",
                self.component,
                self.target.name(),
                self.component
            ),
            Stage::Ends => format!(
                "the switch of {} from {from} is over: {kept} leave the tree and stay in the cluster unpruned",
                self.component
            ),
        }
    }
}

/// Adds the hand-overs the tree on disk calls for to an environment's
/// objects, and says what each does.
///
/// Only the components `only` names are looked at (all when `None`): the
/// others' engine objects were not generated (a diff's reach, see
/// [`super::EnvOptions::only`]), so the tree before would seem to hold
/// nothing of theirs that the new one writes, and their files would be
/// read for nothing.
pub fn apply(
    platform: &Platform,
    env: &Environment,
    r: &mut EnvRender,
    tree: &dyn Tree,
    only: Option<&BTreeSet<String>>,
) -> Vec<Diagnostic> {
    let mut notes = Vec::new();
    let mut found = Vec::new();
    for (target, objects) in r.targets.iter_mut() {
        let components: BTreeSet<String> = objects
            .iter()
            .filter_map(|o| o.component.clone())
            .filter(|c| only.is_none_or(|only| only.contains(c)))
            .collect();
        let mut written = std::cell::OnceCell::new();
        for name in components {
            let Some(c) = platform.components.get(&name) else {
                continue;
            };
            let delivery = r.plan.of(&name);
            let mut ctx = Ctx {
                env,
                c,
                target: *target,
                objects,
                tree,
                digest: None,
                manifests: r.plan.with_manifests.contains(&name),
                written: &mut written,
            };
            let h = match (target, delivery) {
                (Target::Flux, Delivery::Hydrated) => ctx.flux_to_hydrated(),
                (Target::Flux, Delivery::Release) => ctx.flux_to_release(),
                (Target::Argo, Delivery::Hydrated) => ctx.argo_to_hydrated(),
                (Target::Argo, Delivery::Release) => ctx.argo_to_release(),
                _ => None,
            };
            if let Some(h) = h {
                notes.push(note(env, c, &h));
                found.push(h);
            }
        }
    }
    r.handovers = found;
    notes
}

/// One component's objects in one target, and the tree before.
struct Ctx<'a> {
    env: &'a Environment,
    c: &'a Component,
    target: Target,
    objects: &'a mut Vec<Object>,
    tree: &'a dyn Tree,
    digest: Option<String>,
    /// Whether the component, a release, has manifests of its own.
    manifests: bool,
    /// The file names the new tree writes, by folder, made when first asked.
    written: &'a mut std::cell::OnceCell<BTreeMap<String, BTreeSet<String>>>,
}

/// The file names the objects are written to, by folder (either name an
/// object may get, with or without its namespace).
fn names_by_folder(objects: &[Object]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in objects {
        let names = out.entry(o.folder.clone()).or_default();
        names.insert(o.file_name(false));
        names.insert(o.file_name(true));
    }
    out
}

/// What becomes of one object kept from the tree before.
enum Kept {
    /// A hand-over of the component as it is now: stays as it is.
    Same(J),
    /// A hand-over of an earlier state of the component: leaves.
    Old(J),
    /// Not a hand-over: the switch begins with it.
    New(J),
}

impl Ctx<'_> {
    fn unit(&self) -> String {
        format!("{}/{}", self.env.name, self.target.name())
    }

    /// The digest of the component's objects in the new tree, hand-overs
    /// aside: a hand-over lasts as long as it holds.
    fn digest(&mut self) -> String {
        if let Some(d) = &self.digest {
            return d.clone();
        }
        use sha2::{Digest, Sha256};
        let mut texts: Vec<(String, String)> = self
            .objects
            .iter()
            .filter(|o| o.component.as_deref() == Some(self.c.name.as_str()) && annotation(&o.value).is_none())
            .map(|o| (format!("{}/{}", o.folder, o.file_name(true)), o.canonical_yaml()))
            .collect();
        texts.sort();
        let mut h = Sha256::new();
        for (path, text) in &texts {
            h.update(path.as_bytes());
            h.update([0]);
            h.update(text.as_bytes());
            h.update([0]);
        }
        let d = crate::world::disk::hex(&h.finalize()[..8]);
        self.digest = Some(d.clone());
        d
    }

    /// The objects of recorded files, each judged against the digest.
    fn kept(&mut self, paths: &[String]) -> Vec<Kept> {
        if paths.is_empty() {
            return Vec::new();
        }
        let digest = self.digest();
        let mut out = Vec::new();
        for path in paths {
            for v in self.tree.objects(path).unwrap_or_default() {
                out.push(match annotation(&v) {
                    Some(d) if d == digest => Kept::Same(v),
                    Some(_) => Kept::Old(v),
                    None => Kept::New(v),
                });
            }
        }
        out
    }

    /// Adds the kept objects to the tree (new ones changed by `hand`), and
    /// the hand-over they make, if any.
    fn keep(&mut self, kept: Vec<Kept>, folder: impl Fn(&J) -> String, hand: impl Fn(&mut J)) -> Option<HandOver> {
        if kept.is_empty() {
            return None;
        }
        let digest = self.digest();
        let stage = if kept.iter().any(|k| matches!(k, Kept::New(_))) {
            Stage::Begins
        } else if kept.iter().any(|k| matches!(k, Kept::Same(_))) {
            Stage::Continues
        } else {
            Stage::Ends
        };
        let mut ids = Vec::new();
        for k in kept {
            let v = match k {
                Kept::Same(v) => v,
                Kept::New(mut v) => {
                    hand(&mut v);
                    annotate(&mut v, ANNOTATION, &digest);
                    v
                }
                Kept::Old(v) => {
                    ids.push(id(&v));
                    continue;
                }
            };
            ids.push(id(&v));
            self.objects.push(Object {
                folder: folder(&v),
                value: v,
                origin: self.c.origin(),
                component: Some(self.c.name.clone()),
                source: Source::Generated,
                node: None,
                values: None,
            });
        }
        Some(HandOver {
            target: self.target,
            component: self.c.name.clone(),
            to: self.to(),
            stage,
            objects: ids,
        })
    }

    fn to(&self) -> Delivery {
        let hydrated = self
            .objects
            .iter()
            .any(|o| o.component.as_deref() == Some(self.c.name.as_str()) && matches!(o.source, Source::Chart { .. }));
        if hydrated {
            Delivery::Hydrated
        } else {
            Delivery::Release
        }
    }

    fn component_dir(&self) -> String {
        format!("components/{}", self.c.name)
    }

    /// Flux, now hydrated: the HelmRelease (and the manifests'
    /// Kustomization) of the release before.
    fn flux_to_hydrated(&mut self) -> Option<HandOver> {
        let unit = self.unit();
        let dir = self.component_dir();
        let name = sanitize(&self.c.name);
        let release = format!("{unit}/{dir}/helmrelease-{name}.yaml");
        let manifests = format!("{unit}/kustomization-{name}-manifests.yaml");
        let paths: Vec<String> = [release, manifests].into_iter().filter(|p| self.tree.has(p)).collect();
        let kept = self.kept(&paths);
        self.keep(
            kept,
            |v| {
                if kind(v) == "HelmRelease" {
                    dir.clone()
                } else {
                    String::new()
                }
            },
            |v| {
                v["spec"]["suspend"] = json!(true);
                if kind(v) == "HelmRelease" {
                    annotate(v, PRUNE, "disabled");
                } else {
                    v["spec"]["deletionPolicy"] = json!("Orphan");
                }
            },
        )
    }

    /// Flux, now a release: the objects the component's folder held
    /// before, hydrated, that the new tree does not write there.
    fn flux_to_release(&mut self) -> Option<HandOver> {
        let unit = self.unit();
        let dir = self.component_dir();
        let before = self.tree.files_in(&format!("{unit}/{dir}"));
        if before.is_empty() {
            return None;
        }
        let objects: &[Object] = self.objects;
        let written = self.written.get_or_init(|| names_by_folder(objects));
        let paths: Vec<String> = before
            .into_iter()
            .filter(|f| f != "kustomization.yaml" && !written.get(&dir).is_some_and(|w| w.contains(f)))
            .map(|f| format!("{unit}/{dir}/{f}"))
            .collect();
        if paths.is_empty() {
            return None;
        }
        let manifests: BTreeSet<String> = self
            .objects
            .iter()
            .filter(|o| o.component.as_deref() == Some(self.c.name.as_str()) && o.source == Source::Manifest)
            .map(Object::id)
            .collect();
        // A release before (a HelmRelease that is no hand-over): what it
        // leaves behind is its own (values ConfigMaps of other values), and
        // only a hand-over already under way is kept or ended.
        let release = format!("{unit}/{dir}/helmrelease-{}.yaml", sanitize(&self.c.name));
        let was_release = self.tree.has(&release)
            && self
                .tree
                .objects(&release)
                .is_some_and(|docs| docs.iter().all(|d| annotation(d).is_none()));
        let mut kept = self.kept(&paths);
        if was_release {
            kept.retain(|k| !matches!(k, Kept::New(_)));
        }
        self.keep(
            kept,
            |_| dir.clone(),
            |v| {
                annotate(v, PRUNE, "disabled");
                if manifests.contains(&id(v)) {
                    annotate(v, SSA, "IfNotPresent");
                }
            },
        )
    }

    /// Argo CD, now hydrated: the manifests' Application of the release.
    fn argo_to_hydrated(&mut self) -> Option<HandOver> {
        let path = format!("{}/application-{}-manifests.yaml", self.unit(), sanitize(&self.c.name));
        if !self.tree.has(&path) {
            return None;
        }
        let kept = self.kept(&[path]);
        self.keep(
            kept,
            |_| String::new(),
            |v| {
                if let Some(m) = v["metadata"].as_object_mut() {
                    m.remove("finalizers");
                }
                if let Some(p) = v["spec"]["syncPolicy"].as_object_mut() {
                    p.remove("automated");
                }
            },
        )
    }

    /// Argo CD, now a release with manifests: its Application prunes
    /// nothing until `<c>-manifests` has taken the manifests over.
    fn argo_to_release(&mut self) -> Option<HandOver> {
        if !self.manifests || self.c.sync == SyncMode::Manual {
            return None;
        }
        let unit = self.unit();
        let name = sanitize(&self.c.name);
        let app_path = format!("{unit}/application-{name}.yaml");
        // An Application without the annotation anywhere in its file (the
        // usual case) is no hand-over: nothing to parse.
        let before = if self.tree.mentions(&app_path, ANNOTATION) {
            self.tree.objects(&app_path).unwrap_or_default()
        } else {
            Vec::new()
        };
        let marked = before.iter().find_map(annotation).map(str::to_owned);
        let begins = marked.is_none()
            && !self.tree.has(&format!("{unit}/application-{name}-manifests.yaml"))
            && self.tree.has_under(&format!("{unit}/{}", self.component_dir()));
        if marked.is_none() && !begins {
            return None;
        }
        let digest = self.digest();
        let stage = match marked {
            Some(d) if d == digest => Stage::Continues,
            Some(_) => Stage::Ends,
            None => Stage::Begins,
        };
        let app = self
            .objects
            .iter_mut()
            .find(|o| o.folder.is_empty() && o.kind() == "Application" && o.name() == self.c.name)?;
        if stage != Stage::Ends {
            if let Some(a) = app.value["spec"]["syncPolicy"]["automated"].as_object_mut() {
                a.insert("prune".into(), json!(false));
            }
            annotate(&mut app.value, ANNOTATION, &digest);
        }
        Some(HandOver {
            target: Target::Argo,
            component: self.c.name.clone(),
            to: Delivery::Release,
            stage,
            objects: vec![app.id()],
        })
    }
}

fn kind(v: &J) -> &str {
    v["kind"].as_str().unwrap_or("")
}

fn annotation(v: &J) -> Option<&str> {
    v["metadata"]["annotations"][ANNOTATION].as_str()
}

fn id(v: &J) -> String {
    let name = v["metadata"]["name"].as_str().unwrap_or("");
    match v["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{}/{ns}/{name}", kind(v)),
        None => format!("{}/{name}", kind(v)),
    }
}

fn annotate(v: &mut J, key: &str, value: &str) {
    let Some(meta) = v.get_mut("metadata").and_then(J::as_object_mut) else {
        return;
    };
    let into = meta.entry("annotations").or_insert_with(|| json!({}));
    if !into.is_object() {
        *into = json!({});
    }
    if let Some(m) = into.as_object_mut() {
        m.insert(key.to_owned(), json!(value));
    }
}

fn note(env: &Environment, c: &Component, h: &HandOver) -> Diagnostic {
    let severity = match h.stage {
        Stage::Begins => Severity::Warning,
        Stage::Continues | Stage::Ends => Severity::Note,
    };
    let help = match h.stage {
        Stage::Ends => match h.target {
            Target::Flux if h.to == Delivery::Hydrated => format!(
                "delete the suspended HelmRelease by hand once you no longer want to switch back (`kubectl -n {ns} delete helmrelease {c}`: suspended, it uninstalls nothing)",
                ns = c.namespace,
                c = c.name
            ),
            _ => "nothing to do: the engine leaves the objects in place".to_owned(),
        },
        _ => format!(
            "commit and push this tree on its own and let {} apply it before {} changes again (docs/output.md, \"Switching a component\")",
            super::versions::engine_name(h.target),
            c.name
        ),
    };
    let mut d = Diagnostic::warning(
        codes::HAND_OVER,
        c.origin(),
        format!("environment {}: {}", env.name, h.explain()),
    )
    .with_help(help)
    .in_env(&env.name);
    d.severity = severity;
    d
}
