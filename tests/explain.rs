//! End-to-end tests of `strata explain` on paths with quoted keys and list
//! items, on paths that exist nowhere (with the nearest ones), on chart
//! defaults read from the chart's own values.yaml, and on the rendered
//! fields a value ends up in; and of the typo warning (E016) that every
//! compile gives for a layer key the chart and the lower layers lack.

#[macro_use]
mod common;

use std::path::Path;

use common::charts::{self, platform, strata_with};
use common::{stderr, stdout, write};

/// A platform with one component `web` on the local test chart web-1
/// (`charts/web`), with the given base and staging layers.
fn web(values: &str, staging: &str) -> tempfile::TempDir {
    let tmp = platform(&[("web", "chart:\n  path: charts/web\n", values)]);
    common::copy_dir(&charts::chart_dir("web-1"), &tmp.path().join("charts/web"));
    if !staging.is_empty() {
        write(tmp.path(), "gitops/platform/web/values-staging.yaml", staging);
    }
    tmp
}

/// `strata explain --env staging web PATH` without helm: exit code, stdout, stderr.
fn explain(root: &Path, path: &str) -> (i32, String, String) {
    let out = strata_with(root, None, &["explain", "--env", "staging", "web", path]);
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

#[test]
fn explain_a_key_that_holds_dots() {
    let tmp = web(
        "configs:\n  params:\n    server.insecure: false\n    server.basehref: /\npodLabels:\n  app.kubernetes.io/part-of: shop\n",
        "configs:\n  params:\n    server.insecure: true\n",
    );
    let (code, out, err) = explain(tmp.path(), "configs.params.\"server.insecure\"");
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "web configs.params.\"server.insecure\" in staging");
    assert_eq!(lines[1], "  final value: true");
    assert_eq!(lines[2], "  set at gitops/platform/web/values-staging.yaml:3:22");
    assert!(
        out.contains("  1. gitops/platform/web/values.yaml:3:22: sets false\n  2. gitops/platform/web/values-staging.yaml:3:22: sets true\n"),
        "{out}"
    );
    // An annotation-style key, set only in the base.
    let (code, out, err) = explain(tmp.path(), "podLabels.\"app.kubernetes.io/part-of\"");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("  final value: shop\n"), "{out}");
    assert!(
        out.contains("2. gitops/platform/web/values-staging.yaml: not set"),
        "{out}"
    );
    // Written without quotes, the dotted key is found and suggested.
    let (code, _, err) = explain(tmp.path(), "configs.params.server.insecure");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("did you mean `configs.params.\"server.insecure\"`?"),
        "{err}"
    );
    // A malformed path: exit 2, the column, and an example.
    let (code, _, err) = explain(tmp.path(), "configs.params.\"server.insecure");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the quoted key is not closed"), "{err}");
    assert!(err.contains("(column 16)"), "{err}");
    assert!(err.contains("configs.params.\"server.insecure\""), "{err}");
    let (code, _, err) = explain(tmp.path(), "tolerations[x]");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("(column 13)") && err.contains("tolerations[0].key"),
        "{err}"
    );
}

#[test]
fn explain_a_list_item_names_the_layer_that_set_the_list() {
    let tmp = web(
        "tolerations:\n  - key: a\n    operator: Exists\n  - key: b\n    operator: Exists\n",
        "tolerations:\n  - key: c\n    operator: Exists\n",
    );
    let (code, out, err) = explain(tmp.path(), "tolerations[0].key");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("  final value: c\n"), "{out}");
    assert!(
        out.contains("  set at gitops/platform/web/values-staging.yaml:2:10\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "in the list `tolerations` (1 item) set as a whole at gitops/platform/web/values-staging.yaml:2:3"
        ),
        "{out}"
    );
    assert!(
        out.contains("1. gitops/platform/web/values.yaml:2:3: sets the list `tolerations` (2 items), replacing the lists below as a whole; at `[0].key`: a"),
        "{out}"
    );
    assert!(
        out.contains("2. gitops/platform/web/values-staging.yaml:2:3: sets the list `tolerations` (1 item), replacing the lists below as a whole; at `[0].key`: c"),
        "{out}"
    );
    // The base's second item is gone: the staging list replaced the base's.
    let (code, out, err) = explain(tmp.path(), "tolerations[1].key");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("final value: not set; the list `tolerations` set as a whole at gitops/platform/web/values-staging.yaml:2:3 (1 item) has nothing at `[1].key`"),
        "{out}"
    );
    assert!(out.contains("; at `[1].key`: b"), "{out}");
}

