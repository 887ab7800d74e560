//! The container images a change adds, changes and removes, per
//! environment. Images are read from every list of containers in an
//! object (`containers`, `initContainers`, `ephemeralContainers`, at any
//! depth: a Deployment's pod template, a CronJob's job template, and the
//! pod specs custom resources embed), each by its workload and container
//! name, so that a new tag is one image changed, not one removed and one
//! added.

use std::collections::BTreeMap;

use serde_json::Value as J;

use super::Pair;

/// One image change in one environment, and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageChange {
    pub env: String,
    /// The image before (`None`: added).
    pub from: Option<String>,
    /// The image after (`None`: removed).
    pub to: Option<String>,
    /// `Kind namespace/name` and container of each place, sorted.
    pub places: Vec<String>,
}

impl ImageChange {
    pub fn status(&self) -> &'static str {
        match (&self.from, &self.to) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        }
    }
}

/// The images of one object, by container: `(list, name) → image`.
fn images(v: &J) -> BTreeMap<String, String> {
    fn walk(v: &J, path: &str, out: &mut BTreeMap<String, String>) {
        match v {
            J::Object(m) => {
                for (k, child) in m {
                    let here = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let is_list = matches!(k.as_str(), "containers" | "initContainers" | "ephemeralContainers");
                    match (is_list, child) {
                        (true, J::Array(items)) => {
                            for (i, c) in items.iter().enumerate() {
                                let Some(image) = c.get("image").and_then(J::as_str) else {
                                    continue;
                                };
                                let name = c
                                    .get("name")
                                    .and_then(J::as_str)
                                    .map_or_else(|| i.to_string(), str::to_owned);
                                let container = if k == "containers" {
                                    name
                                } else {
                                    format!("{name} ({k})")
                                };
                                // Where a template holds two pod specs, the path tells them apart.
                                let prefix = path.rsplit_once(".spec").map_or("", |(p, _)| p);
                                let key = if prefix.is_empty()
                                    || prefix == "spec.template"
                                    || prefix == "spec.jobTemplate.spec.template"
                                {
                                    container
                                } else {
                                    format!("{prefix}: {container}")
                                };
                                out.insert(key, image.to_owned());
                            }
                        }
                        _ => walk(child, &here, out),
                    }
                }
            }
            J::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    // A Secret's or ConfigMap's data holds no running container.
    if !matches!(v.get("kind").and_then(J::as_str), Some("Secret" | "ConfigMap")) {
        walk(v, "", &mut out);
    }
    out
}

/// Image changes per environment, gathered object by object.
#[derive(Default)]
pub(super) struct Images {
    /// `(env, from, to) → places`.
    changes: BTreeMap<(String, Option<String>, Option<String>), Vec<String>>,
}

impl Images {
    pub(super) fn object(&mut self, pair: &Pair<'_>) {
        let (old, new) = (
            pair.base.map(images).unwrap_or_default(),
            pair.head.map(images).unwrap_or_default(),
        );
        if old.is_empty() && new.is_empty() {
            return;
        }
        let mut containers: Vec<&String> = old.keys().chain(new.keys()).collect();
        containers.sort();
        containers.dedup();
        for c in containers {
            let (a, b) = (old.get(c), new.get(c));
            if a == b {
                continue;
            }
            let place = format!("{} ({c})", pair.display());
            self.changes
                .entry((pair.env.to_owned(), a.cloned(), b.cloned()))
                .or_default()
                .push(place);
        }
    }

    pub(super) fn finish(self) -> Vec<ImageChange> {
        self.changes
            .into_iter()
            .map(|((env, from, to), mut places)| {
                places.sort();
                places.dedup();
                ImageChange { env, from, to, places }
            })
            .collect()
    }
}

/// An image reference's repository and its tag or digest: `ghcr.io/a/b`
/// and `1.2` of `ghcr.io/a/b:1.2` (a port in the registry is not a tag).
pub fn split(image: &str) -> (&str, &str) {
    if let Some((repo, digest)) = image.split_once('@') {
        return (repo, digest);
    }
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (image, ""),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn images_by_container_in_any_pod_spec() {
        let deploy = json!({"kind": "Deployment", "spec": {"template": {"spec": {
            "initContainers": [{"name": "init", "image": "busybox:1.36"}],
            "containers": [{"name": "web", "image": "nginx:1.27"}, {"name": "side", "image": "envoy:1"}]}}}});
        let i = images(&deploy);
        assert_eq!(i["web"], "nginx:1.27");
        assert_eq!(i["init (initContainers)"], "busybox:1.36");
        let cron = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "job", "image": "backup:2"}]}}}}}});
        assert_eq!(images(&cron)["job"], "backup:2");
        assert!(images(&json!({"kind": "ConfigMap", "data": {"containers": "x"}})).is_empty());
    }

    #[test]
    fn split_keeps_a_registry_port() {
        assert_eq!(split("ghcr.io/a/b:1.2"), ("ghcr.io/a/b", "1.2"));
        assert_eq!(split("localhost:5000/a"), ("localhost:5000/a", ""));
        assert_eq!(split("a@sha256:00"), ("a", "sha256:00"));
    }
}
