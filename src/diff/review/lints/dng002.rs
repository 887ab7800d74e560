//! DNG002: a Role, ClusterRole or binding grants more than before.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::super::{EnvSides, Pair};
use super::danger;

pub const NAME: &str = "rbac-widened";

doc!(
    r#"## What it does
Flags a change that widens what RBAC grants: a Role or ClusterRole rule
that allows a verb, resource, API group, resource name or non-resource URL
it did not (a `*` included), a ClusterRole that starts aggregating other
roles (or aggregates by other labels), a RoleBinding or ClusterRoleBinding
that binds more subjects or another role, and a new binding of
`cluster-admin` or a new role that grants every verb on every resource.
Permissions are compared as the API server's authorizer reads them (k8s.io
`plugin/pkg/auth/authorizer/rbac`): a rule covers a request when each of
its API groups, resources, verbs and resource names is `*` or the
request's own, and `pods/*` covers every subresource of pods.

## Why is this bad?
A chart bump or a values change can hand a controller the right to read
every Secret or to create pods anywhere, and the object diff shows it as
one line among hundreds. Reviewers should see each grant a change adds.

## Example
```yaml
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: ["*"]          # was [get]
```

Use instead:
```yaml
rules:
  - apiGroups: [""]
    resources: [secrets]
    resourceNames: [webhook-tls]
    verbs: [get, update]
```
"#
);

/// Groups bound together grant to every authenticated or anonymous
/// caller, or every service account.
const BROAD_GROUPS: &[&str] = &[
    "system:authenticated",
    "system:unauthenticated",
    "system:serviceaccounts",
];

pub fn check(_sides: &EnvSides<'_>, pair: &Pair<'_>, out: &mut Vec<super::Danger>) {
    if super::super::immutable::group(pair.api_version) != "rbac.authorization.k8s.io" {
        return;
    }
    let Some(head) = pair.head else { return };
    let mut said = Vec::new();
    match pair.kind {
        "Role" | "ClusterRole" => {
            let base_rules = pair.base.map(rules).unwrap_or_default();
            let mut added = uncovered(&rules(head), &base_rules);
            // A new role is flagged for its wildcards only.
            if pair.base.is_none() {
                added.retain(wildcard);
            }
            if !added.is_empty() {
                said.push(format!("grants {}", describe(&added)));
            }
            let agg = |v: Option<&J>| v.and_then(|v| v.get("aggregationRule")).cloned();
            let (a, b) = (agg(pair.base), agg(Some(head)));
            if b.is_some() && a != b {
                said.push("aggregates the rules of every ClusterRole its aggregationRule selects".to_owned());
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let role = |v: &J| {
                let r = v.get("roleRef");
                format!(
                    "{} {}",
                    r.and_then(|r| r.get("kind")).and_then(J::as_str).unwrap_or("?"),
                    r.and_then(|r| r.get("name")).and_then(J::as_str).unwrap_or("?")
                )
            };
            let new_role = role(head);
            match pair.base.map(role) {
                Some(old) if old != new_role => said.push(format!("binds {new_role} instead of {old}")),
                None if new_role == "ClusterRole cluster-admin" => said.push("binds cluster-admin".to_owned()),
                _ => {}
            }
            let old_subjects = pair.base.map(subjects).unwrap_or_default();
            let new: Vec<String> = subjects(head)
                .into_iter()
                .filter(|s| pair.base.is_some() && !old_subjects.contains(s))
                .collect();
            if !new.is_empty() {
                let broad = new
                    .iter()
                    .any(|s| BROAD_GROUPS.iter().any(|g| s == &format!("Group {g}")));
                said.push(format!(
                    "binds {new_role} to {}{}",
                    new.join(", "),
                    if broad {
                        " (a group of every caller or service account)"
                    } else {
                        ""
                    }
                ));
            }
        }
        _ => {}
    }
    if said.is_empty() {
        return;
    }
    let message = format!("{} widens RBAC: {}", pair.display(), said.join("; "));
    let help = vec!["check each new grant is needed; narrow it with resourceNames, or a namespaced Role".to_owned()];
    out.push(danger("DNG002", pair, message, help));
}

/// One rule of a role: each list as written.
#[derive(Clone, Debug, Default)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    names: Vec<String>,
    urls: Vec<String>,
}

