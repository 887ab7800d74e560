//! ORD001: a custom resource is applied before its CRD.

use std::collections::{BTreeMap, BTreeSet};

use crate::invariants::{Ctx, Finding, Sink};
use crate::load::{Component, Platform, Target};
use crate::render::hydrate::Delivery;
use crate::render::scopes::group_of;
use crate::render::{Object, Source};

pub const NAME: &str = "custom-resource-before-its-crd";

doc!(
    r#"## What it does
Checks that every custom resource the environment applies is applied after
its CustomResourceDefinition: the CRD ships with the same component (strata
applies a component's CRDs first), or with a component it requires,
directly or through others, or, in a hydrated environment, in `crds/`
(applied before every component), or its API group is listed in
`crds_provided:` in strata.yaml. Which component ships a CRD is read from
what the charts render and the manifests hold, and, for a chart that is not
rendered here or whose controller registers its CRDs when it starts
(Cilium's operator), from its chart profile's `crd_groups`. The engines'
own kinds (Flux's toolkit, Argo CD's) come with the engine.

## Why is this bad?
Flux dry-runs every object of a Kustomization before it applies any: one
custom resource whose CRD is not installed yet fails the whole
Kustomization, and nothing of it is applied until a later retry finds the
CRD (fluxcd/kustomize-controller#1194). Argo CD fails the sync of the
resource's wave the same way. On a fresh cluster the two components race,
and which one wins decides whether the platform comes up.

## Example
```yaml
# gitops/platform/issuers/config.yaml: a ClusterIssuer in manifests/
component: issuers
requires: [traefik]        # but cert-manager ships the ClusterIssuer CRD
```

Use instead:
```yaml
requires: [traefik, cert-manager]
```
or, when the CRD is installed apart from the platform (by the substrate
stack), list its group in strata.yaml: `crds_provided: [cert-manager.io]`.
"#
);

/// Kubernetes' own API groups, whose kinds need no CRD.
const KUBERNETES_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Who ships the CRD of a kind, as far as strata can tell.
struct Shippers<'a> {
    /// `group/Kind` → components whose charts or manifests hold the CRD.
    kinds: BTreeMap<String, BTreeSet<&'a str>>,
    /// API group → components whose profiles name it.
    groups: BTreeMap<String, BTreeSet<&'a str>>,
    /// API group → components whose chart was not rendered here and holds
    /// a CRD of it (as strata reads the chart without helm).
    unrendered: BTreeMap<String, BTreeSet<&'a str>>,
    /// Components whose chart was not rendered here and that strata cannot
    /// read at all: any of them may ship any CRD.
    unknown: Vec<&'a str>,
}

impl<'a> Shippers<'a> {
    fn of(ctx: &'a Ctx<'_>) -> Shippers<'a> {
        let mut kinds: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        let objects = ctx
            .render
            .workload_objects()
            .chain(ctx.render.charts.values().flatten());
        for o in objects.filter(|o| o.kind() == "CustomResourceDefinition") {
            let (Some(group), Some(kind), Some(c)) = (
                o.value["spec"]["group"].as_str(),
                o.value["spec"]["names"]["kind"].as_str(),
                o.component.as_deref(),
            ) else {
                continue;
            };
            kinds.entry(format!("{group}/{kind}")).or_default().insert(c);
        }
        let mut groups: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        let mut unrendered: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        let mut unknown = Vec::new();
        for c in ctx.platform.components_in(ctx.env) {
            for b in ctx.bindings(c) {
                for (g, _) in &b.profile.crd_groups {
                    groups.entry(g.clone()).or_default().insert(c.name.as_str());
                }
            }
            if c.chart == crate::load::Chart::None || ctx.render.inflated(&c.name) {
                continue;
            }
            match ctx.render.chart_info.get(&c.name) {
                Some(info) => {
                    for g in all_crd_groups(info) {
                        unrendered.entry(g).or_default().insert(c.name.as_str());
                    }
                }
                None => unknown.push(c.name.as_str()),
            }
        }
        Shippers {
            kinds,
            groups,
            unrendered,
            unknown,
        }
    }

    fn of_kind(&self, group: &str, kind: &str) -> BTreeSet<&'a str> {
        let mut out = self.kinds.get(&format!("{group}/{kind}")).cloned().unwrap_or_default();
        out.extend(self.groups.get(group).into_iter().flatten());
        out
    }
}

/// The CRD groups a chart and its bundled subcharts hold.
fn all_crd_groups(info: &crate::charts::ChartInfo) -> BTreeSet<String> {
    let mut out = info.crd_groups.clone();
    for s in info.subcharts.values() {
        out.extend(all_crd_groups(s));
    }
    out
}

/// The groups whose CRDs come with the environment's GitOps engines.
fn engine_group(group: &str, targets: &[Target]) -> bool {
    (targets.contains(&Target::Flux) && group.ends_with(".toolkit.fluxcd.io"))
        || (targets.contains(&Target::Argo) && group == "argoproj.io")
}

