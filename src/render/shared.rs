//! What the two compiles of a diff share. A component the change does not
//! reach reads the same inputs on both sides (that is what the reach
//! means), so what it merges and renders in an environment is the same on
//! both: it is worked out by whichever compile comes to it first and copied
//! into the other, rather than worked out twice.
//!
//! The template engine is compiled once, by the first compile to need it;
//! the other waits for it (compiling templates calls on no other thread).
//! Otherwise neither compile waits on the other: one that finds a
//! component not yet done does it itself, and keeps its result for the
//! other if that one has not kept one first. The two results are the same,
//! so which is kept does not show. The second compile to come takes the
//! components from the last one back: side by side in the same order, the
//! two would do each one at the same time, and each find nothing kept.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use super::Object;
use crate::diag::Diagnostic;
use crate::load::Platform;
use crate::merge::Merged;

/// A component's manifests as rendered: its objects, and the errors of
/// its templates.
pub(super) type Rendered = (Vec<Object>, Vec<Diagnostic>);

/// The components a diff's change does not reach in one environment, and
/// what each merges and renders there once either compile has done it.
#[derive(Default)]
pub struct Shared {
    env: String,
    slots: BTreeMap<String, Slot>,
    /// The manifest templates (path and text) of the first compile to
    /// render this environment. A template may include another component's,
    /// so rendered manifests are shared only between compiles whose
    /// templates are the same.
    templates: OnceLock<Vec<(String, String)>>,
    /// The template engine, compiled by the first compile that needs it.
    engine: OnceLock<Result<std::sync::Arc<super::Engine<'static>>, Diagnostic>>,
    /// Compiles that asked for their order so far.
    comers: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct Slot {
    merged: OnceLock<Merged>,
    /// A copy of the first side's rendered manifests, until the other
    /// side takes it (each side renders a component once).
    rendered: std::sync::Mutex<Option<Rendered>>,
    /// Whether a side has rendered the component (and left its copy).
    rendered_once: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("env", &self.env)
            .field("components", &self.slots.len())
            .finish()
    }
}

impl Shared {
    /// For `env`: every component of `platform` there but those in `reached`.
    pub fn new(platform: &Platform, env: &str, reached: &BTreeSet<String>) -> Shared {
        let slots = platform
            .environments
            .get(env)
            .into_iter()
            .flat_map(|e| platform.components_in(e))
            .filter(|c| !reached.contains(&c.name))
            .map(|c| (c.name.clone(), Slot::default()))
            .collect();
        Shared {
            env: env.to_owned(),
            slots,
            ..Shared::default()
        }
    }

    /// What is shared of `env`: nothing for another environment.
    pub(super) fn of(&self, env: &str) -> Option<&Shared> {
        (self.env == env).then_some(self)
    }

    /// Whether this compile takes the components from the last one back:
    /// the second to ask does.
    pub(super) fn backwards(&self) -> bool {
        self.comers.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1
    }

    /// Whether a compile with these templates may take rendered manifests
    /// (and keep its own): the first to ask sets the templates.
    pub(super) fn same_templates(&self, templates: &[(&str, &str)]) -> bool {
        let first = self.templates.get_or_init(|| {
            templates
                .iter()
                .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
                .collect()
        });
        first.len() == templates.len()
            && first
                .iter()
                .zip(templates)
                .all(|((p, t), (path, text))| p == path && t == text)
    }

