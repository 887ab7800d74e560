//! A `null` in a component's values deletes a chart default in Helm, and
//! it still does on Flux: strata writes the merged values as the text of a
//! ConfigMap that the HelmRelease names in `spec.valuesFrom`, and
//! helm-controller's own merge (`tests/flux-values`, built from Flux's
//! packages by `.ci/run`) hands Helm those values with the null in place;
//! the real `helm template` then drops the chart's default for it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::charts;
use common::{scratch, stderr, strata, write};
use serde_json::Value as J;

/// The values checker: `STRATA_TEST_FLUX_VALUES`, else `flux-values` on the
/// PATH. Missing, a test skips with a note, and fails in CI.
#[allow(clippy::disallowed_methods)]
fn flux_values() -> Option<PathBuf> {
    let found = std::env::var_os("STRATA_TEST_FLUX_VALUES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("flux-values"))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("flux-values is required in CI: .ci/run builds it from tests/flux-values");
        }
        eprintln!("note: skipping helm-controller's own merge: build tests/flux-values (see its README)");
    }
    found
}

const COMPONENT: &str = "rendered/staging/flux/components/traefik";

/// What staging's layer adds: a null at the top (`tolerations`, a chart
/// default), and one inside the `service` mapping the layer already has,
/// over the `externalTrafficPolicy` that values.yaml sets, while the
/// mapping's other keys stay.
const TOP_NULL: &str = "tolerations: null\n";
const NESTED_NULL: &str = "service:\n  spec:\n    externalTrafficPolicy: null\n";

fn parse(name: &str, text: &str) -> Vec<J> {
    strata::yaml::parse_plain_multi(&std::sync::Arc::from(name), text)
        .unwrap_or_else(|e| panic!("{name}: {e:?}\n{text}"))
}

fn has_the_nulls(values: &J) -> bool {
    values.get("tolerations").is_some_and(J::is_null)
        && values["service"]["spec"]
            .get("externalTrafficPolicy")
            .is_some_and(J::is_null)
}

/// Renders the example's staging with [`TOP_NULL`] and [`NESTED_NULL`] in
/// traefik's staging layer; returns the values text of the ConfigMap strata
/// wrote, parsed, and the component folder.
fn render_with_nulls(root: &Path) -> (J, PathBuf) {
    let layer = "gitops/platform/traefik/values-staging.yaml";
    let text = std::fs::read_to_string(root.join(layer)).unwrap();
    assert!(text.contains("\nservice:\n"), "{layer} changed:\n{text}");
    let text = text.replacen("\nservice:\n", &format!("\n{NESTED_NULL}"), 1);
    write(root, layer, &format!("{text}{TOP_NULL}"));
    let out = strata(root, &["render", "--env", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let folder = root.join(COMPONENT);
    let hr = &parse(
        "helmrelease",
        &std::fs::read_to_string(folder.join("helmrelease-traefik.yaml")).unwrap(),
    )[0];
    // Inline values would be merged over the ConfigMap's, and Flux loses
    // their nulls; strata writes none.
    assert!(hr["spec"].get("values").is_none(), "{hr}");
    let refs = hr["spec"]["valuesFrom"].as_array().expect("valuesFrom");
    assert_eq!(refs.len(), 1, "{hr}");
    let name = refs[0]["name"].as_str().unwrap();
    let file = folder.join(format!("configmap-{name}.yaml"));
    let cm = &parse("configmap", &std::fs::read_to_string(&file).unwrap())[0];
    let text = cm["data"]["values.yaml"].as_str().expect("values.yaml");
    let values = parse("values.yaml", text).remove(0);
    assert!(has_the_nulls(&values), "strata lost a null:\n{text}");
    (values, folder)
}

/// helm-controller's merged values for the HelmRelease of `folder`.
fn helm_controller_values(checker: &Path, folder: &Path) -> J {
    let out = Command::new(checker).arg(folder).output().expect("run flux-values");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", common::stdout(&out)))
}

#[test]
fn helm_controller_hands_helm_the_nulls_strata_writes() {
    let Some(checker) = flux_values() else { return };
    let tmp = scratch("homelab");
    let (strata_values, folder) = render_with_nulls(tmp.path());
    let flux = helm_controller_values(&checker, &folder);
    assert!(has_the_nulls(&flux), "helm-controller lost a null: {flux}");
    assert_eq!(flux["service"]["type"], "LoadBalancer", "{flux}");
    assert_eq!(flux, strata_values, "helm-controller's values differ from strata's");
}

#[test]
fn the_checker_refuses_a_folder_without_a_release_and_a_missing_reference() {
    let Some(checker) = flux_values() else { return };
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n",
    );
    let out = Command::new(&checker).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no HelmRelease"), "{}", stderr(&out));
    // A reference to a ConfigMap that is not there fails the release.
    write(
        tmp.path(),
        "helmrelease.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: r, namespace: b}\n\
         spec:\n  interval: 1h\n  valuesFrom: [{kind: ConfigMap, name: missing}]\n",
    );
    let out = Command::new(&checker).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("\"missing\" not found"), "{}", stderr(&out));
}

