//! The lints of a change: each reads one object on both sides (and, where
//! it must, the rest of the environment) and reports what needs care under
//! a code of its own. Codes are assigned in
//! [`crate::invariants::registry::CHANGE_LINTS`]; this table binds each to
//! its check and documentation, which `strata rule CODE` prints.

use super::{Danger, EnvSides, Pair};

macro_rules! doc {
    ($text:literal) => {
        #[doc = $text]
        pub const DOC: &str = $text;
    };
}

pub mod dng001;
pub mod dng002;
pub mod dng003;
pub mod dng004;
pub mod dng005;
pub mod dng006;
pub mod dng007;

/// A lint of a change.
pub struct Lint {
    pub code: &'static str,
    /// Kebab-case name of the pattern it flags.
    pub name: &'static str,
    /// One line for `strata rule`.
    pub summary: &'static str,
    /// What `strata rule CODE` prints.
    pub doc: &'static str,
    check: fn(&EnvSides<'_>, &Pair<'_>, &mut Vec<Danger>),
}

macro_rules! lint {
    ($code:literal, $module:ident, $summary:literal) => {
        Lint {
            code: $code,
            name: $module::NAME,
            summary: $summary,
            doc: $module::DOC,
            check: $module::check,
        }
    };
}

pub static LINTS: &[Lint] = &[
    lint!(
        "DNG001",
        dng001,
        "a change to a field the API server refuses to update: the object must be replaced"
    ),
    lint!(
        "DNG002",
        dng002,
        "a Role or binding grants more verbs, resources or subjects than before"
    ),
    lint!("DNG003", dng003, "a volume claim shrinks or changes storage class"),
    lint!(
        "DNG004",
        dng004,
        "pruning or suspension of a Flux or Argo CD object is turned"
    ),
    lint!(
        "DNG005",
        dng005,
        "what deleting an object deletes with it changes (finalizers, deletionPolicy)"
    ),
    lint!(
        "DNG006",
        dng006,
        "a CRD version (or the CRD) goes while objects of the tree use it"
    ),
    lint!(
        "DNG007",
        dng007,
        "a replica count or PodDisruptionBudget change breaks high availability"
    ),
];

/// The lint with this code or name.
pub fn find(code: &str) -> Option<&'static Lint> {
    LINTS
        .iter()
        .find(|l| l.code.eq_ignore_ascii_case(code) || l.name == code)
}

/// Runs every lint on one object that differs.
pub(super) fn check(sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<Danger>) {
    for l in LINTS {
        (l.check)(sides, pair, out);
    }
}

/// A finding of `code` about the object of `pair`.
pub(super) fn danger(code: &'static str, pair: &Pair<'_>, message: String, help: Vec<String>) -> Danger {
    Danger {
        code,
        env: pair.env.to_owned(),
        component: pair.component.map(str::to_owned),
        object: pair.display(),
        message,
        help,
        origin: pair.object.origin.clone(),
    }
}

/// The annotations of an object.
pub(super) fn annotation<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    v.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::registry::CHANGE_LINTS;

    #[test]
    fn the_table_binds_every_registered_code_and_no_other() {
        let bound: Vec<(&str, &str)> = LINTS.iter().map(|l| (l.code, l.name)).collect();
        assert_eq!(bound, CHANGE_LINTS);
        for l in LINTS {
            for section in crate::invariants::registry::DOC_SECTIONS {
                assert!(l.doc.contains(section), "{} lacks {section}", l.code);
            }
            assert!(!l.summary.ends_with('.'), "{}", l.code);
        }
    }
}
