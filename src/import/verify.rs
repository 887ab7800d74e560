//! The proof of an import: compile the written platform with strata's own
//! pipeline (charts are not rendered; the merged values are what counts)
//! and compare each release's merged values, environment by environment,
//! with what the source tree gives it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::values;
use crate::diag::{Diagnostic, Sources, codes};
use crate::pipeline::{self, Options};
use crate::world::FsWorld;
use crate::yaml::Origin;

/// The most differences listed per release.
const MAX_LISTED: usize = 20;

/// Compiles the platform at `root` and compares. `Ok` holds one error per
/// release whose values differ (empty: all equal); `Err` the diagnostics of
/// a platform that does not compile.
pub fn verify(
    root: &Path,
    today: String,
    expected: &BTreeMap<(String, String), Value>,
    sources: &Sources,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let world = FsWorld::new(root, today).map_err(|e| {
        vec![Diagnostic::error(
            codes::IO,
            Origin::file_start(root.display().to_string()),
            format!("cannot open {}: {e}", root.display()),
        )]
    })?;
    let opts = Options {
        inflate: crate::inflate::Settings {
            mode: Some(crate::inflate::Mode::Off),
            ..Default::default()
        },
        schemas: crate::validate::Settings::default(),
        ..Options::default()
    };
    let compiled = pipeline::compile(&world, sources, &opts)?;
    let mut got: BTreeMap<(String, String), Value> = BTreeMap::new();
    for r in &compiled.renders {
        for (component, merged) in &r.merged {
            got.insert((r.env.clone(), component.clone()), merged.values.to_json());
        }
    }
    let mut out = Vec::new();
    for ((env, component), want) in expected {
        let layer = format!("gitops/platform/{component}/values.yaml");
        match got.get(&(env.clone(), component.clone())) {
            None => out.push(
                Diagnostic::error(
                    codes::IMPORT_DIFFERS,
                    Origin::file_start(format!("environments/{env}.yaml")),
                    format!("component {component} is not released in environment {env} after the import"),
                )
                .with_help("include the component in the environment (`components:`)")
                .in_env(env),
            ),
            Some(have) if have != want => out.push(differs(env, component, want, have, layer)),
            Some(_) => {}
        }
    }
    Ok(out)
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
        Release {
            key: "web".into(),
            name: "web".into(),
            env: env.into(),
            namespace: "web".into(),
            chart: Some(crate::import::Chart::Remote {
                repo_url: "https://charts.example.org".into(),
                name: "web".into(),
                version: "1.0.0".into(),
                oci: false,
            }),
            values,
            requires: Vec::new(),
            release_name: None,
            origin: Origin::file_start("source.yaml"),
        }
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
        };
        let planned = plan(&read);
        let tmp = tempfile::tempdir().unwrap();
        crate::scaffold::write_new(tmp.path(), &planned.files).unwrap();
        let sources = Sources::default();
        let today = "2026-12-02".to_owned();
        assert_eq!(
            verify(tmp.path(), today.clone(), &planned.expected, &sources).unwrap(),
            Vec::new()
        );
        // A source that says otherwise is listed, path by path.
        let mut other = planned.expected.clone();
        other.insert(("staging".into(), "web".into()), json!({"a": {"b": 3, "c": [1]}}));
        other.insert(("dev".into(), "web".into()), json!({}));
        let differs = verify(tmp.path(), today, &other, &sources).unwrap();
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
