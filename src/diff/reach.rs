//! What a change can reach: the environments, and in each the components,
//! whose generated objects can differ between two revisions, found from
//! the input files that differ. `strata diff` compiles only those on both
//! sides; everything else is the same on both by construction.
//!
//! The mapping is conservative. A change to a file strata reads but this
//! module cannot pin to a component or an environment — `strata.yaml`,
//! `strata.lock`, a profile, a substrate type, a template, a contract (its
//! secrets are hidden in every environment's output), a schema folder in
//! the repository — reaches everything; so do two sides whose contracts
//! hold different secrets (an environment added or removed), which the
//! diff finds once both are loaded. Files outside what strata reads (the
//! rendered tree, a README, CI configuration) reach nothing.

use std::collections::{BTreeMap, BTreeSet};

use crate::load::{Platform, component::Chart, project};
use crate::pipeline::Reach;
use crate::world::{World, join};

/// Deepest folder walked under an input root; deeper files are compared
/// as a whole folder would be: they reach everything.
const MAX_DEPTH: usize = 32;

/// The two sides of a diff, and the files known to read the same on both
/// without reading them again (the base's files taken from the working
/// tree because git's object id of the file is the blob's).
pub struct Sides<'a> {
    pub head: &'a dyn World,
    pub base: &'a dyn World,
    pub known_same: &'a BTreeSet<String>,
}

/// The reach of the differences between the two sides (the head is the
/// working tree, loaded as `platform`). `None`: everything.
pub fn reach(sides: &Sides<'_>, platform: &Platform) -> Option<Reach> {
    let p = &platform.project;
    if !sides.same(project::FILE) || !sides.same(crate::charts::lock::FILE) {
        return None;
    }
    // With strata.yaml the same on both sides, so are the folders it names.
    let mut changed = BTreeSet::new();
    for root in [&p.platform, &p.environments] {
        changed.extend(sides.differing(root)?);
    }
    for root in [&p.profiles, &p.substrates, &p.templates] {
        if !sides.differing(root)?.is_empty() {
            return None;
        }
    }
    for location in p.schemas.iter().flatten() {
        if let Ok(dir) = crate::world::normalize(location)
            && !sides.differing(&dir)?.is_empty()
        {
            return None;
        }
    }
    let mut reach = Reach::default();
    for env in platform.environments.values() {
        if !sides.same(&env.contract_path.0) {
            return None;
        }
    }
    // A local chart outside its component's folder reaches the components
    // that use it.
    for c in platform.components.values() {
        if let Chart::Local { path } = &c.chart
            && path != &c.dir
            && !crate::world::below(path, &c.dir)
            && !sides.differing(path)?.is_empty()
        {
            add(&mut reach, platform, None, &c.name);
        }
    }
    for path in &changed {
        if let Some(file) = path.strip_prefix(&format!("{}/", p.environments)) {
            let env = file.strip_suffix(".yaml").filter(|e| !e.contains('/'))?;
            reach.envs.insert(env.to_owned(), None);
            continue;
        }
        // Anything else read from the platform folder reaches everything.
        let rest = path.strip_prefix(&format!("{}/", p.platform))?;
        // A file beside the component folders is not read.
        let Some((component, file)) = rest.split_once('/') else {
            continue;
        };
        if file == "config.yaml" {
            for c in dependents(platform, component) {
                add(&mut reach, platform, None, &c);
            }
            continue;
        }
        // A values layer reaches the environments that take it.
        let takers: Vec<&str> = platform
            .environments
            .values()
            .filter(|e| platform.layer_files(e).iter().any(|l| l == file))
            .map(|e| e.name.as_str())
            .collect();
        if takers.is_empty() || takers.len() == platform.environments.len() {
            add(&mut reach, platform, None, component);
        } else {
            for env in takers {
                add(&mut reach, platform, Some(env), component);
            }
        }
    }
    Some(reach)
}