fn strings(v: Option<&J>) -> Vec<String> {
    v.and_then(J::as_array)
        .map(|a| a.iter().filter_map(J::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn rules(v: &J) -> Vec<Rule> {
    v.get("rules")
        .and_then(J::as_array)
        .map(|rs| {
            rs.iter()
                .map(|r| Rule {
                    groups: strings(r.get("apiGroups")),
                    resources: strings(r.get("resources")),
                    verbs: strings(r.get("verbs")),
                    names: strings(r.get("resourceNames")),
                    urls: strings(r.get("nonResourceURLs")),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn subjects(v: &J) -> Vec<String> {
    v.get("subjects")
        .and_then(J::as_array)
        .map(|s| {
            s.iter()
                .map(|s| {
                    let field = |k: &str| s.get(k).and_then(J::as_str).unwrap_or("");
                    match field("namespace") {
                        "" => format!("{} {}", field("kind"), field("name")),
                        ns => format!("{} {ns}/{}", field("kind"), field("name")),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One permission: a verb on a resource of a group (a resource name, or
/// every name), or on a non-resource URL.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Resource {
        group: String,
        resource: String,
        verb: String,
        name: Option<String>,
    },
    Url {
        url: String,
        verb: String,
    },
}

fn atoms(r: &Rule) -> Vec<Atom> {
    let mut out = Vec::new();
    for verb in &r.verbs {
        for url in &r.urls {
            out.push(Atom::Url {
                url: url.clone(),
                verb: verb.clone(),
            });
        }
        for group in &r.groups {
            for resource in &r.resources {
                let names: Vec<Option<String>> = if r.names.is_empty() {
                    vec![None]
                } else {
                    r.names.iter().cloned().map(Some).collect()
                };
                for name in names {
                    out.push(Atom::Resource {
                        group: group.clone(),
                        resource: resource.clone(),
                        verb: verb.clone(),
                        name,
                    });
                }
            }
        }
    }
    out
}

/// A permission of every verb, or on every resource or URL.
fn wildcard(a: &Atom) -> bool {
    match a {
        Atom::Url { url, verb } => url == "*" || verb == "*",
        Atom::Resource { resource, verb, .. } => resource == "*" || verb == "*",
    }
}

/// Whether `list` allows `want`, as the authorizer reads it.
fn allows(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

fn resource_allows(list: &[String], want: &str) -> bool {
    list.iter().any(|x| {
        x == "*"
            || x == want
            || x.strip_suffix("/*")
                .is_some_and(|parent| want.split_once('/').is_some_and(|(p, _)| p == parent))
    })
}

fn covers(r: &Rule, a: &Atom) -> bool {
    match a {
        Atom::Url { url, verb } => {
            allows(&r.verbs, verb)
                && r.urls
                    .iter()
                    .any(|u| u == "*" || u == url || u.strip_suffix('*').is_some_and(|prefix| url.starts_with(prefix)))
        }
        Atom::Resource {
            group,
            resource,
            verb,
            name,
        } => {
            allows(&r.verbs, verb)
                && allows(&r.groups, group)
                && resource_allows(&r.resources, resource)
                && (r.names.is_empty() || name.as_ref().is_some_and(|n| r.names.contains(n)))
        }
    }
}

/// The permissions of `head` that no rule of `base` gives.
fn uncovered(head: &[Rule], base: &[Rule]) -> Vec<Atom> {
    let mut out: Vec<Atom> = head
        .iter()
        .flat_map(atoms)
        .filter(|a| !base.iter().any(|r| covers(r, a)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `verbs [delete, get] on secrets, pods/exec; get on /metrics`, grouped
/// by the verbs that each resource gains.
fn describe(atoms: &[Atom]) -> String {
    let mut by_target: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for a in atoms {
        let (target, verb) = match a {
            Atom::Url { url, verb } => (url.clone(), verb.as_str()),
            Atom::Resource {
                group,
                resource,
                verb,
                name,
            } => {
                let g = if group.is_empty() {
                    String::new()
                } else {
                    format!("{group}/")
                };
                let n = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                (format!("{g}{resource}{n}"), verb.as_str())
            }
        };
        by_target.entry(target).or_default().push(verb);
    }
    let mut by_verbs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (target, mut verbs) in by_target {
        verbs.sort_unstable();
        verbs.dedup();
        by_verbs.entry(verbs.join(", ")).or_default().push(target);
    }
    by_verbs
        .into_iter()
        .map(|(verbs, targets)| format!("[{verbs}] on {}", targets.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn widening_is_what_no_old_rule_covers() {
        let old = rules(
            &json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments/*"], "verbs": ["*"]}]}),
        );
        let new = rules(
            &json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        );
        let added = uncovered(&new, &old);
        assert_eq!(describe(&added), "[get] on /metrics; [list] on secrets");
        // A resource name narrows; dropping it widens.
        let named = rules(
            &json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["tls"], "verbs": ["get"]}]}),
        );
        let all = rules(&json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}));
        assert!(uncovered(&named, &all).is_empty());
        assert_eq!(describe(&uncovered(&all, &named)), "[get] on secrets");
    }
}
