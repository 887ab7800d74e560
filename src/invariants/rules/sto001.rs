//! STO001: Longhorn is kept off control-plane nodes, or keeps more replicas than hosts.

use serde_json::Value as J;

use crate::invariants::facts::{Val, show_json};
use crate::invariants::selector::{Labels, Selector};
use crate::invariants::{Ctx, Finding, Sink};

pub const NAME: &str = "storage-off-hyperconverged-nodes";

doc!(
    r#"## What it does
For a storage chart (Longhorn), looks at everything that restricts where its
node components run and flags each one that excludes a control-plane node of
the contract: with the chart rendered by helm, the node selectors of the
Deployments and DaemonSets it renders and the
`system-managed-components-node-selector` of its default-settings
ConfigMap (for the components Longhorn creates itself); through the chart
profile otherwise — `global.nodeSelector`, `longhornManager.nodeSelector`,
`longhornDriver.nodeSelector` and
`defaultSettings.systemManagedComponentsNodeSelector`. It also flags a
volume replica count above the number of physical hosts: the default
StorageClass's, Longhorn's `default-replica-count` setting (Longhorn's own
default, 3, when the chart writes none), and `numberOfReplicas` of any
Longhorn StorageClass rendered or in `manifests/`.

## Why is this bad?
ADR 007 runs workloads, Longhorn and etcd on the same three control-plane
nodes: a node selector left over from a worker-only design keeps Longhorn
(and its data disks) off exactly the nodes that exist. With more replicas
per volume than hosts, two replicas share a host (or stay unscheduled and
the volume runs degraded), so one host failure can take a volume's data.

## Example
```yaml
# gitops/platform/longhorn/values-substrate-talos.yaml
longhornManager:
  nodeSelector:
    node-role.kubernetes.io/worker: ""
```

Use instead:
```yaml
# no node selector: Longhorn runs on every node
persistence:
  defaultClassReplicaCount: 3   # at most the number of hosts
```
"#
);

/// `key:value;key2:value2`, Longhorn's string form of a node selector.
fn parse_setting_selector(s: &str) -> Labels {
    s.split(';')
        .filter_map(|p| {
            let p = p.trim();
            (!p.is_empty()).then(|| {
                let (k, v) = p.split_once(':').unwrap_or((p, ""));
                (k.trim().to_owned(), v.trim().to_owned())
            })
        })
        .collect()
}

fn check_selector(ctx: &Ctx<'_>, c: &crate::load::Component, v: &Val, sel: &Selector, sink: &mut Sink) {
    let excluded: Vec<_> = ctx
        .nodes
        .iter()
        .filter(|n| n.is_control_plane() && !sel.matches(&n.labels))
        .collect();
    if excluded.is_empty() {
        return;
    }
    let req = sel.first_failing(&excluded[0].labels);
    let origin = match (req, &v.node) {
        (Some(crate::invariants::selector::Req::Label { key, .. }), Some(n)) => {
            n.get(key).map_or_else(|| v.origin.clone(), |e| e.origin.clone())
        }
        _ => v.origin.clone(),
    };
    let names: Vec<&str> = excluded.iter().map(|n| n.name.as_str()).collect();
    sink.push(
        Finding::new(
            origin,
            format!(
                "`{}` keeps Longhorn off control-plane node(s) {}; on hyperconverged nodes it must run there too",
                v.path,
                names.join(", ")
            ),
        )
        .label(match req {
            Some(r) => format!("`{}` excludes {}", r.describe(), excluded[0].name),
            None => "excludes control-plane nodes".to_owned(),
        })
        .notes(ctx.default_note(Some(c), v))
        .help(format!(
            "remove `{}` (ADR 007: workloads, Longhorn and etcd share the nodes)",
            v.path
        ))
        .component(&c.name),
    );
}

/// Longhorn's settings from a rendered ConfigMap's YAML document.
fn settings_in(o: &crate::render::Object, key: &str) -> Option<J> {
    let text = o.value["data"][key].as_str()?;
    let file: std::sync::Arc<str> = std::sync::Arc::from(key);
    crate::yaml::parse_plain_multi(&file, text).ok()?.into_iter().next()
}