/// A chart of our own whose defaults have the keys the nulls delete, and
/// whose one object shows which of them Helm kept.
fn defaults_chart(dir: &Path) {
    write(dir, "Chart.yaml", "apiVersion: v2\nname: defaults\nversion: 0.1.0\n");
    write(
        dir,
        "values.yaml",
        "tolerations:\n  - {key: dedicated, operator: Exists}\nextra: keep\nservice:\n  type: ClusterIP\n  spec:\n    externalTrafficPolicy: Local\n",
    );
    write(
        dir,
        "templates/configmap.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: defaults
data:
  type: {{ .Values.service.type | quote }}
  {{- if hasKey .Values "extra" }}
  extra: {{ .Values.extra | quote }}
  {{- end }}
  {{- if hasKey .Values "tolerations" }}
  tolerations: {{ toJson .Values.tolerations | quote }}
  {{- end }}
  {{- if hasKey .Values.service.spec "externalTrafficPolicy" }}
  externalTrafficPolicy: {{ .Values.service.spec.externalTrafficPolicy | quote }}
  {{- end }}
"#,
    );
}

/// `helm template` of the chart, with the values files given; the
/// ConfigMap's data.
fn template(helm: &Path, home: &Path, chart: &Path, values: &[&Path]) -> J {
    let mut cmd = Command::new(helm);
    cmd.args(["template", "probe"])
        .arg(chart)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"));
    for v in values {
        cmd.arg("-f").arg(v);
    }
    let out = cmd.output().expect("run helm");
    assert!(out.status.success(), "{}", stderr(&out));
    let docs = parse("helm template", &common::stdout(&out));
    let cm = docs
        .into_iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("the chart's ConfigMap");
    cm["data"].clone()
}

#[test]
fn helm_deletes_the_chart_default_for_a_null_helm_controller_hands_it() {
    let Some(checker) = flux_values() else { return };
    let Some(helm) = charts::helm() else { return };
    let tmp = scratch("homelab");
    let (_, folder) = render_with_nulls(tmp.path());
    let flux = helm_controller_values(&checker, &folder);
    let work = tempfile::tempdir().unwrap();
    let chart = work.path().join("defaults");
    defaults_chart(&chart);

    // Without values the chart writes its defaults: the probe can see them.
    let plain = template(&helm, work.path(), &chart, &[]);
    assert_eq!(plain["type"], "ClusterIP", "{plain}");
    assert_eq!(plain["externalTrafficPolicy"], "Local", "{plain}");
    assert!(plain.get("tolerations").is_some(), "{plain}");

    // A null deletes the default of its key, top-level or nested; a default
    // with no value given stays.
    let values = work.path().join("helm-controller-values.json");
    std::fs::write(&values, serde_json::to_vec(&flux).unwrap()).unwrap();
    let got = template(&helm, work.path(), &chart, &[&values]);
    assert_eq!(got["type"], "LoadBalancer", "the values were not read: {got}");
    assert!(got.get("tolerations").is_none(), "the chart default came back: {got}");
    assert!(
        got.get("externalTrafficPolicy").is_none(),
        "the nested chart default came back: {got}"
    );
    assert_eq!(got["extra"], "keep", "{got}");

    // Without the null, the chart defaults return: the null is what deletes them.
    let mut without = flux.clone();
    without.as_object_mut().unwrap().remove("tolerations");
    without["service"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("externalTrafficPolicy");
    std::fs::write(&values, serde_json::to_vec(&without).unwrap()).unwrap();
    let back = template(&helm, work.path(), &chart, &[&values]);
    assert!(back.get("tolerations").is_some(), "{back}");
    assert_eq!(back["externalTrafficPolicy"], "Local", "{back}");
}
