//! `strata generate` (hidden): writes a synthetic platform of N components
//! and M environments, for benchmarks. The output is a pure function of the
//! arguments, so runs are comparable.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Number of components
    #[arg(long, default_value_t = 50)]
    pub components: usize,
    /// Number of environments (the first is kind, the rest talos)
    #[arg(long, default_value_t = 4)]
    pub envs: usize,
    /// Lines of the base values file of each component (about)
    #[arg(long, default_value_t = 300)]
    pub lines: usize,
    /// Folder to write the platform into (must be empty or absent)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Give each component a small chart of its own inside the platform
    /// (charts/<component>), so that strata renders them with helm
    #[arg(long)]
    pub local_charts: bool,
}

/// A small chart: a Deployment, a Service and a PodDisruptionBudget that
/// read the synthetic values.
const CHART_TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Release.Name }}
      annotations:
        {{- range $k, $v := .Values }}
        {{- if kindIs "map" $v }}{{ if hasKey $v "name" }}
        example.com/{{ $k }}: {{ $v.name | quote }}
        {{- end }}{{ end }}
        {{- end }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app.kubernetes.io/name: {{ .Release.Name }}
  ports:
    - port: 80
      targetPort: 8080
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Release.Name }}
"#;

/// A small deterministic generator (SplitMix64), so the platform is the same
/// for the same arguments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
    "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
];

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.below(WORDS.len() as u64) as usize]
}

/// A values file of about `lines` lines: nested mappings, lists, scalars.
fn values(rng: &mut Rng, lines: usize, tag: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# synthetic values ({tag})");
    let _ = writeln!(s, "replicaCount: {}", 1 + rng.below(3));
    let _ = writeln!(
        s,
        "image:\n  repository: registry.example.com/{tag}\n  tag: \"v1.{}.{}\"\n  pullPolicy: IfNotPresent",
        rng.below(30),
        rng.below(10)
    );
    let _ = writeln!(
        s,
        "resources:\n  requests:\n    cpu: {}m\n    memory: {}Mi\n  limits:\n    memory: {}Mi",
        10 + rng.below(90),
        32 + rng.below(200),
        256 + rng.below(256)
    );
    let mut n = 12;
    let mut section = 0;
    while n < lines {
        section += 1;
        let _ = writeln!(s, "section{section}:");
        let _ = writeln!(s, "  enabled: {}", rng.below(2) == 0);
        let _ = writeln!(s, "  name: {}-{}", word(rng), rng.below(1000));
        let _ = writeln!(s, "  settings:");
        for k in 0..6 {
            let _ = writeln!(s, "    key{k}: \"{}-{}\"", word(rng), rng.below(100_000));
        }
        let _ = writeln!(s, "    threshold: {}.{}", rng.below(100), rng.below(100));
        let _ = writeln!(s, "  list:");
        for _ in 0..4 {
            let _ = writeln!(s, "    - name: {}\n      value: {}", word(rng), rng.below(10_000));
        }
        let _ = writeln!(
            s,
            "  annotations:\n    example.com/{}: \"on\"\n    example.com/mode: \"0755\"",
            word(rng)
        );
        n += 22;
    }
    s
}

fn overlay(rng: &mut Rng, env: &str) -> String {
    let mut s = format!("# {env} overrides\nreplicaCount: {}\n", 2 + rng.below(2));
    for section in 1..=4 {
        let _ = writeln!(s, "section{section}:\n  enabled: {}\n  settings:", rng.below(2) == 0);
        for k in 0..3 {
            let _ = writeln!(s, "    key{k}: \"{env}-{}\"", rng.below(1000));
        }
        let _ = writeln!(s, "  list:\n    - name: {env}\n      value: {}", rng.below(100));
    }
    let _ = writeln!(s, "resources:\n  limits: null");
    s
}

fn contract(env: &str, talos: bool, index: usize) -> String {
    let net = 20 + index;
    if !talos {
        return format!(
            r#"{{
  "cluster_name": {{"sensitive": false, "type": "string", "value": "{env}"}},
  "client_key": {{"sensitive": true, "type": "string"}},
  "endpoint": {{"sensitive": false, "type": "string", "value": "https://127.0.0.1:6443"}},
  "internal_endpoint": {{"sensitive": false, "type": "string", "value": "https://{env}-control-plane:6443"}},
  "nodes": {{"sensitive": false, "type": ["tuple", [["object", {{"address": "string", "cpu": "number", "host": "string", "labels": ["map", "string"], "memory_mib": "number", "name": "string", "roles": ["list", "string"]}}]]], "value": [
    {{"address": "172.18.0.2", "cpu": 8, "host": "localhost", "labels": {{"kubernetes.io/hostname": "{env}-control-plane"}}, "memory_mib": 16384, "name": "{env}-control-plane", "roles": ["control-plane", "worker"]}}]}},
  "substrate": {{"sensitive": false, "type": "string", "value": "kind"}}
}}
"#
        );
    }
    let mut nodes = Vec::new();
    for i in 1..=3 {
        nodes.push(format!(
            r#"{{"address": "10.{net}.0.1{i}", "cpu": 16, "host": "pve-0{i}", "labels": {{"kubernetes.io/hostname": "{env}-cp-0{i}", "topology.kubernetes.io/zone": "pve-0{i}", "node-role.kubernetes.io/control-plane": ""}}, "memory_mib": 65536, "name": "{env}-cp-0{i}", "roles": ["control-plane"]}}"#
        ));
    }
    format!(
        r#"{{
  "api_vip": {{"sensitive": false, "type": "string", "value": "10.{net}.0.10"}},
  "client_key": {{"sensitive": true, "type": "string"}},
  "cluster_name": {{"sensitive": false, "type": "string", "value": "{env}"}},
  "endpoint": {{"sensitive": false, "type": "string", "value": "https://10.{net}.0.10:6443"}},
  "internal_endpoint": {{"sensitive": false, "type": "string", "value": "https://10.{net}.0.10:6443"}},
  "network": {{"sensitive": false, "type": ["object", {{"cidr": "string", "dhcp_range": ["list", "string"], "interface": "string", "lb_pool": ["list", "string"]}}], "value": {{"cidr": "10.{net}.0.0/24", "dhcp_range": ["10.{net}.0.100", "10.{net}.0.199"], "interface": "ens18", "lb_pool": ["10.{net}.0.240/28"]}}}},
  "nodes": {{"sensitive": false, "type": ["tuple", [["object", {{}}]]], "value": [
    {}
  ]}},
  "substrate": {{"sensitive": false, "type": "string", "value": "talos"}},
  "talosctl_endpoints": {{"sensitive": false, "type": ["list", "string"], "value": ["10.{net}.0.11", "10.{net}.0.12", "10.{net}.0.13"]}}
}}
"#,
        nodes.join(",\n    ")
    )
}