#[test]
fn explain_a_path_that_exists_nowhere_suggests_the_nearest() {
    let tmp = web("replicas: 2\n", "image:\n  tag: \"1.28\"\n");
    let (code, out, err) = explain(tmp.path(), "replcas");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("no layer of web sets `replcas` and the values.yaml of chart web 1.0.0 has no such key"),
        "{err}"
    );
    assert!(err.contains("did you mean `replicas`?"), "{err}");
    // The segment that diverges is the one corrected; the rest is kept.
    let (code, _, err) = explain(tmp.path(), "imgae.tag");
    assert_eq!(code, 1);
    assert!(err.contains("did you mean `image.tag`?"), "{err}");
    let (code, _, err) = explain(tmp.path(), "image.tga");
    assert_eq!(code, 1);
    assert!(err.contains("`image` exists, `image.tga` does not"), "{err}");
    assert!(err.contains("did you mean `image.tag`?"), "{err}");
    // Nothing near: the keys that exist there.
    let (code, _, err) = explain(tmp.path(), "image.zzzzzz");
    assert_eq!(code, 1);
    assert!(
        err.contains("paths that exist here: image.repository, image.tag"),
        "{err}"
    );
    // Into a value that is no mapping.
    let (code, _, err) = explain(tmp.path(), "replicas.count");
    assert_eq!(code, 1);
    assert!(err.contains("`replicas` is a number"), "{err}");
}

#[test]
fn explain_a_value_only_the_chart_sets() {
    let tmp = web("replicas: 2\n", "");
    let (code, out, err) = explain(tmp.path(), "image.repository");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("  final value: not set by any layer; the chart's default applies: nginx\n"),
        "{out}"
    );
    assert!(
        out.contains("  chart default from the values.yaml of chart web 1.0.0 (charts/web)\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "1. gitops/platform/web/values.yaml: not set\n  2. gitops/platform/web/values-staging.yaml: no such file"
        ),
        "{out}"
    );
    // A mapping the chart sets by default.
    let (code, out, _) = explain(tmp.path(), "resources.requests");
    assert_eq!(code, 0);
    assert!(
        out.contains("the chart's default applies:\n    cpu: 100m\n    memory: 64Mi"),
        "{out}"
    );
    // Without helm, explain says once that the chart was not rendered.
    assert_eq!(
        out.matches("was not rendered (helm is not on the PATH)").count(),
        1,
        "{out}"
    );
}

