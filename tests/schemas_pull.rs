//! `strata schemas pull` against a schema folder served on 127.0.0.1: it
//! fetches the schemas of the kinds the platform renders into
//! .strata/schemas/, and validation uses them offline without configuration.

mod common;

use common::charts::serve_dir;
use common::{scratch, stderr, strata, write};

/// A strict, standalone schema of ConfigMap (what kubeconform's
/// standalone-strict folders hold).
const CONFIGMAP: &str = r#"{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
    "data": {"type": "object", "additionalProperties": {"type": "string"}},
    "binaryData": {"type": "object"},
    "immutable": {"type": "boolean"}
  }
}"#;

#[test]
fn pulled_schemas_are_used_offline_without_configuration() {
    let served = tempfile::tempdir().unwrap();
    write(
        served.path(),
        "k8s/v1.35.0-standalone-strict/configmap-v1.json",
        CONFIGMAP,
    );
    if let Some(catalog) = common::crd_schemas() {
        let crds = catalog.join("source.toolkit.fluxcd.io/gitrepository_v1.json");
        write(
            served.path(),
            "crds/source.toolkit.fluxcd.io/gitrepository_v1.json",
            &std::fs::read_to_string(&crds).unwrap(),
        );
    }
    let (url, hits) = serve_dir(served.path().to_path_buf());

    let tmp = scratch("homelab");
    let root = tmp.path();
    write(
        root,
        "strata.yaml",
        &format!(
            "platform: gitops/platform\nschemas_source:\n  kubernetes: \"{url}/k8s/{{{{ .NormalizedKubernetesVersion }}}}-standalone{{{{ .StrictSuffix }}}}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json\"\n  crds: \"{url}/crds/{{{{ .Group }}}}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json\"\n"
        ),
    );
    let out = strata(root, &["--inflate", "off", "schemas", "pull"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("no published schema for"),
        "kinds the folder lacks are named: {err}"
    );
    assert!(
        root.join(".strata/schemas/kubernetes/v1.35.0-standalone-strict/configmap-v1.json")
            .is_file()
    );
    let served_before = hits.load(std::sync::atomic::Ordering::SeqCst);

    // Offline from here on: the check uses the pulled schemas by itself.
    let out = strata(root, &["--inflate", "off", "check"]);
    let err = stderr(&out);
    assert!(!err.contains("rendered objects were not validated"), "{err}");
    // A ConfigMap with a misspelt field is found.
    write(
        root,
        "gitops/platform/traefik/manifests/configmap-bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndatta:\n  a: b\n",
    );
    let out = strata(root, &["--inflate", "off", "check"]);
    let err = stderr(&out);

    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("datta"), "{err}");
    assert!(
        err.contains("gitops/platform/traefik/manifests/configmap-bad.yaml:5"),
        "{err}"
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        served_before,
        "check used the network"
    );

    // A second pull keeps what it has.
    let out = strata(root, &["--inflate", "off", "schemas", "pull"]);
    assert!(stderr(&out).contains("0 schema(s) fetched"), "{}", stderr(&out));
}

#[test]
fn an_empty_schemas_list_silences_the_note() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    let out = strata(root, &["--inflate", "off", "check"]);
    assert!(
        stderr(&out).contains("rendered objects were not validated"),
        "{}",
        stderr(&out)
    );
    write(root, "strata.yaml", "platform: gitops/platform\nschemas: []\n");
    let out = strata(root, &["--inflate", "off", "check"]);
    assert!(
        !stderr(&out).contains("rendered objects were not validated"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unreachable_source_is_an_input_error_with_the_remedy() {
    let tmp = scratch("homelab");
    let root = tmp.path();
    write(
        root,
        "strata.yaml",
        "platform: gitops/platform\nschemas_source:\n  kubernetes: \"http://127.0.0.1:9/{{ .ResourceKind }}.json\"\n  crds: \"http://127.0.0.1:9/{{ .ResourceKind }}.json\"\n",
    );
    let out = strata(root, &["--inflate", "off", "schemas", "pull"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("schemas_source"), "{err}");
}
