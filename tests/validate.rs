//! Schema validation end to end: the example platform validates clean
//! against the Kubernetes 1.35 strict schemas and the CRD catalog, and
//! platforms with one wrong field each fail at the right file, line and
//! JSON path.
//!
//! The Kubernetes schemas come from the `kubernetes-validate` package; `.ci/run`
//! installs it and sets `STRATA_TEST_K8S_SCHEMAS`. Without it these tests
//! skip locally, with a note, and fail in CI (`CI=true`).

mod common;

use std::path::{Path, PathBuf};

use strata::diag::{Diagnostic, Severity, Sources};
use strata::pipeline::{self, Compiled, Options};
use strata::validate::Settings;
use strata::world::FsWorld;

/// The kubeconform-style Kubernetes 1.35 strict schemas.
fn k8s() -> Option<PathBuf> {
    common::required_dir("STRATA_TEST_K8S_SCHEMAS", None, "Kubernetes schemas")
}

/// The CRD catalog beside the repository.
fn crds() -> Option<PathBuf> {
    common::crd_schemas()
}

fn both() -> Option<Vec<String>> {
    Some(vec![k8s()?.display().to_string(), crds()?.display().to_string()])
}

/// A copy of the example platform that a test may edit.
struct Platform {
    dir: tempfile::TempDir,
}

impl Platform {
    fn homelab() -> Platform {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/homelab");
        let dir = tempfile::tempdir().unwrap();
        for entry in walkdir::WalkDir::new(&src) {
            let entry = entry.unwrap();
            let rel = entry.path().strip_prefix(&src).unwrap();
            if rel.starts_with("rendered") {
                continue;
            }
            let to = dir.path().join(rel);
            if entry.file_type().is_dir() {
                std::fs::create_dir_all(&to).unwrap();
            } else {
                std::fs::copy(entry.path(), &to).unwrap();
            }
        }
        Platform { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn append(&self, rel: &str, text: &str) -> &Self {
        let old = std::fs::read_to_string(self.path(rel)).unwrap();
        self.write(rel, &format!("{old}{text}"))
    }

    fn replace(&self, rel: &str, from: &str, to: &str) -> &Self {
        let old = std::fs::read_to_string(self.path(rel)).unwrap();
        assert!(old.contains(from), "{rel} has no `{from}`");
        self.write(rel, &old.replacen(from, to, 1))
    }

    /// The 1-based line of the first line of `rel` containing `needle`.
    fn line_of(&self, rel: &str, needle: &str) -> u32 {
        let text = std::fs::read_to_string(self.path(rel)).unwrap();
        text.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{rel} has no line with `{needle}`")) as u32
            + 1
    }

    fn compile(&self, locations: Vec<String>, strict: bool) -> Result<Compiled, Vec<Diagnostic>> {
        let world = FsWorld::new(self.dir.path(), "2026-10-01".into()).unwrap();
        let opts = Options {
            schemas: Settings { locations, strict },
            ..Options::default()
        };
        pipeline::compile(&world, &Sources::default(), &opts)
    }
}

fn schema_errors(diags: &[Diagnostic]) -> Vec<&Diagnostic> {
    diags
        .iter()
        .filter(|d| d.code == "E010" && d.severity == Severity::Error)
        .collect()
}

fn show(diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| format!("{d}\n")).collect()
}

#[test]
fn example_platform_validates_clean_against_strict_kubernetes_and_crd_schemas() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    // Strict: a kind without a schema would be an error too.
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    let schema: Vec<&Diagnostic> = c
        .findings
        .iter()
        .filter(|d| ["E010", "E021", "E022"].contains(&d.code))
        .collect();
    assert!(schema.is_empty(), "{}", show(&c.findings));
    let units: usize = c.renders.iter().map(|r| r.targets.len()).sum();
    assert_eq!(units, 6, "every environment, both targets");
    let objects: usize = c.renders.iter().flat_map(|r| r.targets.values()).map(Vec::len).sum();
    assert!(objects > 100, "{objects} objects");
}

/// A Deployment template whose replicas and resources come from the values.
const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ values.web.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.29
          resources: {{ values.web.resources | tojson }}
";