/// Every component `from` requires, directly or through others.
fn requires_closure<'a>(platform: &'a Platform, from: &[&'a str]) -> BTreeSet<&'a str> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack: Vec<&str> = from.to_vec();
    while let Some(c) = stack.pop() {
        let Some(comp) = platform.components.get(c) else {
            continue;
        };
        for (r, _) in &comp.requires {
            if seen.insert(r.as_str()) {
                stack.push(r.as_str());
            }
        }
    }
    seen
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let shippers = Shippers::of(ctx);
    let targets = ctx.platform.targets(ctx.env);
    let objects = ctx
        .render
        .workload_objects()
        .chain(ctx.render.charts.values().flatten())
        .filter(|o| o.source != Source::Generated);
    for o in objects {
        let group = group_of(o.api_version());
        if KUBERNETES_GROUPS.contains(&group)
            || ctx.platform.project.provided_group(group)
            || engine_group(group, &targets)
        {
            continue;
        }
        if o.component.as_deref().is_some_and(|c| !ctx.judges(c)) {
            continue;
        }
        let mut ships = shippers.of_kind(group, o.kind());
        // Nothing rendered here ships it: a chart that was not rendered
        // may (see `report`).
        let unrendered = ships.is_empty();
        if unrendered {
            ships = shippers.unrendered.get(group).cloned().unwrap_or_default();
        }
        let needs: Vec<&str> = match &o.component {
            Some(c) => vec![c.as_str()],
            None => ctx.render.cluster_requires.iter().map(String::as_str).collect(),
        };
        if needs.iter().any(|c| ships.contains(c)) {
            continue;
        }
        // A hydrated environment applies every CRD of a hydrated
        // component first, in crds/.
        if ships.iter().any(|s| ctx.render.plan.of(s) == Delivery::Hydrated) {
            continue;
        }
        let before = requires_closure(ctx.platform, &needs);
        if ships.iter().any(|s| before.contains(s)) {
            continue;
        }
        let unknown = if unrendered { shippers.unknown.as_slice() } else { &[] };
        report(ctx, sink, o, group, (&ships, unrendered, unknown), &needs);
    }
}

/// Who ships the CRD (`ships`), whether their charts were not rendered
/// here, and the components whose charts strata could not read at all.
type Shipping<'s, 'a> = (&'s BTreeSet<&'a str>, bool, &'s [&'a str]);

fn report(ctx: &Ctx<'_>, sink: &mut Sink, o: &Object, group: &str, shipping: Shipping<'_, '_>, needs: &[&str]) {
    let (ships, unrendered, unknown) = shipping;
    let what = format!("{} ({})", o.id(), o.api_version());
    let origin = o.field_origin("kind");
    let component: Option<&Component> = o.component.as_ref().and_then(|c| ctx.platform.components.get(c));
    let applied_by = match component {
        Some(c) => format!("component `{}`", c.name),
        None => "the generated cluster objects".to_owned(),
    };
    let mut f = match ships.iter().next() {
        Some(first) => {
            let quoted: Vec<String> = ships.iter().map(|s| format!("`{s}`")).collect();
            let list = crate::load::decode::list_names(quoted.iter().map(String::as_str), ", ");
            let (verb, why) = if unrendered {
                (
                    "would ship",
                    format!(
                        " (its chart was not rendered here; it holds a CRD of {group}, read from the chart without helm)"
                    ),
                )
            } else if ships.len() == 1 {
                ("ships", String::new())
            } else {
                ("ship", String::new())
            };
            let mut f = Finding::new(
                origin,
                format!(
                    "{what} may be applied before its CRD: {list} {verb} it{why}, and {applied_by} does not require {}",
                    if ships.len() == 1 { "it" } else { "any of them" }
                ),
            )
            .label("applied before its CRD");
            f = match component {
                Some(c) => f.help(format!(
                    "add `{first}` to `requires` in {}, so that the engines apply it first",
                    c.config_path()
                )),
                None => f.help(format!(
                    "the substrate type's generated objects require {}; add `{first}` to its `generate.requires`",
                    needs.join(", ")
                )),
            };
            f
        }
        None if !unknown.is_empty() => {
            let quoted: Vec<String> = unknown.iter().map(|s| format!("`{s}`")).collect();
            let list = crate::load::decode::list_names(quoted.iter().map(String::as_str), ", ");
            Finding::new(
                origin,
                format!(
                    "{what}: no rendered chart or manifest of the environment ships the CRD of {group}/{}, and the chart{} of {list} {} not rendered here, so strata cannot tell whether {} does",
                    o.kind(),
                    if unknown.len() == 1 { "" } else { "s" },
                    if unknown.len() == 1 { "was" } else { "were" },
                    if unknown.len() == 1 { "it" } else { "one of them" },
                ),
            )
            .label("its CRD's component not known")
            .help(format!(
                "render the charts (install helm v4 and run `strata charts pull`), or add the component that installs the CRD to `requires`; when the cluster has it before any component runs, list `{group}` under `crds_provided:` in strata.yaml"
            ))
        }
        None => Finding::new(
            origin,
            format!("{what}: no component of the environment ships the CRD of {}/{}", group, o.kind()),
        )
        .label("no CRD for this kind")
        .help(format!(
            "add the component that installs it to `requires`, or, when the cluster has the CRD before any component runs, list `{group}` under `crds_provided:` in strata.yaml"
        )),
    };
    if let Source::Chart { template } = &o.source {
        f = f.note(format!("rendered by {template}"));
    }
    if let Some(c) = component {
        f = f.component(&c.name);
    }
    sink.push(f.object(o.id()));
}