    /// The template engine, compiled by `compile` for the first compile
    /// that asks; the other waits for it rather than compiling its own.
    pub(super) fn engine(
        &self,
        compile: impl FnOnce() -> Result<super::Engine<'static>, Diagnostic>,
    ) -> Result<std::sync::Arc<super::Engine<'static>>, Diagnostic> {
        self.engine.get_or_init(|| compile().map(std::sync::Arc::new)).clone()
    }

    /// The component's merged values: kept, or made by `merge` (and kept).
    pub(super) fn merged(&self, component: &str, merge: impl FnOnce() -> Merged) -> Merged {
        match self.slots.get(component) {
            Some(slot) => take_or_keep(&slot.merged, merge),
            None => merge(),
        }
    }

    /// The component's rendered manifests: the other side's, or made by
    /// `render` (and a copy left for the other side).
    pub(super) fn rendered(&self, component: &str, render: impl FnOnce() -> Rendered) -> Rendered {
        let Some(slot) = self.slots.get(component) else {
            return render();
        };
        // The other side's copy is taken, not copied again: each side
        // comes to a component once.
        if let Ok(mut kept) = slot.rendered.lock()
            && let Some(taken) = kept.take()
        {
            return taken;
        }
        let made = render();
        if !slot.rendered_once.swap(true, std::sync::atomic::Ordering::AcqRel)
            && let Ok(mut kept) = slot.rendered.lock()
        {
            *kept = Some(made.clone());
        }
        made
    }
}

/// A copy of what `cell` holds, or what `make` makes, kept in `cell` unless
/// the other compile kept its own meanwhile. Never waits.
fn take_or_keep<T: Clone>(cell: &OnceLock<T>, make: impl FnOnce() -> T) -> T {
    if let Some(kept) = cell.get() {
        return kept.clone();
    }
    let made = make();
    let _ = cell.set(made.clone());
    made
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Sources;
    use crate::world::FsWorld;

    fn homelab() -> Platform {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/homelab");
        let world = FsWorld::new(std::path::Path::new(root), "2026-01-01".into()).unwrap();
        crate::load::load(&world, &Sources::default(), None).unwrap()
    }

    #[test]
    fn only_what_the_change_does_not_reach_is_shared() {
        let platform = homelab();
        let (env, all) = platform
            .environments
            .values()
            .map(|e| (e.name.clone(), platform.components_in(e).count()))
            .next()
            .unwrap();
        let reached = BTreeSet::from(["traefik".to_owned()]);
        let shared = Shared::new(&platform, &env, &reached);
        assert_eq!(shared.slots.len(), all - 1);
        assert!(!shared.slots.contains_key("traefik") && shared.slots.contains_key("cilium"));
        assert!(shared.of(&env).is_some() && shared.of("elsewhere").is_none());

        // The first to come makes and keeps; the other takes what is kept.
        let made = |n: usize| {
            move || {
                (
                    Vec::new(),
                    vec![Diagnostic::warning(
                        "X",
                        crate::yaml::Origin::file_start("f"),
                        n.to_string(),
                    )],
                )
            }
        };
        let first = shared.rendered("cilium", made(1));
        let second = shared.rendered("cilium", || unreachable!("kept by the first"));
        assert_eq!(first.1[0].message, "1");
        assert_eq!(second.1[0].message, "1");
        // Taken, not kept twice: both sides have had it.
        assert!(shared.slots["cilium"].rendered.lock().unwrap().is_none());
        // The first side to render a component leaves a copy for the other.
        assert_eq!(shared.rendered("coredns", made(4)).1[0].message, "4");
        assert!(shared.slots["coredns"].rendered.lock().unwrap().is_some());
        // A reached component is never kept: each side makes its own.
        assert_eq!(shared.rendered("traefik", made(2)).1[0].message, "2");
        assert_eq!(shared.rendered("traefik", made(3)).1[0].message, "3");
    }

    #[test]
    fn the_second_side_goes_backwards_and_templates_must_agree() {
        let platform = homelab();
        let env = platform.environments.keys().next().unwrap().clone();
        let shared = Shared::new(&platform, &env, &BTreeSet::new());
        assert!(!shared.backwards());
        assert!(shared.backwards());
        assert!(shared.same_templates(&[("a.j2", "{{ x }}"), ("b.j2", "b")]));
        assert!(shared.same_templates(&[("a.j2", "{{ x }}"), ("b.j2", "b")]));
        assert!(!shared.same_templates(&[("a.j2", "{{ y }}"), ("b.j2", "b")]));
        assert!(!shared.same_templates(&[("a.j2", "{{ x }}")]));
    }
}