/// Marks `component` reached in `env`, or in every environment.
fn add(reach: &mut Reach, platform: &Platform, env: Option<&str>, component: &str) {
    let envs: Vec<&str> = match env {
        Some(e) => vec![e],
        None => platform.environments.keys().map(String::as_str).collect(),
    };
    for env in envs {
        if let Some(only) = reach
            .envs
            .entry(env.to_owned())
            .or_insert_with(|| Some(BTreeSet::new()))
        {
            only.insert(component.to_owned());
        }
    }
}

/// `component` and every component that requires it, directly or not:
/// their order (Flux `dependsOn`, Argo CD sync waves) follows from its
/// `requires:`.
fn dependents(platform: &Platform, component: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::from([component.to_owned()]);
    let mut required_by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in platform.components.values() {
        for (r, _) in &c.requires {
            required_by.entry(r.as_str()).or_default().push(c.name.as_str());
        }
    }
    let mut stack = vec![component.to_owned()];
    while let Some(c) = stack.pop() {
        for d in required_by.get(c.as_str()).into_iter().flatten() {
            if out.insert((*d).to_owned()) {
                stack.push((*d).to_owned());
            }
        }
    }
    out
}

impl Sides<'_> {
    /// Whether a file reads the same on both sides (absent on both counts).
    fn same(&self, path: &str) -> bool {
        if self.known_same.contains(path) {
            return true;
        }
        match (self.head.read(path), self.base.read(path)) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }

    /// The files under `root` (a folder or a file) that differ between the
    /// sides; `None` when the walk goes deeper than [`MAX_DEPTH`].
    fn differing(&self, root: &str) -> Option<BTreeSet<String>> {
        use rayon::prelude::*;
        let mut files = BTreeSet::new();
        if self.head.is_file(root) || self.base.is_file(root) {
            files.insert(root.to_owned());
        }
        let (head, base) = rayon::join(|| files_under(self.head, root), || files_under(self.base, root));
        files.extend(head?);
        files.extend(base?);
        let files: Vec<String> = files.into_iter().collect();
        Some(
            files
                .into_par_iter()
                .with_max_len(16)
                .filter(|f| !self.same(f))
                .collect(),
        )
    }
}

