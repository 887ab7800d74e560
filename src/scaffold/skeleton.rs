//! The texts of a new platform. Each file explains itself in comments, so
//! that a new user can read the skeleton top to bottom and know what to
//! change; every value that stands in for one of theirs says so.

use super::{COMPONENT, Substrate};

pub const STRATA_YAML: &str = "\
# The root of a platform repository: strata finds this file by walking up
# from the working directory, as cargo finds Cargo.toml. Every key has a
# default; the ones below are the defaults, written out to show them.
# Every key: docs/configuration.md in strata's repository.
platform: gitops/platform          # one folder per component
environments: environments         # one <env>.yaml per environment
output: rendered                   # the tree strata writes: commit it
targets: [flux, argo]              # the GitOps engines to write for
layers:                            # the value layers of a component, lowest first
  - values.yaml
  - values-{env}.yaml
  - values-substrate-{substrate}.yaml

# The node label that carries each node's physical host. The substrate type
# sets it (kind: kubernetes.io/hostname; talos: topology.kubernetes.io/zone);
# set it here only if your nodes carry their host in another label.
# host_label: topology.kubernetes.io/zone

# Folders of Kubernetes and CRD JSON Schemas that rendered objects are
# validated against. None yet: run `strata schemas pull` once to fetch them
# into .strata/schemas (used offline afterwards, with or without this list),
# or list folders of your own here.
schemas: []
";

pub const CONFIG_YAML: &str = "\
# A component: one folder under gitops/platform/, named as `component` is.
# This one has no chart: its objects are the files in manifests/ (`.yaml`
# as written, `.yaml.j2` rendered as templates). To deploy a Helm chart,
# add one and run `strata charts pull` to pin it in strata.lock:
#
#   chart:
#     repoURL: https://charts.example.org
#     name: my-chart
#     version: 1.2.3
#
# The values layers then are the chart's Helm values.
component: hello
namespace: hello
sync: automated                    # or manual: the engine waits for you
tier: addon                        # core components are applied first
# ha: true: in an environment with `topology: ha`, the HA rules judge every
# Deployment and StatefulSet this component renders (two replicas or more,
# a PodDisruptionBudget that allows an eviction, spread across hosts), as
# they judge the controllers ADR 007 names. An environment may set it for
# itself: `components: {hello: {ha: true}}`.
ha: false
";

pub const VALUES_YAML: &str = "\
# The component's base values, for every environment. With a chart they are
# its Helm values; here the templates in manifests/ read them as `values`.
# Layers above this one (values-<env>.yaml, values-substrate-<type>.yaml)
# override it key by key, the way Helm merges several -f files.
greeting: Hello
";

/// The component's layer for the first environment.
pub fn env_values(env: &str) -> String {
    format!(
        "\
# Values for the environment {env} only: they override values.yaml.
# `strata explain --env {env} {COMPONENT} audience` shows where a value comes from.
audience: {env}
"
    )
}

