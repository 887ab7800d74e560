//! The Service Cilium creates for a Gateway: `cilium-gateway-<name>` in the
//! Gateway's namespace, of type LoadBalancer (none in host-network mode),
//! with the policy of the CiliumGatewayClassConfig its class references
//! when that has a `spec.service` (whose CRD default is Cluster), else the
//! operator's setting from the chart's `gatewayAPI.externalTrafficPolicy`
//! (default Cluster), which the chart writes into ConfigMap `cilium-config`.
//! (Read from cilium/cilium operator/pkg/model/translation/gateway-api and
//! pkg/k8s/apis/cilium.io/v2alpha1/gatewayclassconfig_types.go.)

use serde_json::Value as J;

use super::gateways::{Gateways, Gw, note};
use super::{Ctx, FromGateway, Judged, Service, Val};
use crate::diag::Severity;
use crate::profiles::{Binding, ValueRef};
use crate::yaml::{Node, Origin, Value};

const POLICY_KEY: &str = "gateway-api-service-externaltrafficpolicy";
const HOST_NETWORK_KEY: &str = "gateway-api-hostnetwork-enabled";
const POLICY_VALUE: &str = "gatewayAPI.externalTrafficPolicy";

/// Kubernetes' and Cilium's default, which L2 announcements need.
fn cluster() -> J {
    J::String("Cluster".into())
}

fn value_ref(path: &str, default: Value) -> ValueRef {
    ValueRef {
        path: path.to_owned(),
        default: Node {
            value: default,
            origin: Origin::file_start("<cilium chart default>"),
        },
    }
}

