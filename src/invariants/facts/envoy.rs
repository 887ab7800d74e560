//! The Service Envoy Gateway creates for a Gateway. Envoy Gateway reads
//! the Service's settings from EnvoyProxy resources in three layers: the
//! one the Gateway references (`spec.infrastructure.parametersRef`, in its
//! namespace), the one its GatewayClass references (`spec.parametersRef`,
//! in its namespace or `default`), and, from v1.7, the default of its own
//! configuration (`envoyProxy` of the EnvoyGateway document in ConfigMap
//! `envoy-gateway-config`). The most specific layer replaces the others
//! whole, unless its `mergeType` (v1.8+) asks to merge it over them. What no
//! layer sets gets Envoy Gateway's defaults: type LoadBalancer,
//! `externalTrafficPolicy: Local`; an `envoyService.patch` can change both.
//! (Read from envoyproxy/gateway v1.5.0 to v1.9.0:
//! internal/gatewayapi/envoyproxy_merge.go, api/v1alpha1/shared_types.go,
//! internal/infrastructure/kubernetes/proxy/resource_provider.go.)

use std::collections::BTreeMap;

use serde_json::Value as J;
use sha2::{Digest, Sha256};

use super::gateways::{ENVOY_CONTROLLER, Gateways, Gw, note};
use super::{Ctx, FromGateway, Judged, Service, Val, show_json};
use crate::diag::Severity;
use crate::render::Object;

const GROUP: &str = "gateway.envoyproxy.io";
/// Where an EnvoyProxy keeps the Service's settings.
const SERVICE: &str = "provider.kubernetes.envoyService";
/// The namespace the gateway-helm chart is conventionally installed in.
const CONTROLLER_NAMESPACE: &str = "envoy-gateway-system";

/// What Envoy Gateway's own configuration says, when it is in the tree.
pub(super) struct Settings<'a> {
    pub controller: String,
    /// The ConfigMap `envoy-gateway-config` that holds it.
    config: Option<&'a Object>,
    /// The proxies' Services live in each Gateway's namespace
    /// (`provider.kubernetes.deploy.type: GatewayNamespace`).
    gateway_namespace: bool,
    /// `envoyProxy` of the EnvoyGateway document: the lowest layer.
    default_proxy: Option<J>,
}

/// Where a layer of EnvoyProxy settings comes from.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// An EnvoyProxy object.
    Proxy(&'a Object),
    /// `envoyProxy` in the EnvoyGateway configuration of this ConfigMap.
    Default(&'a Object),
}

/// The layers of EnvoyProxy settings that apply to a Gateway.
struct Layers<'a> {
    gateway: Option<Layer<'a>>,
    class: Option<Layer<'a>>,
    default: Option<Layer<'a>>,
    /// The class's EnvoyProxy merges its Gateways into one Service.
    merged: bool,
}

/// One layer of EnvoyProxy settings.
struct Layer<'a> {
    spec: J,
    from: Place<'a>,
    /// Which reference chose it: `GatewayClass eg`, `Gateway web/public`.
    by: String,
}

impl Layer<'_> {
    fn get(&self, path: &str) -> Option<&J> {
        path.split('.').try_fold(&self.spec, |v, k| v.as_object()?.get(k))
    }

    /// Whether the layer merges over the one below it (Envoy Gateway v1.8+).
    fn merges(&self) -> Option<bool> {
        self.spec["mergeType"]
            .as_str()
            .map(|t| matches!(t, "StrategicMerge" | "JSONMerge"))
    }

    fn what(&self) -> String {
        match self.from {
            Place::Proxy(o) => format!("EnvoyProxy {}/{}", o.namespace().unwrap_or(""), o.name()),
            Place::Default(o) => format!(
                "the default EnvoyProxy of Envoy Gateway's configuration (ConfigMap {}/{})",
                o.namespace().unwrap_or(""),
                o.name()
            ),
        }
    }
}