fn with_web(p: &Platform) {
    p.write("gitops/platform/traefik/manifests/deployment-web.yaml.j2", DEPLOYMENT)
        .append(
            "gitops/platform/traefik/values.yaml",
            "web:\n  replicas: 2\n  resources:\n    requests:\n      cpu: 100m\n      memory: 64Mi\n",
        );
}

#[test]
fn templated_deployment_with_good_values_is_clean() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    with_web(&p);
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    assert!(schema_errors(&c.findings).is_empty(), "{}", show(&c.findings));
}

#[test]
fn wrong_type_in_a_values_layer_points_at_that_layer() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    with_web(&p);
    let layer = "gitops/platform/traefik/values-staging.yaml";
    p.append(layer, "web:\n  replicas: three\n");
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    let errors = schema_errors(&c.findings);
    assert_eq!(errors.len(), 1, "only staging sets it: {}", show(&c.findings));
    let d = errors[0];
    assert_eq!(d.env.as_deref(), Some("staging"));
    assert_eq!(&*d.origin.file, layer);
    assert_eq!(d.origin.line, p.line_of(layer, "replicas: three"));
    assert_eq!(d.origin.col, 13);
    assert!(
        d.message.starts_with(
            "Deployment/traefik/web in rendered/staging/flux/components/traefik/manifests/deployment-web.yaml"
        ),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("`spec.replicas`: expected an integer, found the string \"three\""),
        "{}",
        d.message
    );
}

#[test]
fn quantity_and_misspelled_field_from_values_are_readable() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    with_web(&p);
    let layer = "gitops/platform/traefik/values-dev.yaml";
    p.append(
        layer,
        "web:\n  resources:\n    limits:\n      cpu: true\n    request:\n      memory: 1Gi\n",
    );
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    let errors = schema_errors(&c.findings);
    assert_eq!(errors.len(), 2, "{}", show(&c.findings));
    let cpu = errors.iter().find(|d| d.message.contains("limits.cpu")).unwrap();
    assert!(
        cpu.message.ends_with(
            "`spec.template.spec.containers[0].resources.limits.cpu`: expected a quantity like 100m or 1Gi, found true"
        ),
        "{}",
        cpu.message
    );
    assert_eq!(
        (&*cpu.origin.file, cpu.origin.line),
        (layer, p.line_of(layer, "cpu: true"))
    );
    let request = errors.iter().find(|d| d.message.contains("unknown field")).unwrap();
    assert!(
        request
            .message
            .ends_with("unknown field `spec.template.spec.containers[0].resources.request`"),
        "{}",
        request.message
    );
    assert_eq!(request.origin.line, p.line_of(layer, "request:"));
    assert_eq!(request.help.as_deref(), Some("did you mean `requests`?"));
}

#[test]
fn misspelled_field_in_a_plain_manifest_points_at_its_line() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    let file = "gitops/platform/cert-manager/manifests/deployment-probe.yaml";
    p.write(
        file,
        "# A probe.\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\ndata: {a: b}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: probe\nspec:\n  replica: 2\n  selector:\n    \
         matchLabels: {app: probe}\n  template:\n    metadata:\n      labels: {app: probe}\n    spec:\n      \
         containers:\n        - name: probe\n          image: busybox\n",
    );
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    let errors = schema_errors(&c.findings);
    // Three environments, the same line.
    assert_eq!(errors.len(), 3, "{}", show(&c.findings));
    for d in errors {
        assert_eq!((&*d.origin.file, d.origin.line, d.origin.col), (file, 13, 3));
        assert!(d.message.ends_with("unknown field `spec.replica`"), "{}", d.message);
        assert_eq!(d.help.as_deref(), Some("did you mean `replicas`?"));
        assert!(
            d.notes.iter().any(|n| n.contains("/argo/components/cert-manager/")),
            "{:?}",
            d.notes
        );
    }
}