#[test]
fn explain_shows_the_rendered_fields_under_inflation() {
    let helm = need_helm!();
    let tmp = web("replicas: 2\nservice:\n  type: LoadBalancer\n", "replicas: 3\n");
    let root = tmp.path();
    let run = |path: &str| {
        let out = strata_with(root, Some(&helm), &["explain", "--env", "staging", "web", path]);
        (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
    };
    let (code, out, err) = run("replicas");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("\nrendered by helm (chart web 1.0.0):\n"), "{out}");
    assert!(
        out.contains("  -> Deployment/web/web spec.replicas = 3 (web/templates/workload.yaml)\n"),
        "{out}"
    );
    // Found by key and value in what the chart rendered.
    let (code, out, err) = run("service.type");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("  -> Service/web/web spec.type = LoadBalancer (web/templates/service.yaml)\n"),
        "{out}"
    );
    // A chart default ends up in a rendered field too.
    let (code, out, err) = run("resources.requests.cpu");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("  -> Deployment/web/web spec.template.spec.containers[0].resources.requests.cpu = 100m (web/templates/workload.yaml)\n"),
        "{out}"
    );
    // off: not rendered, and why.
    let out = strata_with(
        root,
        Some(&helm),
        &["--inflate", "off", "explain", "--env", "staging", "web", "replicas"],
    );
    assert!(
        stdout(&out).contains("the chart of web was not rendered (`inflate: off`)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn check_warns_of_a_likely_typo_in_a_layer_above_the_base() {
    let tmp = web(
        "replicas: 2\npodLabels:\n  team: shop\n",
        "# staging\nreplcas: 3\npodLabels:\n  teams: shop\nimage:\n  tga: \"1.28\"\n  digest: sha256:0\nnodeSelector:\n  zonee: a\n",
    );
    let out = strata_with(tmp.path(), None, &["check", "--env", "staging"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[E016]: `replcas` is in no lower layer of component web (values.yaml) and not in the values.yaml of chart web 1.0.0"),
        "{err}"
    );
    assert!(
        err.contains("--> gitops/platform/web/values-staging.yaml:2:1\n"),
        "{err}"
    );
    assert!(err.contains("help: did you mean `replicas`?"), "{err}");
    assert!(
        err.contains("--> gitops/platform/web/values-staging.yaml:6:3\n"),
        "{err}"
    );
    assert!(err.contains("help: did you mean `tag`?"), "{err}");
    assert_eq!(err.matches("warning[E016]").count(), 2, "{err}");
    // Free-form maps and new keys far from any known one are not flagged.
    assert!(
        !err.contains("teams") && !err.contains("zonee") && !err.contains("digest"),
        "{err}"
    );

    // Through the chart profile when strata does not have the chart.
    let tmp = common::scratch("homelab");
    let file = tmp.path().join("gitops/platform/traefik/values-staging.yaml");
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    text.push_str("deploymnet:\n  replicas: 3\n");
    std::fs::write(&file, text).unwrap();
    let out = strata_with(tmp.path(), None, &["check", "--env", "staging", "--format", "json"]);
    let json = stdout(&out);
    assert!(json.contains("\"E016\""), "{json}");
    assert!(json.contains("did you mean `deployment`?"), "{json}");
    assert!(json.contains("the chart profile traefik"), "{json}");
}

/// The chart `helm create` makes, as most in-house charts start: its values
/// reach the rendered fields under other keys (`replicaCount` into
/// `spec.replicas`), or inside strings (`image.tag` into the image, with
/// `.Chart.AppVersion` when it is empty), and explain traces each.
#[test]
fn explain_traces_the_values_of_a_helm_create_chart() {
    let helm = need_helm!();
    let tmp = platform(&[(
        "web",
        "chart:\n  path: charts/web\n",
        "service:\n  type: LoadBalancer\n",
    )]);
    let root = tmp.path();
    std::fs::create_dir_all(root.join("charts")).unwrap();
    let made = std::process::Command::new(&helm)
        .args(["create", "web"])
        .current_dir(root.join("charts"))
        .env("HOME", root)
        .output()
        .expect("run helm create");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    write(root, "gitops/platform/web/values-dev.yaml", "replicaCount: 3\n");
    let run = |path: &str| {
        let out = strata_with(root, Some(&helm), &["explain", "--env", "dev", "web", path]);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(!text.contains("could be traced"), "{text}");
        text
    };
    let out = run("replicaCount");
    assert!(
        out.contains("  -> Deployment/web/web spec.replicas = 3 (web/templates/deployment.yaml)\n"),
        "{out}"
    );
    // Unset: the chart renders its appVersion in the tag's place.
    let out = run("image.tag");
    assert!(
        out.contains("  -> Deployment/web/web spec.template.spec.containers[0].image = nginx:1.16.0 (the part `1.16.0`) (web/templates/deployment.yaml)\n"),
        "{out}"
    );
    let out = run("image.repository");
    assert!(
        out.contains("containers[0].image = nginx:1.16.0 (the part `nginx`)"),
        "{out}"
    );
    let out = run("service.type");
    assert!(
        out.contains("  -> Service/web/web spec.type = LoadBalancer (web/templates/service.yaml)\n"),
        "{out}"
    );
    // One value, two fields: the Service's port and the container's.
    let out = run("service.port");
    assert!(
        out.contains("  -> Service/web/web spec.ports[0].port = 80 (web/templates/service.yaml)\n"),
        "{out}"
    );
    assert!(
        out.contains("  -> Deployment/web/web spec.template.spec.containers[0].ports[0].containerPort = 80 (web/templates/deployment.yaml)\n"),
        "{out}"
    );
    // No false trace: the 1 of `autoscaling.minReplicas` is not the 1 of anything rendered
    // (autoscaling is off, so the value reaches nothing).
    let out = strata_with(
        root,
        Some(&helm),
        &["explain", "--env", "dev", "web", "autoscaling.minReplicas"],
    );
    let text = stdout(&out);
    assert!(!text.contains("  -> "), "{text}");
}

#[test]
fn explain_names_strata_s_own_layer_of_argo_cd() {
    // In a tree Argo CD applies, the argo-cd component has strata's health
    // check of child Applications as its lowest layer; explain shows it as
    // the first step, so a user who sees the key knows where it comes from.
    let tmp = common::scratch("homelab");
    let out = strata_with(
        tmp.path(),
        None,
        &["explain", "--env", "staging", "argocd", "configs.cm"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("  1. <builtin>/templates/argo/application-health.values.yaml:"),
        "{text}"
    );
    assert!(text.contains("  2. gitops/platform/argocd/values.yaml:"), "{text}");
    assert!(
        text.contains("resource.customizations.health.argoproj.io_Application"),
        "{text}"
    );
}

/// A `patches:` entry that changes a rendered field after helm renders it:
/// explain shows what the patch leaves, and names the patch.
#[test]
fn explain_applies_the_patches_on_what_the_chart_renders() {
    let helm = need_helm!();
    let tmp = web("replicas: 2\n", "replicas: 3\n");
    let root = tmp.path();
    let strata_yaml = std::fs::read_to_string(root.join("strata.yaml")).unwrap();
    // A Helm release's patches reach Flux as post-renderers; Argo CD has none.
    write(root, "strata.yaml", &format!("{strata_yaml}targets: [flux]\n"));
    let config = std::fs::read_to_string(root.join("gitops/platform/web/config.yaml")).unwrap();
    write(
        root,
        "gitops/platform/web/config.yaml",
        &format!(
            "{config}patches:\n  - target: {{kind: Deployment, name: web}}\n    patch:\n      - {{op: replace, path: /spec/replicas, value: 4}}\n"
        ),
    );
    let out = strata_with(root, Some(&helm), &["explain", "--env", "staging", "web", "replicas"]);
    let (code, out, err) = (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out));
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("  -> Deployment/web/web spec.replicas"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("  -> Deployment/web/web spec.replicas = 4 (web/templates/workload.yaml, then changed by the patch at gitops/platform/web/config.yaml:"),
        "{out}"
    );
    // A field no patch touches is as the chart renders it.
    let out = strata_with(
        root,
        Some(&helm),
        &["explain", "--env", "staging", "web", "resources.requests.cpu"],
    );
    assert!(
        stdout(&out).contains("resources.requests.cpu = 100m (web/templates/workload.yaml)\n"),
        "{}",
        stdout(&out)
    );
}