/// `envoy-` and Envoy Gateway's hashed form of a key (`ns/name`, or a
/// class name): "/" becomes "-", cut to 48 characters without a trailing
/// "-", then "-" and the first 8 hex digits of the key's sha256.
pub fn service_name(key: &str) -> String {
    let mut short: String = key.replace('/', "-").chars().take(48).collect();
    while short.ends_with('-') {
        short.pop();
    }
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("envoy-{short}-{hex}")
}

impl<'a> Ctx<'a> {
    /// Envoy Gateway's configuration, when a chart or manifest renders it.
    pub(super) fn envoy_settings(&self) -> Settings<'a> {
        let config = self.objects().find(|o| {
            o.kind() == "ConfigMap"
                && o.name() == "envoy-gateway-config"
                && o.value["data"]["envoy-gateway.yaml"].is_string()
        });
        let doc = config
            .and_then(|o| o.value["data"]["envoy-gateway.yaml"].as_str())
            .and_then(|text| crate::yaml::parse_plain_multi(&std::sync::Arc::from("envoy-gateway.yaml"), text).ok())
            .and_then(|docs| docs.into_iter().next())
            .unwrap_or(J::Null);
        Settings {
            controller: doc["gateway"]["controllerName"]
                .as_str()
                .unwrap_or(ENVOY_CONTROLLER)
                .to_owned(),
            config,
            gateway_namespace: doc["provider"]["kubernetes"]["deploy"]["type"] == "GatewayNamespace",
            default_proxy: doc.get("envoyProxy").filter(|p| p.is_object()).cloned(),
        }
    }

    /// The EnvoyProxy a reference names, or the warning that Envoy Gateway
    /// rejects what refers to a missing one.
    fn envoy_proxy(
        &self,
        r: &J,
        namespace: &str,
        by: String,
        at: crate::yaml::Origin,
    ) -> Result<Layer<'a>, crate::diag::Diagnostic> {
        let (group, kind, name) = (
            r["group"].as_str(),
            r["kind"].as_str(),
            r["name"].as_str().unwrap_or(""),
        );
        let found = (group == Some(GROUP) && kind == Some("EnvoyProxy"))
            .then(|| self.find_object("EnvoyProxy", GROUP, Some(namespace), name))
            .flatten();
        match found {
            Some(o) => Ok(Layer {
                spec: o.value["spec"].clone(),
                from: Place::Proxy(o),
                by,
            }),
            None => Err(note(
                at,
                Severity::Warning,
                format!(
                    "Envoy Gateway rejects {by}: its parametersRef names {} {namespace}/{name}, which is not in the environment's objects",
                    kind.unwrap_or("no kind")
                ),
                "reference an EnvoyProxy (group gateway.envoyproxy.io, kind EnvoyProxy) that a component of this environment applies; strata judges nothing further of this Gateway",
            )),
        }
    }

    /// The three layers of EnvoyProxy settings of a Gateway (see the
    /// module's documentation), and whether its class merges Gateways; or
    /// the warning that Envoy Gateway rejects what refers to a missing one.
    fn envoy_layers(
        &self,
        gw: &Gw<'a>,
        class: &'a Object,
        settings: &Settings<'a>,
    ) -> Result<Layers<'a>, crate::diag::Diagnostic> {
        let class_ref = &class.value["spec"]["parametersRef"];
        let class_layer = if class_ref.is_object() {
            let ns = class_ref["namespace"].as_str().unwrap_or("default");
            let at = class.field_origin("spec.parametersRef");
            Some(self.envoy_proxy(class_ref, ns, format!("GatewayClass {}", gw.class_name), at)?)
        } else {
            None
        };
        let merged = class_layer
            .as_ref()
            .is_some_and(|l| l.spec["mergeGateways"] == J::Bool(true));
        let gw_ref = &gw.o.value["spec"]["infrastructure"]["parametersRef"];
        let gateway_layer = if gw_ref.is_object() && !merged {
            let at = gw.o.field_origin("spec.infrastructure.parametersRef");
            Some(self.envoy_proxy(gw_ref, &gw.namespace, gw.title(), at)?)
        } else {
            None
        };
        let default_layer = match (&settings.default_proxy, settings.config) {
            (Some(spec), Some(cm)) => Some(Layer {
                spec: spec.clone(),
                from: Place::Default(cm),
                by: "Envoy Gateway's configuration".into(),
            }),
            _ => None,
        };
        Ok(Layers {
            gateway: gateway_layer,
            class: class_layer,
            default: default_layer,
            merged,
        })
    }

    /// The Service Envoy Gateway makes for a Gateway, judged like a
    /// rendered one.
    pub(super) fn envoy_gateway(&self, gw: &Gw<'a>, settings: &Settings<'a>, out: &mut Gateways<'a>) {
        let Some(class) = gw.class else { return };
        let found = match self.envoy_layers(gw, class, settings) {
            Ok(l) => l,
            Err(d) => return out.notes.push(d),
        };
        let layers = order(found.gateway.as_ref(), found.class.as_ref(), found.default.as_ref());
        let policy = match self.envoy_policy(gw, &layers) {
            Ok(Some(p)) => p,
            Ok(None) => return,
            Err(d) => return out.notes.push(d),
        };
        let (namespace, name, labels) = self.envoy_service(gw, settings, &layers, found.merged);
        if out.services.iter().any(|s| s.namespace == namespace && s.name == name) {
            return;
        }
        let (etp, label, help) = policy;
        let chosen = layers
            .first()
            .map(|l| format!("its settings come from {}, which {} references", l.what(), l.by));
        let mut notes = vec![format!(
            "Envoy Gateway creates Service {namespace}/{name} for {} at run time, of type LoadBalancer{}",
            if found.merged {
                format!("every Gateway of GatewayClass {} (mergeGateways)", gw.class_name)
            } else {
                gw.title()
            },
            chosen.map_or_else(String::new, |c| format!("; {c}"))
        )];
        notes.extend(self.default_note(gw.c, &etp));
        out.services.push(Service {
            component: gw.c,
            namespace,
            name,
            labels,
            etp: Some(etp),
            etp_path: None,
            judged: Judged::Runtime,
            gateway: Some(Box::new(FromGateway {
                gateway: gw.id(),
                title: gw.title(),
                implementation: "Envoy Gateway",
                label,
                notes,
                help,
            })),
        });
    }

    /// The policy of the LoadBalancer Service the layers give, with the
    /// caret's label and the help; `None` when there is no LoadBalancer
    /// Service (a `Host` provider, another type); a note when a patch uses
    /// what strata does not evaluate.
    fn envoy_policy(
        &self,
        gw: &Gw<'a>,
        layers: &[&Layer<'a>],
    ) -> Result<Option<(Val, String, String)>, crate::diag::Diagnostic> {
        let pick = |path: &str| layers.iter().find_map(|l| l.get(path).map(|v| (v, *l)));
        if pick("provider.type").is_some_and(|(t, _)| t == "Host") {
            return Ok(None);
        }
        let patch = pick(&format!("{SERVICE}.patch.value"));
        if let Some((p, l)) = patch
            && (p.to_string().contains("\"$patch\"") || p.to_string().contains("\"$retainKeys\""))
        {
            return Err(note(
                self.layer_val(l, &format!("{SERVICE}.patch"), p.clone()).origin,
                Severity::Note,
                format!(
                    "strata cannot judge the Service {} becomes: the envoyService patch of {} uses a directive ($patch, $retainKeys) strata does not evaluate",
                    gw.title(),
                    l.what()
                ),
                "check by hand that the patched Service uses externalTrafficPolicy: Cluster",
            ));
        }
        let patched = |key: &str| patch.and_then(|(p, l)| p["spec"].get(key).map(|v| (v, l)));
        let kind = patched("type").or_else(|| pick(&format!("{SERVICE}.type")));
        if kind.is_some_and(|(t, _)| t != "LoadBalancer") {
            return Ok(None);
        }
        if let Some((v, l)) = patched("externalTrafficPolicy") {
            // A null deletes the field: Kubernetes then gives Cluster.
            let value = if v.is_null() {
                J::String("Cluster".into())
            } else {
                v.clone()
            };
            let val = self.layer_val(l, &format!("{SERVICE}.patch.value.spec.externalTrafficPolicy"), value);
            let help = format!(
                "set `spec.externalTrafficPolicy: Cluster` in the envoyService patch of {}",
                l.what()
            );
            return Ok(Some((val, "set here, in the patch".to_owned(), help)));
        }
        Ok(Some(match pick(&format!("{SERVICE}.externalTrafficPolicy")) {
            Some((v, l)) => {
                let val = self.layer_val(l, &format!("{SERVICE}.externalTrafficPolicy"), v.clone());
                let help = self.layer_help(gw, l, &val);
                let label = if val.set {
                    "set here".to_owned()
                } else {
                    Ctx::value_label(&val)
                };
                (val, label, help)
            }
            None => self.envoy_default(gw, layers.first().copied()),
        }))
    }

    /// The namespace, name and labels of the Service Envoy Gateway creates
    /// (one per class when the class merges Gateways).
    fn envoy_service(
        &self,
        gw: &Gw<'a>,
        settings: &Settings<'a>,
        layers: &[&Layer<'a>],
        merged: bool,
    ) -> (String, String, BTreeMap<String, String>) {
        let pick = |path: &str| layers.iter().find_map(|l| l.get(path));
        let key = if merged {
            gw.class_name.clone()
        } else {
            format!("{}/{}", gw.namespace, gw.name)
        };
        let namespace = if settings.gateway_namespace {
            gw.namespace.clone()
        } else {
            settings
                .config
                .and_then(|o| o.namespace())
                .unwrap_or(CONTROLLER_NAMESPACE)
                .to_owned()
        };
        let name = match pick(&format!("{SERVICE}.name")).and_then(J::as_str) {
            Some(n) => n.to_owned(),
            None if settings.gateway_namespace => gw.name.clone(),
            None => service_name(&key),
        };
        let mut labels: BTreeMap<String, String> = [
            ("app.kubernetes.io/name", "envoy"),
            ("app.kubernetes.io/component", "proxy"),
            ("app.kubernetes.io/managed-by", "envoy-gateway"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let owner = |k: &str, v: &str| (format!("gateway.envoyproxy.io/{k}"), v.to_owned());
        if merged {
            labels.extend([owner("owning-gatewayclass", &gw.class_name)]);
        } else {
            labels.extend([
                owner("owning-gateway-name", &gw.name),
                owner("owning-gateway-namespace", &gw.namespace),
            ]);
        }
        if settings.gateway_namespace {
            labels.insert("gateway.networking.k8s.io/gateway-name".into(), gw.name.clone());
        }
        labels.extend(gw.infrastructure_labels());
        if let Some(l) = pick(&format!("{SERVICE}.labels")) {
            labels.extend(super::workloads::labels_of(l));
        }
        (namespace, name, labels)
    }

    /// A field of a layer as a value with its place: the EnvoyProxy's line
    /// (traced to the values line for a chart's object), or the values line
    /// of the chart that writes Envoy Gateway's configuration.
    fn layer_val(&self, l: &Layer<'a>, path: &str, value: J) -> Val {
        match l.from {
            Place::Proxy(o) => {
                let c = o.component.as_ref().and_then(|n| self.platform.components.get(n));
                self.field(c, o, &format!("spec.{path}"), value, None)
            }
            Place::Default(cm) => {
                let c = cm.component.as_ref().and_then(|n| self.platform.components.get(n));
                let values = format!("config.envoyGateway.envoyProxy.{path}");
                match c.and_then(|c| self.merged(c)).and_then(|m| m.get_path(&values)) {
                    Some(n) => Val {
                        path: values,
                        value,
                        set: true,
                        origin: n.origin.clone(),
                        node: Some(n.clone()),
                        note: None,
                        traced: true,
                        at: None,
                    },
                    None => Val {
                        path: format!("envoyProxy.spec.{path}"),
                        value,
                        set: false,
                        origin: cm.origin.clone(),
                        node: None,
                        note: Some(format!("{} sets it", l.what())),
                        traced: false,
                        at: None,
                    },
                }
            }
        }
    }

    /// How to set Cluster where a layer set the policy.
    fn layer_help(&self, gw: &Gw<'a>, l: &Layer<'a>, v: &Val) -> String {
        match l.from {
            Place::Proxy(o) if o.node.is_some() => format!(
                "set `externalTrafficPolicy: Cluster` under spec.{SERVICE} of {} ({}), which {} references",
                l.what(),
                o.origin.file,
                l.by
            ),
            _ if v.traced => self.fix(gw.c.or_else(|| self.component_of(l)), v, "Cluster"),
            _ => format!(
                "set spec.{SERVICE}.externalTrafficPolicy: Cluster in {}, which {} references",
                l.what(),
                l.by
            ),
        }
    }

    fn component_of(&self, l: &Layer<'a>) -> Option<&'a crate::load::Component> {
        let o = match l.from {
            Place::Proxy(o) | Place::Default(o) => o,
        };
        o.component.as_ref().and_then(|n| self.platform.components.get(n))
    }

    /// No layer sets the policy: Envoy Gateway's default Local applies, and
    /// the finding points at the Gateway's class.
    fn envoy_default(&self, gw: &Gw<'a>, top: Option<&Layer<'a>>) -> (Val, String, String) {
        let mut v = self.class_name_val(gw);
        v.path = format!("spec.{SERVICE}.externalTrafficPolicy");
        v.value = J::String("Local".into());
        v.set = false;
        v.traced = false;
        v.note = Some(match top {
            Some(l) => format!(
                "{}, which {} references, sets no externalTrafficPolicy, so Envoy Gateway's default Local applies",
                l.what(),
                l.by
            ),
            None => format!(
                "no EnvoyProxy applies to {} (neither GatewayClass {} nor the Gateway references one), so Envoy Gateway's defaults apply: type LoadBalancer, externalTrafficPolicy Local",
                gw.title(),
                gw.class_name
            ),
        });
        let snippet = "spec:\n  provider:\n    type: Kubernetes\n    kubernetes:\n      envoyService:\n        externalTrafficPolicy: Cluster";
        let help = match top {
            Some(l) => format!(
                "set spec.{SERVICE}.externalTrafficPolicy: Cluster in {}, which {} references",
                l.what(),
                l.by
            ),
            None => format!(
                "give GatewayClass {} an EnvoyProxy (its spec.parametersRef: group gateway.envoyproxy.io, kind EnvoyProxy, name, namespace) that sets it:\n{snippet}",
                gw.class_name
            ),
        };
        let label = format!(
            "Envoy Gateway gives the Service of `{}` externalTrafficPolicy: {} by default",
            gw.class_name,
            show_json(&v.value)
        );
        (v, label, help)
    }
}

/// The layers in the order a field is looked up in them: the first that
/// has the field decides. The Gateway's EnvoyProxy replaces the class's
/// whole unless its `mergeType` merges it; the result replaces Envoy
/// Gateway's default likewise, by the class's `mergeType` (else the
/// Gateway's).
fn order<'l, 'a>(g: Option<&'l Layer<'a>>, c: Option<&'l Layer<'a>>, d: Option<&'l Layer<'a>>) -> Vec<&'l Layer<'a>> {
    let mut out: Vec<&Layer<'a>> = Vec::new();
    match g {
        Some(g) => {
            out.push(g);
            if g.merges() == Some(true) {
                out.extend(c);
            }
        }
        None => out.extend(c),
    }
    let merges = c.and_then(Layer::merges).or_else(|| g.and_then(Layer::merges)) == Some(true);
    if out.is_empty() || merges {
        out.extend(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_envoy_gateway_hashes_them() {
        // The name Envoy Gateway's documentation shows for default/eg.
        assert_eq!(service_name("default/eg"), "envoy-default-eg-e41e7b31");
        let long = format!("team/{}", "a".repeat(60));
        let name = service_name(&long);
        assert_eq!(name.len(), "envoy-".len() + 48 + 9, "{name}");
    }
}