impl<'a> Ctx<'a> {
    /// The rendered ConfigMap `cilium-config`.
    fn cilium_config(&self) -> Option<&'a crate::render::Object> {
        self.objects_of_kind("ConfigMap").find(|o| o.name() == "cilium-config")
    }

    /// The Cilium components judged through the cilium profile (their
    /// chart not rendered), each with where its values sit.
    fn profiled_cilium(&self) -> Vec<(&'a crate::load::Component, Binding<'a>)> {
        self.platform
            .components_in(self.env)
            .filter(|c| !self.render.inflated(&c.name))
            .flat_map(|c| self.bindings(c).into_iter().map(move |b| (c, b)))
            .filter(|(_, b)| b.profile.chart == "cilium")
            .collect()
    }

    /// Whether Cilium has the Gateway API on, so that its chart makes
    /// GatewayClass `cilium` (which a render without the Gateway API's
    /// CRDs among its API versions leaves out): its rendered configuration
    /// says so, or its values, read through its profile.
    pub(super) fn cilium_makes_class(&self) -> bool {
        if let Some(o) = self.cilium_config() {
            let data = &o.value["data"];
            return data["enable-gateway-api"] == "true" || data.get(POLICY_KEY).is_some();
        }
        self.profiled_cilium().iter().any(|(c, b)| {
            let nested = b.nested.as_ref().map(|n| (b.profile, n));
            self.value_in(c, nested, &value_ref("gatewayAPI.enabled", Value::Bool(false)))
                .truthy()
        })
    }

    /// Whether Cilium serves Gateways on the hosts' network (no
    /// LoadBalancer Service then).
    fn cilium_host_network(&self) -> bool {
        if let Some(o) = self.cilium_config() {
            return o.value["data"][HOST_NETWORK_KEY] == "true";
        }
        self.profiled_cilium().iter().any(|(c, b)| {
            let nested = b.nested.as_ref().map(|n| (b.profile, n));
            self.value_in(
                c,
                nested,
                &value_ref("gatewayAPI.hostNetwork.enabled", Value::Bool(false)),
            )
            .truthy()
        })
    }

    /// The operator's policy for Gateway Services, with where it is set,
    /// and how to change it.
    fn cilium_global_policy(&self) -> Option<(Val, String)> {
        if let Some(o) = self.cilium_config() {
            let v = o.value["data"].get(POLICY_KEY)?;
            let c = o.component.as_ref().and_then(|n| self.platform.components.get(n));
            let val = self.field(
                c,
                o,
                &format!("data.{POLICY_KEY}"),
                v.clone(),
                Some(POLICY_VALUE.into()),
            );
            let help = self.fix(c, &val, "Cluster");
            return Some((val, help));
        }
        let (c, b) = self.profiled_cilium().into_iter().next()?;
        let nested = b.nested.as_ref().map(|n| (b.profile, n));
        let val = self.value_in(c, nested, &value_ref(POLICY_VALUE, Value::Str("Cluster".into())));
        let help = self.fix(Some(c), &val, "Cluster");
        Some((val, help))
    }

    /// The Service Cilium makes for a Gateway, judged like a rendered one.
    pub(super) fn cilium_gateway(&self, gw: &Gw<'a>, out: &mut Gateways<'a>) {
        if self.cilium_host_network() {
            return;
        }
        let class_ref = gw
            .class
            .map(|c| &c.value["spec"]["parametersRef"])
            .filter(|r| r.is_object());
        let config = class_ref.and_then(|r| {
            let (group, kind) = (r["group"].as_str(), r["kind"].as_str());
            if group != Some("cilium.io") || kind != Some("CiliumGatewayClassConfig") {
                return None;
            }
            let (ns, name) = (r["namespace"].as_str(), r["name"].as_str().unwrap_or(""));
            let found = self.find_object("CiliumGatewayClassConfig", "cilium.io", ns, name);
            if found.is_none() {
                out.notes.push(note(
                    gw.class.map_or_else(|| gw.o.origin.clone(), |c| c.field_origin("spec.parametersRef")),
                    Severity::Warning,
                    format!(
                        "GatewayClass {} names CiliumGatewayClassConfig {}/{name}, which is not in the environment's objects: Cilium then uses its global setting",
                        gw.class_name,
                        ns.unwrap_or("")
                    ),
                    "apply the CiliumGatewayClassConfig with a component of this environment, or remove the reference",
                ));
            }
            found.filter(|o| o.value["spec"]["service"].is_object())
        });
        let (etp, help, from) = match config {
            Some(o) => {
                let service = &o.value["spec"]["service"];
                if service["type"].as_str().is_some_and(|t| t != "LoadBalancer") {
                    return;
                }
                let c = o.component.as_ref().and_then(|n| self.platform.components.get(n));
                let Some(v) = service.get("externalTrafficPolicy") else {
                    // The CRD's default.
                    return;
                };
                let val = self.field(c, o, "spec.service.externalTrafficPolicy", v.clone(), None);
                let what = format!("CiliumGatewayClassConfig {}/{}", o.namespace().unwrap_or(""), o.name());
                let help = if o.node.is_some() {
                    format!(
                        "set `spec.service.externalTrafficPolicy: Cluster` in {what} ({})",
                        o.origin.file
                    )
                } else {
                    self.fix(c, &val, "Cluster")
                };
                (
                    val,
                    help,
                    format!("{what}, which GatewayClass {} references", gw.class_name),
                )
            }
            None => match self.cilium_global_policy() {
                Some((val, help)) => (val, help, "Cilium's `gatewayAPI.externalTrafficPolicy`".to_owned()),
                None => return,
            },
        };
        if etp.value == cluster() {
            return;
        }
        let name = format!("cilium-gateway-{}", gw.name);
        let mut labels = gw.infrastructure_labels();
        labels.insert("io.cilium.gateway/owning-gateway".into(), gw.name.clone());
        labels.insert("gateway.networking.k8s.io/gateway-name".into(), gw.name.clone());
        let mut notes = vec![format!(
            "Cilium creates Service {}/{name} for {} at run time, of type LoadBalancer, with the policy of {from}",
            gw.namespace,
            gw.title()
        )];
        notes.extend(self.default_note(gw.c, &etp));
        let label = Ctx::value_label(&etp);
        out.services.push(Service {
            component: gw.c,
            namespace: gw.namespace.clone(),
            name,
            labels,
            etp: Some(etp),
            etp_path: None,
            judged: Judged::Runtime,
            gateway: Some(Box::new(FromGateway {
                gateway: gw.id(),
                title: gw.title(),
                implementation: "Cilium",
                label,
                notes,
                help,
            })),
        });
    }
}