#[test]
fn missing_required_field_in_a_manifest() {
    let Some(locations) = both() else { return };
    let p = Platform::homelab();
    let file = "gitops/platform/cert-manager/manifests/deployment-probe.yaml";
    p.write(
        file,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: probe\nspec:\n  replicas: 2\n  template:\n    \
         metadata:\n      labels: {app: probe}\n    spec:\n      containers:\n        - image: busybox\n",
    );
    let c = p.compile(locations, true).unwrap_or_else(|d| panic!("{}", show(&d)));
    let mut messages: Vec<String> = Vec::new();
    let errors = schema_errors(&c.findings);
    assert_eq!(errors.len(), 6, "two per environment: {}", show(&c.findings));
    for d in errors.into_iter().filter(|d| d.env.as_deref() == Some("dev")) {
        assert_eq!(&*d.origin.file, file);
        messages.push(format!("{}: {}", d.origin.line, d.message.rsplit(": ").next().unwrap()));
    }
    assert_eq!(
        messages,
        vec![
            "5: missing required field `spec.selector`".to_owned(),
            "12: missing required field `spec.template.spec.containers[0].name`".to_owned(),
        ],
        "{}",
        show(&c.findings)
    );
}

#[test]
fn wrong_field_in_config_yaml_is_an_input_error_at_its_line() {
    let p = Platform::homelab();
    let file = "gitops/platform/traefik/config.yaml";
    p.replace(file, "  - cert-manager\n", "  - Cert-Manager\n");
    let diags = match p.compile(Vec::new(), false) {
        Ok(c) => panic!("compiled: {}", show(&c.findings)),
        Err(d) => d,
    };
    let d = diags
        .iter()
        .find(|d| d.code == "E010")
        .unwrap_or_else(|| panic!("{}", show(&diags)));
    assert_eq!(
        (&*d.origin.file, d.origin.line, d.origin.col),
        (file, p.line_of(file, "Cert-Manager"), 5)
    );
    assert!(
        d.message
            .starts_with("`requires[0]`: the string \"Cert-Manager\" does not match"),
        "{}",
        d.message
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n == "checked against schemas/config.schema.json"),
        "{:?}",
        d.notes
    );
}

#[test]
fn wrong_field_in_the_contract_is_an_input_error_at_its_line() {
    let p = Platform::homelab();
    let file = "contracts/production.json";
    let text = std::fs::read_to_string(p.path(file)).unwrap();
    // The first node's value, past the `type` description of the output.
    let needle = "\"memory_mib\": 32768";
    let at = text.find(needle).expect("a node with memory_mib") + needle.len() - 5;
    let end = at + text[at..].find([',', '\n', '}']).unwrap();
    p.write(file, &format!("{}\"lots\"{}", &text[..at], &text[end..]));
    let diags = match p.compile(Vec::new(), false) {
        Ok(c) => panic!("compiled: {}", show(&c.findings)),
        Err(d) => d,
    };
    let d = diags
        .iter()
        .find(|d| d.code == "E010")
        .unwrap_or_else(|| panic!("{}", show(&diags)));
    assert_eq!(&*d.origin.file, file);
    assert_eq!(d.origin.line, p.line_of(file, "\"lots\""));
    assert_eq!(d.env.as_deref(), Some("production"));
    assert!(
        d.message
            .starts_with("`nodes[0].memory_mib`: expected an integer, found the string \"lots\""),
        "{}",
        d.message
    );
    assert!(
        d.notes.iter().any(|n| n.contains("contract-talos.schema.json")),
        "{:?}",
        d.notes
    );
}

#[test]
fn talos_contract_without_api_vip_is_accepted_and_the_rule_names_it() {
    let p = Platform::homelab();
    let file = "contracts/staging.json";
    p.replace(
        file,
        "  \"api_vip\": {\n    \"sensitive\": false,\n    \"type\": \"string\",\n    \"value\": \"192.168.10.10\"\n  },\n",
        "",
    );
    // A real stack's contract may lack ADR 007's outputs: it is no input
    // error, but on `topology: ha` the rule that needs it says so, once.
    let compiled = p.compile(Vec::new(), false).unwrap_or_else(|d| panic!("{}", show(&d)));
    let found: Vec<&Diagnostic> = compiled
        .findings
        .iter()
        .filter(|d| d.message.contains("no `api_vip` output"))
        .collect();
    assert_eq!(found.len(), 1, "{}", show(&compiled.findings));
    let d = found[0];
    assert_eq!(
        (d.code, d.severity, &*d.origin.file),
        ("TOPO005", Severity::Error, file)
    );
    assert_eq!(d.env.as_deref(), Some("staging"));
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.contains("object: contract/api_vip"))
    );
}