pub const MANIFEST: &str = "\
{# A template of the component's objects. It sees `env` (the environment's
   name), `substrate`, `contract` (the contract's outputs, never a sensitive
   one), `values` (the component's merged values) and `component`. #}
apiVersion: v1
kind: ConfigMap
metadata:
  name: hello
  namespace: {{ component.namespace }}
data:
  greeting: {{ (values.greeting ~ \", \" ~ values.audience) | tojson }}
  cluster: {{ contract.cluster_name | tojson }}
  environment: {{ env | tojson }}
";

/// The first environment's file.
pub fn environment(substrate: Substrate) -> String {
    let env = substrate.env();
    let (about, topology) = match substrate {
        Substrate::Kind => (
            "a kind cluster on your machine, for development.",
            "\
# single: the topology rules of ADR 007 (control-plane quorum across hosts,
# controller replicas, spread, capacity) are off. A kind cluster is one
# machine; there is no topology to check.
topology: single",
        ),
        Substrate::Talos => (
            "Talos Linux VMs on Proxmox VE hosts.",
            "\
# ha: the topology rules of ADR 007 are errors. They read the contract, so
# they judge the example values in contracts/staging.yaml until you put in
# your stack's real outputs; until your platform runs the controllers ADR
# 007 names (Cilium, CoreDNS, Longhorn, Traefik, cert-manager, External
# Secrets), `strata check` notes each one it does not find. Set `single` to
# turn the rules off while the cluster is not yet highly available.
topology: ha",
        ),
    };
    let name = substrate.name();
    format!(
        "\
# The environment {env}: {about}
# One file per environment; its name is the environment's name.
substrate: {name}                   # selects values-substrate-{name}.yaml layers
contract: contracts/{env}.yaml      # the substrate stack's outputs (see that file)
{topology}
git:
  # Where Flux and Argo CD read this repository: replace with its clone URL.
  url: https://git.example.com/platform.git
  ref: {{branch: main}}
"
    )
}

/// The contract template: every output the substrate type reads.
pub fn contract(substrate: Substrate) -> String {
    let body = match substrate {
        Substrate::Kind => KIND_CONTRACT,
        Substrate::Talos => TALOS_CONTRACT,
    };
    format!("{}{body}", contract_head(substrate.env()))
}

/// What every contract template opens with.
fn contract_head(env: &str) -> String {
    format!(
        "\
# The substrate contract: what the stack that builds the cluster outputs
# (ADR 0032), here as a plain mapping of output name to value. Replace it
# with your stack's real outputs:
#
#   tofu output -json | strata contract import --env {env} -
#
# Credentials (cluster_ca_certificate, client_certificate, client_key) are
# outputs strata never reads; `strata contract import` keeps only their
# names, never their values. strata reads this file and never writes it.
"
    )
}

const KIND_CONTRACT: &str = "\
substrate: kind                    # must equal the environment's substrate
cluster_name: dev                  # example: your kind cluster's name
endpoint: https://127.0.0.1:6443   # example: the API as your machine sees it
internal_endpoint: https://dev-control-plane:6443   # example: as containers see it
# The nodes, as templates and rules read them. On kind every node is its
# own host: the host label is kubernetes.io/hostname, equal to `host`.
nodes:
  - name: dev-control-plane        # example
    address: 172.18.0.2            # example
    host: dev-control-plane
    roles: [control-plane, worker]
    labels:
      kubernetes.io/hostname: dev-control-plane   # the host label
    cpu: 4                         # example: cores
    memory_mib: 8192               # example
";

const TALOS_CONTRACT: &str = "\
# EVERY VALUE BELOW IS AN EXAMPLE, in the documentation network 192.0.2.0/24
# (RFC 5737): three control-plane VMs on three Proxmox hosts, the shape ADR
# 007 asks for, so that its rules pass. They judge these values until you
# replace them with your own.
substrate: talos                   # must equal the environment's substrate
cluster_name: staging              # example
endpoint: https://192.0.2.10:6443  # example: the API through its virtual IP
internal_endpoint: https://192.0.2.10:6443   # example
# TOPO005: the API's Layer 2 virtual IP lies in network.cidr, outside the
# DHCP range, and is no node's address.
api_vip: 192.0.2.10                # example
# TOPO004: what talosctl talks to are the control-plane nodes' own
# addresses, never the virtual IP (which moves with etcd leadership).
talosctl_endpoints: [192.0.2.11, 192.0.2.12, 192.0.2.13]   # example
network:
  cidr: 192.0.2.0/24               # example: the node network
  dhcp_range: [192.0.2.100, 192.0.2.199]   # example: what DHCP hands out
  lb_pool: [192.0.2.240/28]        # example: LoadBalancer IPs Cilium announces
  interface: ens18                 # example
# TOPO001-003: at least three control-plane nodes, an odd number, on
# distinct physical hosts, each carrying its host in the host label
# topology.kubernetes.io/zone (host_label in strata.yaml overrides it).
# CAP001 reads cpu and memory_mib: with the largest host down, the others
# must hold every pod's requests.
nodes:
  - name: talos-cp-01              # example
    address: 192.0.2.11            # example
    host: pve-01                   # example: the Proxmox host it runs on
    roles: [control-plane]
    labels:
      kubernetes.io/hostname: talos-cp-01
      topology.kubernetes.io/zone: pve-01   # the host label, equal to host
    cpu: 4                         # example: cores
    memory_mib: 8192               # example
  - name: talos-cp-02              # example
    address: 192.0.2.12            # example
    host: pve-02                   # example
    roles: [control-plane]
    labels:
      kubernetes.io/hostname: talos-cp-02
      topology.kubernetes.io/zone: pve-02   # the host label, equal to host
    cpu: 4                         # example
    memory_mib: 8192               # example
  - name: talos-cp-03              # example
    address: 192.0.2.13            # example
    host: pve-03                   # example
    roles: [control-plane]
    labels:
      kubernetes.io/hostname: talos-cp-03
      topology.kubernetes.io/zone: pve-03   # the host label, equal to host
    cpu: 4                         # example
    memory_mib: 8192               # example
";
