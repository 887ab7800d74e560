//! One side of a diff: its objects indexed by key, each shown (written as
//! text, its secrets taken out) only when it is compared as text, and the
//! file of the rendered tree it is written to.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value as J;

use super::{CHART_TARGET, Key};
use crate::merge::Merged;
use crate::render::Object;
use crate::render::hydrate::Delivery;
use crate::secrets::{self, Secrets};
use crate::yaml;

/// One object of one side, ready to compare. Its text is written only
/// when it is shown or compared as text: most objects of a diff are the
/// same value on both sides.
pub(super) struct Entry<'a> {
    pub(super) object: &'a Object,
    pub(super) merged: Option<&'a Merged>,
    /// What a chart rendered: the template and component it came from.
    pub(super) label: Option<String>,
    /// The side it is shown with (a test gives the text itself instead).
    pub(super) side: Option<&'a Side<'a>>,
    pub(super) shown: OnceLock<Shown>,
}

/// An object as it may be shown: canonical YAML with Secret data and
/// sensitive outputs replaced, the values replaced by path (`data.<key>`,
/// `spec.values.token`), and the file it is written to.
pub(super) struct Shown {
    pub(super) text: String,
    pub(super) hidden: secrets::Hidden,
    pub(super) path: Option<String>,
}

/// What the objects of one side are shown with.
pub(super) struct Side<'a> {
    compiled: &'a super::View<'a>,
    secrets: &'a Secrets,
    /// What a component's objects hide besides: its Secrets' data.
    releases: &'a super::release::Releases,
    /// The file of each object, found by its content within its unit (the
    /// layout writes each object as its canonical YAML, one per file).
    by_content: OnceLock<BTreeMap<(&'a str, &'a str), &'a str>>,
}

impl<'a> Side<'a> {
    pub(super) fn new(
        compiled: &'a super::View<'a>,
        secrets: &'a Secrets,
        releases: &'a super::release::Releases,
    ) -> Self {
        Side {
            compiled,
            secrets,
            releases,
            by_content: OnceLock::new(),
        }
    }

    fn by_content(&self) -> &BTreeMap<(&'a str, &'a str), &'a str> {
        self.by_content.get_or_init(|| {
            let mut by_content = BTreeMap::new();
            for (path, content) in self.compiled.files {
                let unit = path.splitn(3, '/').take(2).collect::<Vec<_>>().join("/");
                by_content.insert((&path[..unit.len()], content.as_str()), path.as_str());
            }
            by_content
        })
    }
}

impl<'a> Entry<'a> {
    /// This object as another value (the base without its chart's
    /// relabelling): shown with the same secrets hidden, at the same path.
    pub(super) fn as_value(&self, key: &Key, value: &J) -> Entry<'a> {
        let shown = match self.side {
            None => Shown {
                text: yaml::to_canonical_yaml(value),
                hidden: secrets::Hidden::default(),
                path: None,
            },
            Some(side) => {
                let (text, hidden) = shown(value, self.hides(side, key), None);
                Shown {
                    text,
                    hidden,
                    path: self.shown(key).path.clone(),
                }
            }
        };
        Entry {
            object: self.object,
            merged: self.merged,
            label: self.label.clone(),
            side: self.side,
            shown: OnceLock::from(shown),
        }
    }

    /// The secrets hidden in this object: its release's, or the contracts'.
    fn hides(&self, side: &'a Side<'a>, key: &Key) -> &'a Secrets {
        self.object
            .component
            .as_ref()
            .and_then(|c| side.releases.get(&(key.env.clone(), c.clone())))
            .unwrap_or(side.secrets)
    }

    pub(super) fn shown(&self, key: &Key) -> &Shown {
        self.shown.get_or_init(|| {
            let Some(side) = self.side else {
                return Shown {
                    text: String::new(),
                    hidden: secrets::Hidden::default(),
                    path: None,
                };
            };
            let secrets = self.hides(side, key);
            if self.label.is_some() {
                let (text, hidden) = shown(&self.object.value, secrets, None);
                return Shown {
                    text,
                    hidden,
                    path: self.label.clone(),
                };
            }
            let unit = crate::emit::unit(&key.env, &key.target);
            let canonical = yaml::to_canonical_yaml(&self.object.value);
            let path = side
                .by_content()
                .get(&(unit.as_str(), canonical.as_str()))
                .map(|p| crate::world::join(&side.compiled.platform.project.output, p));
            let (text, hidden) = shown(&self.object.value, secrets, Some(canonical));
            Shown { text, hidden, path }
        })
    }
}

/// The object as it may be shown, and what was hidden from it.
fn shown(value: &J, secrets: &Secrets, canonical: Option<String>) -> (String, secrets::Hidden) {
    let (text, hidden) = match secrets::redact_for_display(value, secrets) {
        Some((redacted, hidden)) => (yaml::to_canonical_yaml(&redacted), hidden),
        None => (
            canonical.unwrap_or_else(|| yaml::to_canonical_yaml(value)),
            secrets::Hidden::default(),
        ),
    };
    // The text as a whole, before it is cut into lines: a secret the
    // writer folded over lines is no longer found line by line.
    let text = match secrets.redact_text(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(clean) => clean,
    };
    (text, hidden)
}

pub(super) fn index<'a>(side: &'a Side<'a>) -> BTreeMap<Key, Entry<'a>> {
    let c = side.compiled;
    let mut out = BTreeMap::new();
    let entry = |object, merged, label| Entry {
        object,
        merged,
        label,
        side: Some(side),
        shown: OnceLock::new(),
    };
    // What the charts render, per environment, under the target `chart`;
    // a hydrated component's objects are in the targets' trees instead.
    for r in c.renders {
        for (component, objects) in &r.charts {
            if r.plan.of(component) == Delivery::Hydrated {
                continue;
            }
            for o in objects {
                let template = match &o.source {
                    crate::render::Source::Chart { template } => template.as_str(),
                    _ => "",
                };
                let label = format!("{template} (chart of {component})");
                out.insert(
                    key(&r.env, CHART_TARGET, o),
                    entry(o, r.merged.get(component), Some(label)),
                );
            }
        }
    }
    for r in c.renders {
        for o in &r.substrate {
            out.insert(
                key(&r.env, crate::render::substrate::SUBSTRATE, o),
                entry(o, None, None),
            );
        }
        for (target, objects) in &r.targets {
            for o in objects {
                let merged = o.component.as_ref().and_then(|c| r.merged.get(c));
                out.insert(key(&r.env, target.name(), o), entry(o, merged, None));
            }
        }
    }
    out
}

fn key(env: &str, target: &str, o: &Object) -> Key {
    Key {
        env: env.to_owned(),
        target: target.to_owned(),
        api_version: o.api_version().to_owned(),
        kind: o.kind().to_owned(),
        namespace: o.namespace().map(str::to_owned),
        name: values_configmap(o).unwrap_or_else(|| o.name().to_owned()),
    }
}

/// `<component>-values` for the ConfigMap that carries a component's
/// values to Flux: its name holds a digest of the values, so new values
/// are a new name, and the diff shows them as the same object changed, not
/// one removed and another added.
fn values_configmap(o: &Object) -> Option<String> {
    let c = o.component.as_deref()?;
    let stem = format!("{c}-values");
    let rest = o.name().strip_prefix(&stem)?.strip_prefix('-')?;
    let generated = o.source == crate::render::Source::Generated && o.kind() == "ConfigMap";
    (generated && rest.len() == 10 && rest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(stem)
}
