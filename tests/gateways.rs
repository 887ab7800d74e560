//! NET001 on the Services Gateway API implementations create at run time:
//! a `Gateway` is judged as the LoadBalancer Service Envoy Gateway or
//! Cilium makes for it, with the traffic policy that implementation gives
//! it; Traefik's Gateways ride on the chart's own Service. Each platform is
//! fixtures/rules/NET001/pass (Cilium announcing every LoadBalancer
//! address, a Traefik with Cluster) with a component `gateways` whose
//! manifests hold the Gateway API objects under test.

mod common;

use std::path::Path;

use strata::diag::{Diagnostic, Severity};

/// The NET001 pass platform with `files` added (paths from its root).
fn platform(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::repo().join("fixtures/rules/NET001/pass"), dir.path());
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The NET001 findings, notes included, and their text.
fn check(dir: &Path, helm: Option<&Path>) -> (Vec<Diagnostic>, String) {
    common::charts::compile_findings(dir, helm, |d| d.code == "NET001")
}

fn errors_of(diags: &[Diagnostic]) -> Vec<&Diagnostic> {
    diags.iter().filter(|d| d.severity == Severity::Error).collect()
}

const COMPONENT: (&str, &str) = (
    "gitops/platform/gateways/config.yaml",
    "component: gateways\nnamespace: web\n",
);

/// An Envoy Gateway GatewayClass, with a parametersRef to EnvoyProxy
/// `edge-proxy` in `web` when `proxy` is set.
fn envoy_class(proxy: bool) -> String {
    let mut s = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: eg\nspec:\n  controllerName: gateway.envoyproxy.io/gatewayclass-controller\n".to_owned();
    if proxy {
        s.push_str("  parametersRef:\n    group: gateway.envoyproxy.io\n    kind: EnvoyProxy\n    name: edge-proxy\n    namespace: web\n");
    }
    s
}

/// An EnvoyProxy `name` in `web` whose Service has `spec` (YAML under
/// `envoyService:`, indented by eight), and `top` more spec keys.
fn envoy_proxy(name: &str, service: &str, top: &str) -> String {
    format!(
        "apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata:\n  name: {name}\n  namespace: web\nspec:\n{top}  provider:\n    type: Kubernetes\n    kubernetes:\n      envoyService:\n{service}"
    )
}

fn gateway(class: &str, extra: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: public\n  namespace: web\nspec:\n  gatewayClassName: {class}\n  listeners:\n    - name: http\n      protocol: HTTP\n      port: 80\n{extra}"
    )
}

const M: &str = "gitops/platform/gateways/manifests";