/// Every file under the folder `root` of one side, a level of folders at a
/// time, each folder listed on its own thread (a platform holds thousands
/// of files); `None` when the walk goes deeper than [`MAX_DEPTH`].
fn files_under(world: &dyn World, root: &str) -> Option<Vec<String>> {
    use rayon::prelude::*;
    let mut files = Vec::new();
    let mut level = vec![root.to_owned()];
    for depth in 0.. {
        if level.is_empty() {
            break;
        }
        if depth > MAX_DEPTH {
            return None;
        }
        let listed: Vec<Vec<(String, bool)>> = level
            .par_iter()
            .with_max_len(1)
            .map(|dir| {
                let entries = world.list(dir).unwrap_or_default();
                entries.into_iter().map(|e| (join(dir, &e.name), e.is_dir)).collect()
            })
            .collect();
        level = Vec::new();
        for (path, is_dir) in listed.into_iter().flatten() {
            if is_dir {
                level.push(path);
            } else {
                files.push(path);
            }
        }
    }
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Sources;
    use crate::world::MemWorld;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/homelab");

    /// The example platform's inputs (not its rendered tree), with edits.
    fn world(edits: &[(&str, Option<&str>)]) -> MemWorld {
        let mut files = BTreeMap::new();
        let mut stack = vec![std::path::PathBuf::from(FIXTURE)];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                let rel = path.strip_prefix(FIXTURE).unwrap().to_string_lossy().replace('\\', "/");
                if rel == "rendered" || rel == ".strata" {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        for (p, t) in edits {
            match t {
                Some(t) => files.insert((*p).to_owned(), t.as_bytes().to_vec()),
                None => files.remove(*p),
            };
        }
        let mut w = MemWorld::new("2026-01-01");
        for (p, bytes) in files {
            w.insert(&p, bytes);
        }
        w
    }

    fn changed(edits: &[(&str, Option<&str>)]) -> Option<Reach> {
        let base = world(&[]);
        let head = world(edits);
        let p = crate::load::load(&head, &Sources::default(), None).unwrap();
        let sides = Sides {
            head: &head,
            base: &base,
            known_same: &BTreeSet::new(),
        };
        reach(&sides, &p)
    }

    fn envs(pairs: &[(&str, Option<&[&str]>)]) -> Option<Reach> {
        Some(Reach {
            envs: pairs
                .iter()
                .map(|(e, cs)| {
                    let set = cs.map(|cs| cs.iter().map(|c| (*c).to_owned()).collect());
                    ((*e).to_owned(), set)
                })
                .collect(),
        })
    }

    fn every_env(components: &[&str]) -> Option<Reach> {
        envs(&[
            ("dev", Some(components)),
            ("production", Some(components)),
            ("staging", Some(components)),
        ])
    }

    const COREDNS: &str = "gitops/platform/coredns";

    #[test]
    fn nothing_changed_reaches_nothing() {
        assert_eq!(changed(&[]), envs(&[]));
        assert_eq!(changed(&[("README.md", Some("changed\n"))]), envs(&[]));
        assert_eq!(changed(&[("rendered/dev/x.yaml", Some("a: 1\n"))]), envs(&[]));
    }

    #[test]
    fn an_environment_layer_reaches_that_environment() {
        let path = format!("{COREDNS}/values-dev.yaml");
        let r = changed(&[(&path, Some("replicaCount: 3\n"))]);
        assert_eq!(r, envs(&[("dev", Some(&["coredns"]))]));
        // A new layer file too.
        let path = format!("{COREDNS}/values-staging.yaml");
        let r = changed(&[(&path, Some("replicaCount: 3\n"))]);
        assert_eq!(r, envs(&[("staging", Some(&["coredns"]))]));
    }

    #[test]
    fn a_substrate_layer_reaches_the_environments_on_that_substrate() {
        let path = "gitops/platform/cilium/values-substrate-talos.yaml";
        let r = changed(&[(path, Some("k8sServiceHost: 10.0.0.1\n"))]);
        assert_eq!(
            r,
            envs(&[("production", Some(&["cilium"])), ("staging", Some(&["cilium"]))])
        );
    }

    #[test]
    fn the_base_layer_reaches_every_environment() {
        let path = format!("{COREDNS}/values.yaml");
        assert_eq!(changed(&[(&path, Some("replicaCount: 2\n"))]), every_env(&["coredns"]));
    }

    #[test]
    fn a_config_change_reaches_the_dependents() {
        let path = "gitops/platform/cert-manager/config.yaml";
        let text = std::fs::read_to_string(format!("{FIXTURE}/{path}")).unwrap() + "# touched\n";
        let r = changed(&[(path, Some(&text))]);
        assert_eq!(r, every_env(&["argocd", "cert-manager", "external-secrets", "traefik"]));
    }

    #[test]
    fn an_environment_file_reaches_the_whole_environment() {
        let path = "environments/staging.yaml";
        let text = std::fs::read_to_string(format!("{FIXTURE}/{path}")).unwrap() + "# touched\n";
        assert_eq!(changed(&[(path, Some(&text))]), envs(&[("staging", None)]));
    }

    #[test]
    fn a_removed_component_is_reached() {
        let mut edits: Vec<(String, Option<&str>)> = Vec::new();
        for f in ["config.yaml", "values.yaml", "values-dev.yaml"] {
            edits.push((format!("{COREDNS}/{f}"), None));
        }
        let edits: Vec<(&str, Option<&str>)> = edits.iter().map(|(p, t)| (p.as_str(), *t)).collect();
        assert_eq!(changed(&edits), every_env(&["coredns"]));
    }

    #[test]
    fn project_lock_and_contract_changes_reach_everything() {
        let text = std::fs::read_to_string(format!("{FIXTURE}/strata.yaml")).unwrap() + "# touched\n";
        assert_eq!(changed(&[("strata.yaml", Some(&text))]), None);
        assert_eq!(changed(&[("strata.lock", Some("charts: []\n"))]), None);
        let path = "contracts/dev.json";
        let text = std::fs::read_to_string(format!("{FIXTURE}/{path}")).unwrap() + "\n";
        assert_eq!(changed(&[(path, Some(&text))]), None);
    }
}