fn replica_finding(ctx: &Ctx<'_>, c: Option<&crate::load::Component>, v: &Val, n: i64, hosts: i64, sink: &mut Sink) {
    let mut f = Finding::new(
        v.origin.clone(),
        format!(
            "{} asks for {n} replicas per volume, but the nodes run on {hosts} host(s)",
            v.show()
        ),
    )
    .label(Ctx::value_label(v))
    .notes(ctx.default_note(c, v))
    .note("replicas beyond the number of hosts share a host, or stay unscheduled and leave volumes degraded")
    .help(ctx.fix(c, v, &hosts.to_string()));
    if let Some(c) = c {
        f = f.component(&c.name);
    }
    sink.push(f);
}

fn as_count(v: &J) -> Option<i64> {
    match v {
        J::String(s) => s.trim().parse::<i64>().ok(),
        J::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// Longhorn rendered by helm: its real workloads and settings.
fn check_rendered(
    ctx: &Ctx<'_>,
    c: &crate::load::Component,
    b: &crate::profiles::Binding<'_>,
    storage: &crate::profiles::Storage,
    sink: &mut Sink,
) {
    let nested = b.nested.as_ref().map(|n| (b.profile, n));
    let hosts = ctx.host_count() as i64;
    for w in ctx
        .workloads
        .iter()
        .filter(|w| w.component.is_some_and(|x| x.name == c.name))
        .filter(|w| matches!(w.judged, crate::invariants::facts::Judged::Chart { .. }))
    {
        let Some(v) = w.node_selector.as_ref().filter(|v| !v.is_empty()) else {
            continue;
        };
        match Selector::from_map(&v.value) {
            Ok(sel) => check_selector(ctx, c, v, &sel, sink),
            Err(e) => sink.push(
                Finding::new(v.origin.clone(), format!("`{}`: {e}", v.path))
                    .label("not a node selector")
                    .component(&c.name),
            ),
        }
    }
    let objects = ctx.render.charts.get(&c.name).into_iter().flatten();
    for o in objects.filter(|o| o.kind() == "ConfigMap") {
        let template = match &o.source {
            crate::render::Source::Chart { template } => template.clone(),
            _ => String::new(),
        };
        let traced = |field: &str, value: &J, hint: Option<&crate::profiles::ValueRef>| {
            crate::invariants::trace::trace(
                c,
                ctx.merged(c),
                ctx.render.chart_info.get(&c.name).map(AsRef::as_ref),
                &template,
                field,
                value,
                hint.map(|r| r.path.as_str()),
            )
        };
        if o.value["data"]["default-setting.yaml"].is_string() {
            // Null when the chart writes no setting at all.
            let settings = settings_in(o, "default-setting.yaml").unwrap_or(J::Null);
            if let Some(J::String(s)) = settings.get("system-managed-components-node-selector")
                && !s.trim().is_empty()
            {
                let v = traced(
                    "system-managed-components-node-selector",
                    &J::String(s.clone()),
                    storage.system_managed_node_selector.as_ref(),
                );
                let labels = parse_setting_selector(s);
                let sel = Selector::from_map(&serde_json::to_value(&labels).unwrap_or(J::Null)).unwrap_or_default();
                check_selector(ctx, c, &v, &sel, sink);
            }
            let v = match settings.get("default-replica-count") {
                Some(raw) => Some(traced(
                    "default-replica-count",
                    raw,
                    storage.default_setting_replica_count.as_ref(),
                )),
                // Not written: Longhorn's own default applies, which the
                // profile states.
                None => storage
                    .default_setting_replica_count
                    .as_ref()
                    .map(|r| ctx.value_in(c, nested, r)),
            };
            if let Some(v) = v
                && let Some(n) = as_count(&v.value)
                && hosts > 0
                && n > hosts
            {
                replica_finding(ctx, Some(c), &v, n, hosts, sink);
            }
        }
        if let Some(sc) = settings_in(o, "storageclass.yaml")
            && let Some(raw) = sc.get("parameters").and_then(|p| p.get("numberOfReplicas"))
            && let Some(n) = as_count(raw)
            && hosts > 0
            && n > hosts
        {
            let v = traced("numberOfReplicas", raw, storage.replica_count.as_ref());
            replica_finding(ctx, Some(c), &v, n, hosts, sink);
        }
    }
}

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    // Each storage chart of the environment, itself or a wrapper's switched-on dependency.
    let storages: Vec<(&crate::load::Component, crate::profiles::Binding<'_>)> = ctx
        .platform
        .components_in(ctx.env)
        .flat_map(|c| ctx.bindings(c).into_iter().map(move |b| (c, b)))
        .filter(|(c, b)| b.profile.storage.is_some() && b.nested.as_ref().is_none_or(|n| ctx.dependency_enabled(c, n)))
        .collect();
    if storages.is_empty()
        || ctx.missing_output(
            sink,
            "nodes",
            "that Longhorn runs on every node and keeps no more replicas than hosts",
        )
    {
        return;
    }
    let hosts = ctx.host_count() as i64;
    for (c, b) in &storages {
        let Some(storage) = b.profile.storage.as_ref() else {
            continue;
        };
        if ctx.render.inflated(&c.name) {
            check_rendered(ctx, c, b, storage, sink);
            continue;
        }
        check_profiled(ctx, c, b, storage, hosts, sink);
    }
    for o in ctx.objects_of_kind("StorageClass") {
        if o.value["provisioner"] != J::String("driver.longhorn.io".into()) {
            continue;
        }
        let v = &o.value["parameters"]["numberOfReplicas"];
        let n = match v {
            J::String(s) => s.trim().parse::<i64>().ok(),
            J::Number(n) => n.as_i64(),
            _ => None,
        };
        if let Some(n) = n
            && hosts > 0
            && n > hosts
        {
            let mut f = Finding::new(
                o.field_origin("parameters.numberOfReplicas"),
                format!(
                    "StorageClass {} asks for {} replicas per volume, but the nodes run on {hosts} host(s)",
                    o.name(),
                    show_json(v)
                ),
            )
            .label("numberOfReplicas")
            .help(format!("set numberOfReplicas to \"{hosts}\", one replica per host"))
            .object(o.id());
            if let Some(c) = &o.component {
                f = f.component(c);
            }
            sink.push(f);
        }
    }
}

/// STO001 through the storage chart's profile, for a chart not rendered.
fn check_profiled(
    ctx: &Ctx<'_>,
    c: &crate::load::Component,
    b: &crate::profiles::Binding<'_>,
    storage: &crate::profiles::Storage,
    hosts: i64,
    sink: &mut Sink,
) {
    let nested = b.nested.as_ref().map(|n| (b.profile, n));
    for r in &storage.node_selectors {
        let v = ctx.value_in(c, nested, r);
        if v.is_empty() {
            continue;
        }
        match Selector::from_map(&v.value) {
            Ok(sel) => check_selector(ctx, c, &v, &sel, sink),
            Err(e) => sink.push(
                Finding::new(v.origin.clone(), format!("`{}`: {e}", v.path))
                    .label("not a node selector")
                    .component(&c.name),
            ),
        }
    }
    if let Some(r) = &storage.system_managed_node_selector {
        let v = ctx.value_in(c, nested, r);
        if let J::String(s) = &v.value
            && !s.trim().is_empty()
        {
            let labels = parse_setting_selector(s);
            let sel = Selector::from_map(&serde_json::to_value(&labels).unwrap_or(J::Null)).unwrap_or_default();
            check_selector(ctx, c, &v, &sel, sink);
        }
    }
    if hosts == 0 {
        return;
    }
    for r in [&storage.replica_count, &storage.default_setting_replica_count]
        .into_iter()
        .flatten()
    {
        let v = ctx.value_in(c, nested, r);
        let Some(n) = v.as_i64() else { continue };
        if n > hosts {
            sink.push(
                Finding::new(
                    v.origin.clone(),
                    format!(
                        "{} asks for {n} replicas per volume, but the nodes run on {hosts} host(s)",
                        v.show()
                    ),
                )
                .label(Ctx::value_label(&v))
                .notes(ctx.default_note(Some(c), &v))
                .note(
                    "replicas beyond the number of hosts share a host, or stay unscheduled and leave volumes degraded",
                )
                .help(format!("set `{}: {hosts}`, one replica per host", v.path))
                .component(&c.name),
            );
        }
    }
}
