//! The proof of an import: compile the written platform with strata's own
//! pipeline, charts rendered with helm from the platform's store, and,
//! release by release and environment by environment,
//!
//! - compare the merged values with what the source tree gives it (E034);
//! - compare the objects its chart renders with the objects the engine's
//!   own render gives (see [`super::objects`]; E067);
//! - say which releases could not be proven (E066): a chart that could not
//!   be rendered, and why, or values the engine has that the import could
//!   not read (SOPS-encrypted, a Secret's).
//!
//! Only a release that renders and matches on both counts is equal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::objects::Key;
use super::{Imported, values};
use crate::diag::{Diagnostic, Sources, codes};
use crate::pipeline::{self, Options};
use crate::world::FsWorld;
use crate::yaml::Origin;

/// The most differences listed per release.
const MAX_LISTED: usize = 20;

/// What the comparison found.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Releases whose values or objects differ (errors).
    pub differ: Vec<Diagnostic>,
    /// Releases that could not be proven (errors).
    pub unproven: Vec<Diagnostic>,
    /// Why the platform does not compile with its charts rendered, when it
    /// does not (its values were then compared without them).
    pub blocked: Vec<Diagnostic>,
    /// How many (environment, component) releases were compared, and how
    /// many of them rendered.
    pub total: usize,
    pub rendered: usize,
    /// How many releases differ, and how many of the others could not be
    /// proven (a release may have several diagnostics).
    pub differing: usize,
    pub not_proven: usize,
}

impl Verdict {
    /// Whether every release rendered and matched.
    pub fn equal(&self) -> bool {
        self.differ.is_empty() && self.unproven.is_empty() && self.blocked.is_empty()
    }
}

/// Compiles the platform at `root` with charts rendered as `inflate` says
/// and compares. `Err` holds the diagnostics of a platform that does not
/// compile.
pub fn verify(
    root: &Path,
    today: String,
    planned: &Imported,
    inflate: &crate::inflate::Settings,
    sources: &Sources,
) -> Result<Verdict, Vec<Diagnostic>> {
    let world = FsWorld::new(root, today).map_err(|e| {
        vec![Diagnostic::error(
            codes::IO,
            Origin::file_start(root.display().to_string()),
            format!("cannot open {}: {e}", root.display()),
        )]
    })?;
    let opts = Options {
        inflate: crate::inflate::Settings {
            state_root: Some(world.root().to_path_buf()),
            ..inflate.clone()
        },
        schemas: crate::validate::Settings::default(),
        ..Options::default()
    };
    let mut verdict = Verdict {
        total: planned.expected.len(),
        ..Verdict::default()
    };
    // A chart that stops the compile (a version range, a chart helm
    // refuses) leaves the values to compare: compile again without charts.
    let compiled = match pipeline::compile(&world, sources, &opts) {
        Ok(c) => c,
        Err(errors) => {
            let off = Options {
                inflate: crate::inflate::Settings {
                    mode: Some(crate::inflate::Mode::Off),
                    ..opts.inflate.clone()
                },
                ..opts.clone()
            };
            let c = pipeline::compile(&world, sources, &off).map_err(|_| errors.clone())?;
            verdict.blocked = errors;
            c
        }
    };
    let mut got: BTreeMap<Key, Value> = BTreeMap::new();
    for r in &compiled.renders {
        for (component, merged) in &r.merged {
            got.insert((r.env.clone(), component.clone()), merged.values.to_json());
        }
    }
    let mut differing: BTreeSet<Key> = BTreeSet::new();
    let mut unproven: BTreeSet<Key> = BTreeSet::new();
    let blocked = !verdict.blocked.is_empty();
    let objects = super::objects::compare(&world, &compiled, planned, &opts.inflate, blocked);
    verdict.rendered = objects.rendered;
    for (key, d) in compare_values(planned, &got).into_iter().chain(objects.differ) {
        differing.insert(key);
        verdict.differ.push(d);
    }
    for (key, d) in objects.unrendered.into_iter().chain(unread(planned)) {
        unproven.insert(key);
        verdict.unproven.push(d);
    }
    verdict.differing = differing.len();
    verdict.not_proven = unproven.difference(&differing).count();
    // Dropped here, not left to the exit (`Compiled::leave`): the caller
    // goes on, and may verify again.
    drop(compiled);
    Ok(verdict)
}