fn put(root: &Path, rel: &str, text: &str) -> std::io::Result<()> {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(p, text)
}

/// Writes the synthetic platform.
pub fn generate(root: &Path, components: usize, envs: usize, lines: usize, local_charts: bool) -> std::io::Result<()> {
    let mut rng = Rng(0x5EED);
    put(root, "strata.yaml", "platform: gitops/platform\n")?;
    let env_names: Vec<String> = (0..envs.max(1))
        .map(|i| if i == 0 { "dev".to_owned() } else { format!("env{i}") })
        .collect();
    for (i, env) in env_names.iter().enumerate() {
        let talos = i > 0;
        put(
            root,
            &format!("environments/{env}.yaml"),
            &format!(
                "substrate: {}\ncontract: contracts/{env}.json\ntopology: single\ngit:\n  url: https://git.example.com/synthetic.git\n  revision: main\n",
                if talos { "talos" } else { "kind" }
            ),
        )?;
        put(root, &format!("contracts/{env}.json"), &contract(env, talos, i))?;
    }
    for c in 0..components {
        let name = format!("component-{c:04}");
        let dir = format!("gitops/platform/{name}");
        // Each component requires one or two earlier ones, so the graph has depth.
        let mut requires = Vec::new();
        if c > 0 {
            requires.push(format!("component-{:04}", rng.below(c as u64)));
        }
        if c > 10 && rng.below(2) == 0 {
            let r = format!("component-{:04}", c - 1 - rng.below(10) as usize);
            if !requires.contains(&r) {
                requires.push(r);
            }
        }
        let oci = c % 5 == 0;
        let chart = if local_charts {
            put(
                root,
                &format!("charts/{name}/Chart.yaml"),
                &format!("apiVersion: v2\nname: {name}\nversion: 0.1.{c}\n"),
            )?;
            put(root, &format!("charts/{name}/values.yaml"), "replicaCount: 1\n")?;
            put(root, &format!("charts/{name}/templates/app.yaml"), CHART_TEMPLATE)?;
            format!("  path: charts/{name}\n")
        } else if oci {
            format!(
                "  repoURL: oci://registry.example.com/charts\n  name: chart-{c}\n  version: \"1.{c}.0\"\n  oci: true\n"
            )
        } else {
            format!("  repoURL: https://charts.example.com/\n  name: chart-{c}\n  version: \"1.{c}.0\"\n")
        };
        put(
            root,
            &format!("{dir}/config.yaml"),
            &format!(
                "component: {name}\nnamespace: ns-{c:04}\nchart:\n{chart}sync: {}\ntier: addon\nrequires: [{}]\n",
                if c % 7 == 0 { "manual" } else { "automated" },
                requires.join(", ")
            ),
        )?;
        put(root, &format!("{dir}/values.yaml"), &values(&mut rng, lines, &name))?;
        for env in env_names.iter().skip(1) {
            put(root, &format!("{dir}/values-{env}.yaml"), &overlay(&mut rng, env))?;
        }
        put(
            root,
            &format!("{dir}/values-substrate-talos.yaml"),
            "section1:\n  settings:\n    substrate: talos\n",
        )?;
        put(
            root,
            &format!("{dir}/manifests/configmap-info.yaml.j2"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\ndata:\n  env: \"{{ env }}\"\n  replicas: \"{{ values.replicaCount }}\"\n  cluster: \"{{ contract.cluster_name }}\"\n",
        )?;
        put(
            root,
            &format!("{dir}/manifests/service-metrics.yaml"),
            &format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}-metrics\nspec:\n  selector:\n    app.kubernetes.io/name: {name}\n  ports:\n    - name: metrics\n      port: 9090\n      targetPort: 9090\n"
            ),
        )?;
    }
    Ok(())
}

pub fn run(quiet: bool, args: &GenerateArgs) -> i32 {
    let out = super::cli_path(&args.out);
    if out.exists() && std::fs::read_dir(&out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        eprintln!(
            "error: {} is not empty; generate writes only into a new folder",
            out.display()
        );
        return exit::INPUT;
    }
    match generate(&out, args.components, args.envs, args.lines, args.local_charts) {
        Ok(()) => {
            if !quiet {
                eprintln!(
                    "wrote a platform of {} components and {} environments to {}",
                    args.components,
                    args.envs,
                    out.display()
                );
            }
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {}: {e}", out.display());
            exit::INPUT
        }
    }
}