#[test]
fn an_envoy_proxy_that_says_local_fires_at_its_line() {
    let proxy = envoy_proxy(
        "edge-proxy",
        "        type: LoadBalancer\n        externalTrafficPolicy: Local\n",
        "",
    );
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &envoy_class(true)),
        (&format!("{M}/envoyproxy.yaml"), &proxy),
        (&format!("{M}/gateway.yaml"), &gateway("eg", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    let d = errors[0];
    assert!(
        d.message
            .starts_with("Gateway web/public becomes Service envoy-gateway-system/envoy-web-public-")
            && d.message
                .contains("(created by Envoy Gateway), which uses externalTrafficPolicy: Local"),
        "{text}"
    );
    assert!(d.origin.file.ends_with("manifests/envoyproxy.yaml"), "{text}");
    assert_eq!((d.origin.line, d.origin.col), (12, 32), "{text}");
    assert!(
        d.help.as_deref().unwrap().contains("EnvoyProxy web/edge-proxy") && text.contains("GatewayClass eg references"),
        "{text}"
    );
}

#[test]
fn an_envoy_proxy_that_says_cluster_passes() {
    let proxy = envoy_proxy("edge-proxy", "        externalTrafficPolicy: Cluster\n", "");
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &envoy_class(true)),
        (&format!("{M}/envoyproxy.yaml"), &proxy),
        (&format!("{M}/gateway.yaml"), &gateway("eg", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// No EnvoyProxy: Envoy Gateway's own default is Local, and the finding
/// points at the Gateway's class, saying which field to set where.
#[test]
fn envoy_gateways_default_local_fires_at_the_gateway() {
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &envoy_class(false)),
        (&format!("{M}/gateway.yaml"), &gateway("eg", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    let d = errors[0];
    assert!(d.origin.file.ends_with("manifests/gateway.yaml"), "{text}");
    assert_eq!(d.origin.line, 7, "the gatewayClassName line:\n{text}");
    let help = d.help.as_deref().unwrap();
    assert!(
        help.contains("give GatewayClass eg an EnvoyProxy") && help.contains("externalTrafficPolicy: Cluster"),
        "{text}"
    );
    insta::with_settings!({prepend_module_to_snapshot => false, snapshot_path => "snapshots"}, {
        insta::assert_snapshot!("NET001_gateway_envoy_default", text);
    });
}

/// A Gateway's own EnvoyProxy replaces its class's whole, unless it asks to
/// merge (Envoy Gateway v1.8+): one that sets no policy then falls back to
/// Envoy Gateway's default, not to the class's Cluster.
#[test]
fn a_gateways_envoy_proxy_replaces_or_merges_over_its_classes() {
    let class_proxy = envoy_proxy("edge-proxy", "        externalTrafficPolicy: Cluster\n", "");
    for (merge, fires) in [("", true), ("  mergeType: StrategicMerge\n", false)] {
        let own = envoy_proxy("public-proxy", "        type: LoadBalancer\n", merge);
        let gw = gateway(
            "eg",
            "  infrastructure:\n    parametersRef:\n      group: gateway.envoyproxy.io\n      kind: EnvoyProxy\n      name: public-proxy\n",
        );
        let files = [
            COMPONENT,
            (&format!("{M}/gatewayclass.yaml"), &envoy_class(true)),
            (&format!("{M}/envoyproxy.yaml"), &class_proxy),
            (&format!("{M}/envoyproxy-public.yaml"), &own),
            (&format!("{M}/gateway.yaml"), &gw),
        ];
        let dir = platform(&files);
        let (diags, text) = check(dir.path(), None);
        assert_eq!(
            errors_of(&diags).len(),
            usize::from(fires),
            "mergeType {merge:?}:\n{text}"
        );
        if fires {
            assert!(
                text.contains(
                    "EnvoyProxy web/public-proxy, which Gateway web/public references, sets no externalTrafficPolicy"
                ),
                "{text}"
            );
        }
    }
}

/// A parametersRef to an EnvoyProxy that is not there: Envoy Gateway
/// rejects the Gateway, which strata says, and judges nothing further.
#[test]
fn a_missing_envoy_proxy_is_a_warning() {
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &envoy_class(true)),
        (&format!("{M}/gateway.yaml"), &gateway("eg", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(diags[0].severity, Severity::Warning, "{text}");
    assert!(
        diags[0].message.starts_with("Envoy Gateway rejects GatewayClass eg"),
        "{text}"
    );
}

fn cilium_class(config: bool) -> String {
    let mut s = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: cilium\nspec:\n  controllerName: io.cilium/gateway-controller\n".to_owned();
    if config {
        s.push_str("  parametersRef:\n    group: cilium.io\n    kind: CiliumGatewayClassConfig\n    name: lb\n    namespace: web\n");
    }
    s
}

/// Cilium's default for Gateway Services is Cluster: nothing to say.
#[test]
fn a_cilium_gateway_passes_by_default() {
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &cilium_class(false)),
        (&format!("{M}/gateway.yaml"), &gateway("cilium", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    assert!(diags.is_empty(), "{text}");
}

/// A CiliumGatewayClassConfig with Local: fires at its line; and the chart
/// value `gatewayAPI.externalTrafficPolicy: Local` fires at the values line.
#[test]
fn cilium_local_fires_from_its_class_config_or_its_values() {
    let config = "apiVersion: cilium.io/v2alpha1\nkind: CiliumGatewayClassConfig\nmetadata:\n  name: lb\n  namespace: web\nspec:\n  service:\n    type: LoadBalancer\n    externalTrafficPolicy: Local\n";
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &cilium_class(true)),
        (&format!("{M}/cgcc.yaml"), config),
        (&format!("{M}/gateway.yaml"), &gateway("cilium", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    let d = errors[0];
    assert!(
        d.message
            .starts_with("Gateway web/public becomes Service web/cilium-gateway-public (created by Cilium)"),
        "{text}"
    );
    assert!(
        d.origin.file.ends_with("manifests/cgcc.yaml") && d.origin.line == 9,
        "{text}"
    );
    insta::with_settings!({prepend_module_to_snapshot => false, snapshot_path => "snapshots"}, {
        insta::assert_snapshot!("NET001_gateway_cilium_config", text);
    });

    // The operator's setting, through the cilium values (the chart is not rendered here).
    let values = "kubeProxyReplacement: true\nl2announcements:\n  enabled: true\ngatewayAPI:\n  enabled: true\n  externalTrafficPolicy: Local\n";
    let files = [
        COMPONENT,
        ("gitops/platform/cilium/values.yaml", values),
        (&format!("{M}/gatewayclass.yaml"), &cilium_class(false)),
        (&format!("{M}/gateway.yaml"), &gateway("cilium", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    assert!(
        errors[0].origin.file.ends_with("gitops/platform/cilium/values.yaml") && errors[0].origin.line == 6,
        "{text}"
    );
    assert!(
        text.contains("set `gatewayAPI.externalTrafficPolicy: Cluster`"),
        "{text}"
    );
}

/// Traefik makes no Service per Gateway: its Gateways are named in the
/// finding about the chart's Service, and get none of their own.
#[test]
fn a_traefik_gateway_rides_on_the_charts_service() {
    let class = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: traefik\nspec:\n  controllerName: traefik.io/gateway-controller\n";
    let values =
        "deployment:\n  replicas: 2\nservice:\n  type: LoadBalancer\n  spec:\n    externalTrafficPolicy: Local\n";
    let files = [
        ("gitops/platform/traefik/values.yaml", values),
        ("gitops/platform/traefik/manifests/gatewayclass.yaml", class),
        (
            "gitops/platform/traefik/manifests/gateway.yaml",
            &gateway("traefik", ""),
        ),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    assert!(errors[0].message.starts_with("Service traefik/traefik uses"), "{text}");
    assert!(
        errors[0]
            .notes
            .iter()
            .any(|n| n.starts_with("it also carries Gateway web/public (GatewayClass traefik)")),
        "{text}"
    );
}

/// An implementation strata does not know: a note, not an error.
#[test]
fn a_gateway_of_an_unknown_implementation_is_a_note() {
    let class = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: other\nspec:\n  controllerName: example.com/gateway\n";
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), class),
        (&format!("{M}/gateway.yaml"), &gateway("other", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(diags[0].severity, Severity::Note, "{text}");
    assert!(
        diags[0]
            .message
            .contains("`example.com/gateway`, an implementation strata does not know"),
        "{text}"
    );
}

/// The rendered NET001 pass platform (Cilium's and Traefik's charts of our
/// own, rendered by helm) with a component `gateways` rendering
/// tests/charts/gateway-parts with `values`, and `files` added.
fn rendered_platform(values: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::repo().join("fixtures/rules-inflated/NET001/pass"), dir.path());
    let chart = dir.path().join("charts/gateway-parts");
    std::fs::create_dir_all(&chart).unwrap();
    common::copy_dir(&common::repo().join("tests/charts/gateway-parts"), &chart);
    let mut all = vec![
        (
            "gitops/platform/gateways/config.yaml",
            "component: gateways\nnamespace: gateways\nchart:\n  path: charts/gateway-parts\n",
        ),
        ("gitops/platform/gateways/values.yaml", values),
    ];
    all.extend_from_slice(files);
    for (rel, text) in all {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// An EnvoyProxy a chart renders: the finding points at the values line
/// that set its policy, as for every rendered field.
#[test]
fn a_rendered_envoy_proxy_is_traced_to_its_values_line() {
    let Some(helm) = common::charts::helm() else { return };
    let staging = "proxy:\n  service:\n    type: LoadBalancer\n    externalTrafficPolicy: Local\n";
    let dir = rendered_platform("{}\n", &[("gitops/platform/gateways/values-staging.yaml", staging)]);
    let (diags, text) = check(dir.path(), Some(&helm));
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    let d = errors[0];
    assert!(
        d.message
            .starts_with("Gateway gateways/public becomes Service gateways/envoy-gateways-public-"),
        "{text}"
    );
    assert!(
        d.origin.file.ends_with("gitops/platform/gateways/values-staging.yaml") && d.origin.line == 4,
        "{text}"
    );
    assert!(
        text.contains(
            "set `proxy.service.externalTrafficPolicy: Cluster` in gitops/platform/gateways/values-staging.yaml"
        ),
        "{text}"
    );
    insta::with_settings!({prepend_module_to_snapshot => false, snapshot_path => "snapshots"}, {
        insta::assert_snapshot!("NET001_gateway_envoy_rendered", text);
    });
}

/// Without an EnvoyProxy, Envoy Gateway's own configuration (v1.7+) gives
/// the default layer: Cluster there passes; with nothing, its Local fires.
#[test]
fn envoy_gateways_configured_default_proxy_is_the_lowest_layer() {
    let Some(helm) = common::charts::helm() else { return };
    let configured = "proxy: null\nconfig:\n  envoyGateway:\n    envoyProxy:\n      provider:\n        type: Kubernetes\n        kubernetes:\n          envoyService:\n            externalTrafficPolicy: Cluster\n";
    let dir = rendered_platform(configured, &[]);
    let (diags, text) = check(dir.path(), Some(&helm));
    assert!(diags.is_empty(), "{text}");

    let dir = rendered_platform("proxy: null\n", &[]);
    let (diags, text) = check(dir.path(), Some(&helm));
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    // No layer names the Gateway's class (the chart's default does): the
    // finding points at the chart's pin, as for every rendered default.
    assert!(
        errors[0].origin.file.ends_with("gitops/platform/gateways/config.yaml"),
        "{text}"
    );
    assert!(
        text.contains("no EnvoyProxy applies to Gateway gateways/public"),
        "{text}"
    );
}

/// Cilium's chart renders the operator's setting into `cilium-config`: a
/// Local there is traced back to the cilium values line.
#[test]
fn a_rendered_cilium_setting_is_traced_to_its_values_line() {
    let Some(helm) = common::charts::helm() else { return };
    let cilium = "kubeProxyReplacement: true\nl2announcements:\n  enabled: true\ngatewayAPI:\n  enabled: true\n  externalTrafficPolicy: Local\n";
    let values = "gateway:\n  gatewayClassName: cilium\n";
    let dir = rendered_platform(values, &[("gitops/platform/cilium/values.yaml", cilium)]);
    let (diags, text) = check(dir.path(), Some(&helm));
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    let d = errors[0];
    assert!(
        d.message
            .starts_with("Gateway gateways/public becomes Service gateways/cilium-gateway-public (created by Cilium)"),
        "{text}"
    );
    assert!(
        d.origin.file.ends_with("gitops/platform/cilium/values.yaml") && d.origin.line == 6,
        "{text}"
    );

    // The real chart renders GatewayClass cilium only when helm is told the
    // Gateway API's CRDs exist; without it, the class is still Cilium's.
    std::fs::remove_file(dir.path().join("charts/cilium/templates/gatewayclass.yaml")).unwrap();
    let (diags, text) = check(dir.path(), Some(&helm));
    assert_eq!(errors_of(&diags).len(), 1, "{text}");

    let cilium = cilium.replace("Local", "Cluster");
    let dir = rendered_platform(values, &[("gitops/platform/cilium/values.yaml", &cilium)]);
    let (diags, text) = check(dir.path(), Some(&helm));
    assert!(errors_of(&diags).is_empty(), "{text}");
}

/// `envoyService.patch` is applied over the Service Envoy Gateway builds:
/// a policy it sets wins, and the finding points at it.
#[test]
fn an_envoy_service_patch_decides_the_policy() {
    let service = "        externalTrafficPolicy: Cluster\n        patch:\n          type: StrategicMerge\n          value:\n            spec:\n              externalTrafficPolicy: Local\n";
    let proxy = envoy_proxy("edge-proxy", service, "");
    let files = [
        COMPONENT,
        (&format!("{M}/gatewayclass.yaml"), &envoy_class(true)),
        (&format!("{M}/envoyproxy.yaml"), &proxy),
        (&format!("{M}/gateway.yaml"), &gateway("eg", "")),
    ];
    let dir = platform(&files);
    let (diags, text) = check(dir.path(), None);
    let errors = errors_of(&diags);
    assert_eq!(errors.len(), 1, "{text}");
    assert_eq!(errors[0].origin.line, 16, "the patch's line:\n{text}");
    assert!(
        text.contains("in the envoyService patch of EnvoyProxy web/edge-proxy"),
        "{text}"
    );
}