/// Each release whose merged values are not the source's (E034).
fn compare_values(planned: &Imported, got: &BTreeMap<Key, Value>) -> Vec<(Key, Diagnostic)> {
    let mut out = Vec::new();
    for ((env, component), want) in &planned.expected {
        let key = (env.clone(), component.clone());
        let d = match got.get(&key) {
            None => Diagnostic::error(
                codes::IMPORT_DIFFERS,
                Origin::file_start(format!("environments/{env}.yaml")),
                format!("component {component} is not released in environment {env} after the import"),
            )
            .with_help("include the component in the environment (`components:`)")
            .in_env(env),
            Some(have) if have != want => {
                let layer = format!("gitops/platform/{component}/values.yaml");
                differs(env, component, want, have, layer)
            }
            Some(_) => continue,
        };
        out.push((key, d));
    }
    out
}

/// Each release the engine gives what the import could not read (E066).
fn unread(planned: &Imported) -> Vec<(Key, Diagnostic)> {
    let mut out = Vec::new();
    for ((env, component), check) in &planned.checks {
        if check.unread.is_empty() {
            continue;
        }
        let d = Diagnostic::error(
            codes::IMPORT_UNPROVEN,
            check.origin.clone(),
            format!(
                "component {component} in environment {env} cannot be proven equal: the engine gives it {}, which the import could not read",
                check.unread.join("; ")
            ),
        )
        .with_help("put what it stands for in the component's layers (secret values belong in the cluster: an ExternalSecret), then compare with `strata explain`")
        .in_env(env);
        out.push(((env.clone(), component.clone()), d));
    }
    out
}

fn differs(env: &str, component: &str, want: &Value, have: &Value, layer: String) -> Diagnostic {
    let show = |v: &Option<Value>| v.as_ref().map_or("unset".to_owned(), |v| v.to_string());
    let diffs = values::differences(want, have, usize::MAX);
    let mut d = Diagnostic::error(
        codes::IMPORT_DIFFERS,
        Origin::file_start(layer),
        format!(
            "component {component} in environment {env}: the merged values differ from the source's at {} place(s)",
            diffs.len()
        ),
    )
    .with_help(
        "edit the component's layers until they agree: the source's values are what the engine gives the release",
    )
    .in_env(env);
    let more = diffs.len().saturating_sub(MAX_LISTED);
    for (path, w, h) in diffs.into_iter().take(MAX_LISTED) {
        d = d.with_note(format!("at {path}: the source gives {}, strata {}", show(&w), show(&h)));
    }
    if more > 0 {
        d = d.with_note(format!("and {more} more place(s)"));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Engine, Read, Release, plan};
    use serde_json::json;

    fn release(env: &str, values: Value) -> Release {
        let mut r = Release::new(
            "web".into(),
            "web".into(),
            env.into(),
            "web".into(),
            Origin::file_start("source.yaml"),
        );
        r.chart = Some(crate::import::Chart::Remote {
            repo_url: "https://charts.example.org".into(),
            name: "web".into(),
            version: "1.0.0".into(),
            oci: false,
        });
        r.values = values;
        r
    }

    #[test]
    fn a_written_platform_is_compared_release_by_release() {
        let read = Read {
            engine: Engine::Flux,
            root: std::path::PathBuf::from("."),
            releases: vec![
                release("staging", json!({"a": {"b": 1, "c": [1]}, "d": null})),
                release("production", json!({"a": {"b": 2, "c": [1]}, "e": "x"})),
            ],
            git: BTreeMap::new(),
            notes: Vec::new(),
            kept: None,
        };
        let mut planned = plan(&read);
        let tmp = tempfile::tempdir().unwrap();
        crate::scaffold::write_new(tmp.path(), &planned.files).unwrap();
        let sources = Sources::default();
        let today = "2026-12-02".to_owned();
        // No helm: the values are compared, and no release is proven.
        let off = crate::inflate::Settings::default();
        let v = verify(tmp.path(), today.clone(), &planned, &off, &sources).unwrap();
        assert_eq!(v.differ, Vec::new());
        assert_eq!((v.total, v.rendered, v.unproven.len(), v.not_proven), (2, 0, 2, 2));
        assert!(
            v.unproven[0].message.contains("could not be rendered"),
            "{:?}",
            v.unproven
        );
        // A source that says otherwise is listed, path by path.
        planned
            .expected
            .insert(("staging".into(), "web".into()), json!({"a": {"b": 3, "c": [1]}}));
        planned.expected.insert(("dev".into(), "web".into()), json!({}));
        let v = verify(tmp.path(), today, &planned, &off, &sources).unwrap();
        // Each release once: two differ; production could only not be proven.
        assert_eq!((v.differing, v.not_proven), (2, 1));
        let differs = v.differ;
        assert_eq!(differs.len(), 2, "{differs:?}");
        assert!(
            differs[0].message.contains("not released in environment dev"),
            "{differs:?}"
        );
        let notes = &differs[1].notes;
        assert_eq!(
            notes,
            &vec![
                "at a.b: the source gives 3, strata 1".to_owned(),
                "at d: the source gives unset, strata null".to_owned(),
            ]
        );
    }
}
