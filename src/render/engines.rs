//! The template engine kept from one environment to the next.

use std::sync::Arc;

use minijinja::Environment as Engine;

use super::{Shared, templates};
use crate::diag::Diagnostic;
use crate::load::Platform;
use crate::yaml::{self};

/// The template engine of the last environment rendered, kept for the
/// next: compiling every template is a tenth of an environment's serial
/// work, and the templates differ only where the environments take
/// different components with templates. Beside it, the text of every
/// values mapping the environments share.
#[derive(Default)]
pub struct Engines<'p> {
    last: Option<(Vec<&'p str>, Kept<'p>)>,
    texts: yaml::Texts,
    /// What this compile shares with the other side of a diff.
    pub(super) shared: Option<Arc<Shared>>,
}

/// An engine compiled for this compile, or handed over by the other side
/// of a diff.
pub(super) enum Kept<'p> {
    Own(Box<Engine<'p>>),
    Shared(Arc<Engine<'static>>),
}

impl<'p> Kept<'p> {
    pub(super) fn engine(&self) -> &Engine<'p> {
        match self {
            Kept::Own(e) => e,
            Kept::Shared(e) => e,
        }
    }
}

impl<'p> Engines<'p> {
    /// Drops the engines, and the merged mappings their texts hold on every
    /// thread (see [`yaml::Texts::drop_in_parallel`]).
    pub fn drop_in_parallel(self) {
        let Engines { last, texts, shared } = self;
        rayon::join(|| drop((last, shared)), || texts.drop_in_parallel());
    }

    /// After an environment's trees are dropped: lets go of the texts only
    /// they held (see [`yaml::Texts::forget_unheld`]).
    pub fn forget_unheld(&self) {
        self.texts.forget_unheld();
    }

    /// Engines for a compile that shares with another what the components
    /// a diff's change does not reach merge and render (see [`Shared`]).
    pub fn sharing(shared: Option<Arc<Shared>>) -> Self {
        Engines {
            shared,
            ..Engines::default()
        }
    }

    /// The engine for these templates, and the shared values texts; the
    /// engine of `shared` (whose templates are these) when there is one.
    pub(super) fn get(
        &mut self,
        platform: &'p Platform,
        extra: &[(&'p str, &'p str)],
        shared: Option<&Shared>,
    ) -> Result<(&Engine<'p>, &yaml::Texts), Diagnostic> {
        let key: Vec<&str> = extra.iter().map(|(path, _)| *path).collect();
        if self.last.as_ref().is_some_and(|(last, _)| *last != key) {
            self.last = None;
        }
        let (_, engine) = match &mut self.last {
            Some(kept) => kept,
            empty => {
                let (overrides, dir) = (&platform.templates, &platform.project.templates);
                let kept = match shared {
                    Some(s) => Kept::Shared(s.engine(|| templates::engine_owned(overrides, dir, extra))?),
                    None => Kept::Own(Box::new(templates::engine(overrides, dir, extra)?)),
                };
                empty.insert((key, kept))
            }
        };
        Ok((engine.engine(), &self.texts))
    }
}