#[test]
fn values_schema_errors_point_at_the_layer() {
    let p = Platform::homelab();
    p.write(
        "gitops/platform/coredns/values.schema.json",
        r#"{"type": "object", "properties": {"replicaCount": {"type": "integer", "minimum": 1}}}"#,
    );
    let layer = "gitops/platform/coredns/values-dev.yaml";
    p.replace(layer, "replicaCount: 1", "replicaCount: \"2\"");
    let diags = p.compile(Vec::new(), false).err().expect("an input error");
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.code == "E010").collect();
    assert_eq!(errors.len(), 1, "{}", show(&diags));
    let d = errors[0];
    assert_eq!(
        (&*d.origin.file, d.origin.line),
        (layer, p.line_of(layer, "replicaCount: \"2\""))
    );
    assert_eq!(d.env.as_deref(), Some("dev"));
    assert_eq!(
        d.message,
        "values of `coredns` in environment dev: `replicaCount`: expected an integer, found the string \"2\""
    );
    assert_eq!(d.help.as_deref(), Some("remove the quotes to make it a number"));
}

#[test]
fn a_kind_without_a_schema_is_reported_once_and_strict_makes_it_an_error() {
    let Some(k8s) = k8s() else { return };
    let p = Platform::homelab();
    let lenient = p.compile(vec![k8s.display().to_string()], false).unwrap();
    let missing: Vec<&Diagnostic> = lenient
        .findings
        .iter()
        .filter(|d| d.message.starts_with("no schema for HelmRelease"))
        .collect();
    assert_eq!(missing.len(), 1, "{}", show(&lenient.findings));
    assert_eq!(missing[0].severity, Severity::Warning);
    assert!(!lenient.has_errors(), "{}", show(&lenient.findings));
    let strict = p.compile(vec![k8s.display().to_string()], true).unwrap();
    assert!(strict.has_errors());
    assert!(
        strict
            .findings
            .iter()
            .any(|d| d.severity == Severity::Error && d.message.starts_with("no schema for HelmRelease"))
    );
}

#[test]
fn templates_in_locations_are_expanded() {
    let Some(k8s) = k8s() else { return };
    let Some(crds) = crds() else { return };
    let p = Platform::homelab();
    let versions = k8s.parent().unwrap().display().to_string();
    let locations = vec![
        format!(
            "{versions}/{{{{ .NormalizedKubernetesVersion }}}}-local{{{{ .StrictSuffix }}}}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"
        ),
        format!(
            "{}/{{{{ .Group }}}}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json",
            crds.display()
        ),
    ];
    let c = p.compile(locations, true).unwrap();
    assert!(
        c.findings.iter().all(|d| !["E010", "E021", "E022"].contains(&d.code)),
        "{}",
        show(&c.findings)
    );
}

#[test]
fn without_locations_a_note_says_objects_were_not_validated() {
    let p = Platform::homelab();
    let c = p.compile(Vec::new(), false).unwrap();
    let notes: Vec<&Diagnostic> = c.findings.iter().filter(|d| d.code == "E023").collect();
    assert_eq!(notes.len(), 1, "{}", show(&c.findings));
    assert_eq!(notes[0].severity, Severity::Note);
    assert!(notes[0].help.as_deref().unwrap().contains("--schemas"));
}

/// A platform of `n` components, each a chart with values and a templated
/// Deployment and a Service: 6 Flux objects per component.
fn synthetic(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("strata.yaml", "targets: [flux]\n");
    w(
        "environments/dev.yaml",
        "substrate: kind\ncontract: contracts/dev.yaml\ntopology: single\ngit:\n  url: https://git.example.com/p.git\n",
    );
    w(
        "contracts/dev.yaml",
        "substrate: kind\ncluster_name: dev\nendpoint: https://127.0.0.1:6443\ninternal_endpoint: https://dev-control-plane:6443\n",
    );
    for i in 0..n {
        let c = format!("gitops/platform/app-{i:03}");
        w(
            &format!("{c}/config.yaml"),
            &format!(
                "component: app-{i:03}\nnamespace: app-{i:03}\nchart:\n  repoURL: https://charts.example.com\n  name: app\n  version: 1.0.{i}\n"
            ),
        );
        w(
            &format!("{c}/values.yaml"),
            "web:\n  replicas: 2\n  resources:\n    requests: {cpu: 100m, memory: 64Mi}\n    limits: {memory: 128Mi}\n",
        );
        w(&format!("{c}/manifests/deployment.yaml.j2"), DEPLOYMENT);
        w(
            &format!("{c}/manifests/service.yaml"),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n    - port: 80\n      targetPort: http\n",
        );
    }
    dir
}

