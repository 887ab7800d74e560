//! What a diff reads of one side: a compile, or the base's compile as the
//! diff cache keeps it ([`super::cache`]). The two read alike.

use std::collections::BTreeMap;

use super::Finding;
use crate::diag::Severity;
use crate::emit::layout::Files;
use crate::load::Platform;
use crate::pipeline::Compiled;
use crate::render::EnvRender;

/// A component's chart name and version, by environment and component.
pub type Charts = BTreeMap<(String, String), (String, String)>;

/// One side of a diff.
pub struct View<'a> {
    /// Each compiled environment's objects.
    pub renders: &'a [EnvRender],
    /// The files the objects are written to, by path.
    pub files: &'a Files,
    /// `<env>/<target>` units compiled.
    pub scope: &'a [String],
    /// The findings, but notes (they say how a compile ran, not what a
    /// change does).
    pub findings: Vec<Finding>,
    /// The platform: its output folder, secrets and components.
    pub platform: &'a Platform,
    /// The chart of each component where the renders do not say it.
    pub charts: Option<&'a Charts>,
}

impl<'a> View<'a> {
    pub fn of(c: &'a Compiled) -> View<'a> {
        View {
            renders: &c.renders,
            files: &c.files,
            scope: &c.scope,
            findings: c
                .findings
                .iter()
                .filter(|d| d.severity != Severity::Note)
                .map(Finding::of)
                .collect(),
            platform: &c.platform,
            charts: None,
        }
    }
}