/// How much validation adds to a render of about 500 objects. Prints the
/// figures; run with `cargo test --release --test validate -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_validation_of_500_objects() {
    use std::time::Instant;
    let Some(locations) = both() else { return };
    let dir = synthetic(84);
    let world = FsWorld::new(dir.path(), "2026-10-01".into()).unwrap();
    let plain = Options::default();
    let checked = Options {
        schemas: Settings {
            locations: locations.clone(),
            strict: true,
        },
        ..Options::default()
    };
    let best = |opts: &Options| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let c = pipeline::compile(&world, &Sources::default(), opts).unwrap_or_else(|d| panic!("{}", show(&d)));
                (t.elapsed(), c)
            })
            .min_by_key(|(t, _)| *t)
            .unwrap()
    };
    let (render, c) = best(&plain);
    let objects: usize = c.renders.iter().flat_map(|r| r.targets.values()).map(Vec::len).sum();
    let (full, c2) = best(&checked);
    assert!(!c2.has_errors(), "{}", show(&c2.findings));

    // The same validation split into compiling the schemas and checking the objects.
    let catalog = strata::validate::catalog::Catalog::new(locations, "1.35").unwrap();
    let all: Vec<&strata::render::Object> = c.renders.iter().flat_map(|r| r.targets.values()).flatten().collect();
    let t = Instant::now();
    let kinds: std::collections::BTreeSet<(String, String)> = all
        .iter()
        .map(|o| (o.api_version().to_owned(), o.kind().to_owned()))
        .collect();
    for k in &kinds {
        catalog.get(&world, k);
    }
    let compile = t.elapsed();
    let t = Instant::now();
    let mut errors = 0;
    for o in &all {
        let g = (o.api_version().to_owned(), o.kind().to_owned());
        if let strata::validate::catalog::Lookup::Found(ks) = &*catalog.get(&world, &g) {
            errors += ks.validator.iter_errors(&o.value).count();
        }
    }
    let check = t.elapsed();
    assert_eq!(errors, 0);
    eprintln!("objects rendered:                      {objects}");
    eprintln!("compile without schema validation:     {render:?}");
    eprintln!("compile with schema validation:        {full:?}");
    eprintln!("  compiling {} kinds' schemas:          {compile:?}", kinds.len());
    eprintln!("  validating {objects} objects (warm):       {check:?}");
    eprintln!(
        "validation adds {:.0}% to a compile ({:.1} µs per object once compiled)",
        (full.as_secs_f64() / render.as_secs_f64() - 1.0) * 100.0,
        check.as_secs_f64() * 1e6 / objects as f64
    );
}

/// Only the fixed cost: looking up and compiling the schemas of the kinds
/// the synthetic platform renders, once, on a fresh catalog. Small enough to
/// run under `valgrind --tool=callgrind`, whose instruction counts stay put
/// on a busy machine.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_schema_compile() {
    use std::time::Instant;
    let Some(locations) = both() else { return };
    let dir = synthetic(1);
    let world = FsWorld::new(dir.path(), "2026-10-01".into()).unwrap();
    let c =
        pipeline::compile(&world, &Sources::default(), &Options::default()).unwrap_or_else(|d| panic!("{}", show(&d)));
    let kinds: std::collections::BTreeSet<(String, String)> = c
        .renders
        .iter()
        .flat_map(|r| r.targets.values())
        .flatten()
        .map(|o| (o.api_version().to_owned(), o.kind().to_owned()))
        .collect();
    let t = Instant::now();
    let catalog = strata::validate::catalog::Catalog::new(locations, "1.35").unwrap();
    for k in &kinds {
        let found = matches!(&*catalog.get(&world, k), strata::validate::catalog::Lookup::Found(_));
        assert!(found, "{k:?}");
    }
    eprintln!("compiling {} kinds' schemas: {:?}", kinds.len(), t.elapsed());
}
