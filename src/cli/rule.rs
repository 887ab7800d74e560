//! `strata rule [CODE]`: list the invariant rules, or print one rule's
//! documentation. Needs no repository.

use clap::Args;

use super::exit;
use crate::diag::{RuleMeta, codes};
use crate::diff::review::lints::{self, LINTS};
use crate::invariants::registry::{self, RULES};

#[derive(Args, Debug)]
pub struct RuleArgs {
    /// The rule to explain, e.g. NET001 (default: list every rule)
    #[arg(value_name = "CODE")]
    pub code: Option<String>,
}

/// Every rule's metadata and every input-error code's, for the SARIF
/// renderer: each `ruleId` a result can carry is described.
pub fn metadata() -> Vec<RuleMeta> {
    RULES
        .iter()
        .map(|r| RuleMeta {
            id: r.code,
            name: r.name,
            summary: r.summary,
            help: r.doc,
        })
        .chain(INPUT_ERRORS.iter().copied())
        .collect()
}

/// What code scanning shows for each input-error code of [`codes`]: a name,
/// one line, and what to do.
pub const INPUT_ERRORS: &[RuleMeta] = &[
    RuleMeta {
        id: codes::IO,
        name: "unreadable-file",
        summary: "a file could not be read: missing, unreadable, or outside the repository",
        help: "A file that strata.yaml, a config.yaml or an environment names could not be read. Check that it exists, is readable, is UTF-8 text under the size limit, and lies inside the repository (no `..` or symbolic link out of it).",
    },
    RuleMeta {
        id: codes::SYNTAX,
        name: "invalid-syntax",
        summary: "a YAML or JSON file is malformed, repeats a key, or exceeds a budget",
        help: "The file is not valid YAML or JSON: fix the syntax at the place shown. Duplicate keys are errors, and so are documents nested too deep or with too many aliases.",
    },
    RuleMeta {
        id: codes::UNKNOWN_KEY,
        name: "unknown-key",
        summary: "a key strata does not know",
        help: "The key is not part of strata's input format; the message suggests the nearest valid key. Rename it, or remove it.",
    },
    RuleMeta {
        id: codes::SHAPE,
        name: "invalid-field",
        summary: "a field is missing, has the wrong type, or a value of the wrong form",
        help: "A required field is missing, or a field has a value of the wrong type or form (a URL, a version range, a git ref). The message says what was expected. Names are E019, objects E020.",
    },
    RuleMeta {
        id: codes::CONTRACT,
        name: "contract-mismatch",
        summary: "an environment and its substrate contract disagree, or the contract is malformed",
        help: "The contract is the substrate stack's `tofu output -json`: a mapping of output names, with a `substrate` output equal to the environment's `substrate`. Rewrite it with `tofu output -json`, or correct the environment.",
    },
    RuleMeta {
        id: codes::GRAPH,
        name: "broken-requires",
        summary: "`requires` names no component, or the requirements form a cycle",
        help: "Every name in a component's `requires` must be a component of the platform, and the requirements must not form a cycle.",
    },
    RuleMeta {
        id: codes::TEMPLATE,
        name: "template-error",
        summary: "a template failed to render",
        help: "A manifest template (`.yaml.j2`) or a built-in template failed: an undefined variable, a filter error, or output that is not YAML. The message names the template and line.",
    },
    RuleMeta {
        id: codes::SENSITIVE,
        name: "sensitive-reference",
        summary: "a template or value refers to a sensitive contract output",
        help: "Outputs marked `sensitive` in the contract never reach the rendered tree. Remove the reference; pass credentials through a Secret that the cluster provides instead.",
    },
    RuleMeta {
        id: codes::OUTPUT,
        name: "unsafe-output",
        summary: "the output tree cannot be written safely",
        help: "The rendered tree could not be written as a whole: a generated file was edited by hand, a folder strata did not create is in the way, or the disk refused. The message says which; `strata render --force` overwrites hand edits.",
    },
    RuleMeta {
        id: codes::SCHEMA,
        name: "schema-violation",
        summary: "a JSON Schema rejected an input or a rendered object",
        help: "An input file or a rendered Kubernetes object does not match its JSON Schema. The message gives the JSON path and what was expected, at the line that set the value. A kind without a schema is E021, a schema that cannot be used E022, objects not validated at all E023.",
    },
    RuleMeta {
        id: codes::WAIVER,
        name: "invalid-waiver",
        summary: "a waiver is malformed, expired, or unused",
        help: "A waiver in an environment file names no rule, no component or object, or no valid date; has expired (fix what it covers, or agree on a new date); or matches no finding (remove or correct it).",
    },
    RuleMeta {
        id: codes::CHART_RENDER,
        name: "chart-render-failed",
        summary: "helm cannot render a component's chart with its merged values",
        help: "helm template failed for a component in an environment: usually a `required` value the chart asks for, or a template error. The message gives helm's own words; set the value in the layer of that environment. With `inflate: helm` a missing helm binary is this error too.",
    },
    RuleMeta {
        id: codes::CHART_STORE,
        name: "chart-not-in-store",
        summary: "a chart archive is not pinned in strata.lock, not in the store, or not the bytes the lock pins",
        help: "`strata charts pull` fetches every pinned chart into .strata/charts and records its digest in strata.lock. A stored archive that does not hash to the pinned digest is refused in every mode; remove .strata/charts and pull again.",
    },
    RuleMeta {
        id: codes::CHART_UNSTABLE,
        name: "chart-output-unstable",
        summary: "a chart renders differently each time from the same input",
        help: "The chart generates a password, key or certificate, or reads the clock, on every render. Argo CD shows such objects OutOfSync forever and every diff changes them. Give the chart fixed values (an existing Secret), or issue the certificate with cert-manager.",
    },
    RuleMeta {
        id: codes::PROFILE_JUDGED,
        name: "judged-through-profile",
        summary: "components judged through chart profiles instead of their rendered chart, or not checked at all",
        help: "These components' charts were not rendered (helm missing, the chart not pulled, or `inflate: off`), so the rules read their values through the chart profiles (a wrapper chart's dependency through its own profile, under its values key): a note. On `topology: ha`, a component whose chart is not rendered and that no profile describes is not checked by any rule: a warning that names each. A component without a chart is its manifests, judged as the objects they are. Install helm and run `strata charts pull` to check what will run.",
    },
    RuleMeta {
        id: codes::VALUES_TYPO,
        name: "values-key-typo",
        summary: "a values key above the base layer that the chart and the lower layers lack, close to one they have",
        help: "An environment or substrate layer sets a key that no lower layer and no default of the chart (its values.yaml, or its profile) has, and that is a letter or two away from a key that exists at the same place. Helm passes it to the chart, which ignores it. Fix the spelling, or, if the key is right, ignore the warning. Keys under labels, annotations, env, extra* and maps whose chart default is `{}` are never flagged.",
    },
    RuleMeta {
        id: codes::PATCH,
        name: "patch-does-not-apply",
        summary: "a `patches:` entry cannot be applied to the object it targets",
        help: "An RFC 6902 patch in a config.yaml or an environment file failed on the generated object it targets: a path that does not exist for `replace` or `remove`, a failed `test`, or a malformed operation. The caret points at the operation; `strata render` shows the generated object under rendered/.",
    },
    RuleMeta {
        id: codes::PATCH_UNMATCHED,
        name: "patch-matches-nothing",
        summary: "a `patches:` entry matches no object in an environment",
        help: "A warning at the patch: its kind, name and namespace match no object strata generates for the component, nor any object its chart renders, in this environment (a misspelt kind or name, an object the chart no longer renders, an `Application` patch in a Flux-only environment). The patch does nothing there. Correct its target against what `strata render` writes under rendered/, or remove it. Patches on what a chart renders are judged only where the chart was rendered.",
    },
    RuleMeta {
        id: codes::CLUSTER_OBJECTS,
        name: "cluster-objects-cannot-work",
        summary: "the cluster objects the substrate generates cannot work as the platform is set up",
        help: "A hand-written CiliumLoadBalancerIPPool overlaps the pool generated from the contract's network.lb_pool, or Cilium has L2 announcements on without kube-proxy replacement (which they need), so the policy and pool are not generated.",
    },
    RuleMeta {
        id: codes::NAME,
        name: "invalid-name",
        summary: "a name Kubernetes, Helm or strata refuses",
        help: "An environment name must be a DNS-1123 label, a component name a valid Helm release name equal to its folder's name, a namespace a DNS-1123 label; `cluster` is reserved for the environment's own Application. Rename the file, folder or field the message points at.",
    },
    RuleMeta {
        id: codes::OBJECT,
        name: "object-cannot-be-written",
        summary: "objects that cannot be written as they are: defined twice, laid out into one file, not Kubernetes objects",
        help: "Two objects of an environment share apiVersion, kind, namespace and name, or would be written to the same file; a manifest document is not a Kubernetes object (apiVersion, kind and metadata.name, with a kind and apiVersion Kubernetes accepts); a manifest writes a namespace Kubernetes creates itself; or two components sharing a namespace give it different labels or annotations. Rename or remove one of them.",
    },
    RuleMeta {
        id: codes::NO_SCHEMA,
        name: "no-schema-for-kind",
        summary: "no schema location has a schema for a rendered kind",
        help: "Objects of this kind were not validated. Run `strata schemas pull`, or add a folder that has the schema to `schemas:` in strata.yaml or pass --schemas DIR (for a custom resource, a CRDs-catalog folder: <group>/<kind>_<version>.json). A warning, or an error with --strict-schemas.",
    },
    RuleMeta {
        id: codes::BAD_SCHEMA,
        name: "schema-unusable",
        summary: "a schema, or a schema location, cannot be used",
        help: "A schema file is not a valid JSON Schema (a component's values.schema.json, a file of a schema folder), or a schema location in strata.yaml uses a variable strata does not know. Replace or fix the file, or correct the location.",
    },
    RuleMeta {
        id: codes::NOT_VALIDATED,
        name: "objects-not-validated",
        summary: "rendered objects were not validated: no schema location is set",
        help: "A note, once per run: strata has no Kubernetes or CRD schemas to validate the rendered objects against. Run `strata schemas pull` once (used offline afterwards), list schema folders under `schemas:` in strata.yaml, or pass --schemas DIR; `schemas: []` says no schemas are wanted and turns the note off.",
    },
    RuleMeta {
        id: codes::HYDRATED_SECRET,
        name: "secret-in-hydrated-output",
        summary: "a hydrated tree would commit a Secret, key material in any object, or values a chart generates at random, to git",
        help: "A hydrated environment writes what each chart renders into the tree, and the tree is committed. A chart that renders a Secret (a password, a token, a certificate) would put it in git, and so would one that writes key material into an object of another kind: a private key (as PEM, or base64 of it), a token in an issuer's shape (a JSON Web Token, a bootstrap, GitHub, GitLab, Slack, AWS or Google token), or a random-looking value under a key that names a credential; one that generates values at random (randAlphaNum, genCA, now) would change them on every render. The message names the object, its template and where in it the material is, never the material. Set `hydrate: false` in the component's config.yaml (it stays a Helm release, rendered in the cluster), or have the chart read a Secret that an ExternalSecret creates, or give it fixed values for what it generates.",
    },
    RuleMeta {
        id: codes::SUBSTRATE_SECRET,
        name: "secret-in-substrate-patch",
        summary: "the CNI renders a Secret, key material in any object, or random values that talos-patch.yaml would carry into git",
        help: "rendered/<env>/substrate/talos-patch.yaml carries the CNI's objects as Talos inline manifests, and the tree is committed. A CNI chart that renders a Secret (Cilium's Hubble certificates with `hubble.tls.auto.method: helm`), key material in an object of any kind (a private key in a ConfigMap, a token), or values it generates at random would put them in git; the message names the object and where in it, never the material. Have the chart create it in the cluster instead (Cilium: `hubble.tls.auto.method: cronJob`), or turn off what needs it. kind's `cni.yaml` is held to the same. An error finding: nothing is written, and every other check still runs. When the CNI is installed outside strata (a Talos patch of your own, helmfile), say so in strata.yaml, `cni: {component: NAME, bootstrap: external}`: the substrate files then carry none of its objects.",
    },
    RuleMeta {
        id: codes::SUBSTRATE_CNI,
        name: "cni-not-inline",
        summary: "talos-patch.yaml lacks the CNI's objects: its chart was not rendered",
        help: "A note: a Talos environment's patch sets `cluster.network.cni.name: none`, so the cluster has no pod network until the CNI runs, and the patch should carry the CNI's objects as inline manifests. strata renders them from the lock with the environment's values; without helm or the chart in the store it cannot (nor write kind's `cni.yaml`). Install helm v4 and run `strata charts pull`, or, when the CNI is installed another way, write `cni: {component: NAME, bootstrap: external}` in strata.yaml.",
    },
    RuleMeta {
        id: codes::UNUSED_MIRROR,
        name: "unused-chart-mirror",
        summary: "a chart mirror that no chart goes through",
        help: "A key of `charts.mirrors` is compared with each chart's repository URL as a URL: scheme and host in any case, the default port (443, or 80 for http) written or not, a trailing slash or not; it matches the URL itself or what follows it after a `/`. A key that matches no `repoURL` of a component (nor, in strata.yaml, a dependency's repository of a chart inside the repository) does nothing: `strata charts pull` fetches from upstream, and an air-gapped environment's objects keep the upstream URL. Correct the key to the repository's URL, or remove the mirror.",
    },
    RuleMeta {
        id: codes::HA_JUDGED,
        name: "ha-workloads-judged",
        summary: "which workloads the HA rules judge in an environment",
        help: "A note, printed first by `strata check`: the workloads HA001-HA003 judge in an environment, each with its component. They are the controllers ADR 007 names (recognised by their pod labels and images) and every Deployment and StatefulSet of a component with `ha: true` in its config.yaml, or with `components: {NAME: {ha: true}}` in the environment (which overrides it). A workload of your own that should run highly available and is not listed: set `ha: true` on its component.",
    },
    RuleMeta {
        id: codes::HYDRATED_HOOK,
        name: "hydrated-helm-hook",
        summary: "a hydrated chart's Helm hooks, which a Flux tree applies in Helm's order by Kustomizations of their own",
        help: "A note on a hydrated Flux environment: kustomize-controller reads no `helm.sh/hook` annotation, so strata gives each phase its own folder and Kustomization: pre-install and pre-upgrade hooks in `components/<c>/pre-hooks/`, applied and waited for before the component's Kustomization; post-install and post-upgrade hooks in `post-hooks/`, after it, and what requires the component waits for them. Helm's `hook-weight` order within a phase and its delete policies are not kept. Argo CD maps pre- and post-install and -upgrade hooks to PreSync and PostSync hooks and runs them on every sync. Set `hydrate: false` on a component whose hooks need Helm's own lifecycle.",
    },
    RuleMeta {
        id: codes::ENGINE_VERSION,
        name: "unsupported-engine-version",
        summary: "an engine release strata cannot write for: `engines:` that is no release, or a Flux older than 2.5 or an Argo CD older than 2.6",
        help: "strata reads the Flux and Argo CD release each environment runs from `engines:` in strata.yaml, else from the engine component's chart (a flux2 or argo-cd chart: its appVersion when the archive is in the store, else the release its version ships). It writes for Flux 2.5 or newer (Kustomization `deletionPolicy`, on which deletion safety rests) and Argo CD 2.6 or newer (`managedNamespaceMetadata`). Write a release as a quoted string (`flux: \"2.7\"`: YAML reads 2.10 as the number 2.1), or upgrade the engine; docs/output.md lists what each release brings.",
    },
    RuleMeta {
        id: codes::ENGINE_FIELD,
        name: "field-the-engine-release-lacks",
        summary: "a setting the environment's Flux or Argo CD release does not accept; strata writes the nearest form it takes",
        help: "Some fields strata writes came with a later release than the oldest it writes for: OCIRepository v1 (Flux 2.6), HelmRelease `RetryOnFailure` (Flux 2.7), Application `syncPolicy.retry.refresh` (Argo CD 3.2), the `ServerSideDiff=true` compare option (Argo CD 2.10). Where the environment runs an older release, strata writes what it accepts (v1beta2; `install.remediation.retries: -1` and a single upgrade attempt; a retry limited to 5 attempts without refresh; no compare option) and says so: a note for its own defaults, a warning at the line of a setting you wrote. Upgrade the engine, or set `engines:` in strata.yaml if the cluster runs a newer release than its chart says.",
    },
    RuleMeta {
        id: codes::ENGINE_CRD,
        name: "engine-crd-refuses-object",
        summary: "an object strata generates that the CRDs of the environment's own engine chart refuse",
        help: "Where the environment's flux2 or argo-cd component is rendered, the CRDs its chart ships are what the API server will hold, so strata checks its own Flux and Argo CD objects against them: a field they do not know, or a kind they do not serve at the API version written, would be refused when the engine applies the tree. What strata's own schema of the kind refuses (E051) is said there and not again here. Usually `engines:` in strata.yaml names a newer release than the chart installs, or a `patches:` entry adds a field the release lacks: make `engines:` match the chart, or remove the field.",
    },
    RuleMeta {
        id: codes::HAND_OVER,
        name: "delivery-hand-over",
        summary: "a component switches between a Helm release and hydrated objects; the tree hands it over so that nothing is uninstalled",
        help: "Read from the tree strata wrote before. Flux, release to hydrated: the HelmRelease stays, suspended and with `kustomize.toolkit.fluxcd.io/prune: disabled` (helm-controller uninstalls nothing for a suspended HelmRelease it deletes), and the manifests' Kustomization stays, suspended, with `deletionPolicy: Orphan`. Flux, hydrated to release: the objects stay with `prune: disabled` until helm-controller has taken them over. Argo CD: the manifests' Application stays without its finalizer, or the component's Application prunes nothing meanwhile. The hand-over lasts until the component changes again. Commit and push it on its own and let the engine apply it first (docs/output.md, \"Switching a component\").",
    },
    RuleMeta {
        id: codes::HOOK_LEFT_OUT,
        name: "hook-left-out-of-flux",
        summary: "a Helm hook of no install or upgrade phase (delete, rollback, test) that a hydrated Flux tree leaves out",
        help: "kustomize-controller reads no `helm.sh/hook`: a pre-delete Job in the tree would run at install as an ordinary object (a chart's uninstall Job would uninstall it), so a hydrated Flux tree leaves out every hook that belongs to no install or upgrade, and this note names each. Run such a hook by hand when it is due, or set `hydrate: false` on the component so that helm-controller runs its hooks.",
    },
    RuleMeta {
        id: codes::CHART_IDENTITY,
        name: "chart-archive-not-the-locked-chart",
        summary: "a stored chart archive holds another chart or version than its strata.lock entry pins",
        help: "Every run reads the Chart.yaml inside each archive it uses and compares its name and version with the strata.lock entry that pins the archive's digest. They differ when the entry's digest was edited to another stored chart's, so strata would judge the wrong chart. Restore strata.lock from version control (`git checkout strata.lock`), or run `strata charts pull --update` and review the change to the lock.",
    },
    RuleMeta {
        id: codes::HELM_ARGUMENT,
        name: "unsafe-helm-argument",
        summary: "a chart name or version, or a custom resource's API version, that cannot be given to helm",
        help: "A chart name must be letters, digits, `.`, `_` and `-`, starting with a letter or digit; a version a SemVer version; a CustomResourceDefinition's group a DNS subdomain and each version a DNS-1035 label such as v1beta1. Anything else could reach helm's command line as a flag (`--post-renderer=x`), as two values (`v1,policy/v9` in `--api-versions`), or as a path (`..`). Fix the name in config.yaml or Chart.yaml, or the CRD (or the values that render it).",
    },
    RuleMeta {
        id: codes::FILTERED,
        name: "input-is-filtered",
        summary: "an input is what a git filter stores in place of the file",
        help: "strata reads files as they are and runs no git filter. In a revision (`strata diff --base`), a file under Git LFS is a pointer and one under git-crypt is encrypted; in the working tree the same happens when the filter's smudge step did not run (`git lfs pull`, `git-crypt unlock`). A contract under a repository's own clean/smudge filter is named when what strata reads is not a contract. Keep strata's inputs out of those patterns in .gitattributes: a contract written by `strata contract import` holds no secret.",
    },
    RuleMeta {
        id: codes::CONTRACT_IMPORT,
        name: "contract-import-refused",
        summary: "`strata contract import` cannot write the environment's contract",
        help: "The input is not what `tofu output -json` (or `terraform output -json`) prints — a JSON object of outputs, each `{value, type, sensitive}` — and the message gives its line and column; or the place to write is outside the repository, or holds a file that is not a contract (pass --force to replace it); or the outputs' `substrate` is not the environment's (another stack's outputs; --force writes them anyway); or, without --env, the platform has more than one environment. Nothing is written then.",
    },
    RuleMeta {
        id: codes::IMPORT_SOURCE,
        name: "import-source-unreadable",
        summary: "the Flux or Argo CD tree given to `strata import` cannot be read",
        help: "`strata import flux|argo PATH` copies the tree and reads the YAML files under it; for Flux it finds every folder Flux syncs from (a GitRepository with its Kustomization, a FluxInstance, a flux-system folder, clusters/<name>/) and builds it, and each folder a Flux Kustomization points at, with `kubectl kustomize`. The message names the file or folder: a path that is no folder, YAML that does not parse, a kustomization kubectl refuses, kubectl missing from the PATH, no Flux root, or a tree with no HelmRelease, Application or ApplicationSet. Fix the tree, or install kubectl.",
    },
    RuleMeta {
        id: codes::NOT_CONVERTED,
        name: "not-converted",
        summary: "something in the imported tree that `strata import` could not convert",
        help: "A warning per thing left out, with the reason: a SOPS-encrypted document or value (never written), values from a Secret (not in git; put them in the cluster with an ExternalSecret), a ConfigMap not found in the tree, a `targetPath` whose place a later source also sets, an Argo CD plugin source, what a kustomization does besides its helmCharts, an ApplicationSet generator other than list or git, a git generator whose files are not in the tree, a chart from another git repository, a resource fetched from a URL, a chart version range and what it was pinned to, an object kind the importer does not read. The written platform leaves these out; add them by hand.",
    },
    RuleMeta {
        id: codes::IMPORT_DIFFERS,
        name: "import-values-differ",
        summary: "after an import, a release's merged values differ from what the source tree gives it",
        help: "`strata import` compiles the platform it wrote and compares each release's merged values, per environment, with the values Flux (valuesFrom in order, then inline values), Argo CD (valueFiles, values or valuesObject, parameters) or kustomize's helm inflator (valuesFile, valuesInline, additionalValuesFiles) gives the release in the source tree. The message gives the path and both values. Edit the component's layers until they agree, or report the case: the importer should have written them equal.",
    },
    RuleMeta {
        id: codes::IMPORT_OUTSIDE,
        name: "import-outside-tree",
        summary: "the tree given to `strata import` names something outside itself",
        help: "`strata import` reads only the tree it is given: it copies it first, and refuses a symbolic link that leads out of it, a kustomization entry (resources, components, patches, generator files, helm values files) whose path leaves it or is absolute, a patch or file kustomize would fetch from an http(s) URL, or a chart's `file://` dependency out of it, naming the file and line. Nothing is imported. Copy what the link or path names into the tree, or import the folder that holds both. A resource fetched from a URL is not refused: it is left out and listed (E033).",
    },
    RuleMeta {
        id: codes::IMPORT_UNPROVEN,
        name: "import-unproven",
        summary: "an imported release that could not be proven equal to the source's",
        help: "`strata import` calls a release equal only once its chart rendered and its values and objects matched. This release could not be checked: its chart could not be rendered (not pulled, no helm, the reason is given), or the engine gives it values the import cannot read — SOPS-encrypted values or documents, a Secret's values, a file outside the tree — which are never written, or changes the objects its chart renders in ways the import does not carry over (a HelmRelease's postRenderers, a kustomization's patches or labels over its helmCharts). Pull the charts (`strata charts pull`) and render, and put what the unread values stand for in the component's layers (secret values belong in the cluster: an ExternalSecret).",
    },
    RuleMeta {
        id: codes::IMPORT_OBJECTS,
        name: "import-objects-differ",
        summary: "an imported release renders other objects than the engine's render of the source",
        help: "`strata import` renders each release twice with the same chart and helm: as strata's compile of the written platform gives it, and as the engine gives it (its release name and namespace, the values from the source tree, the chart's CRDs only where the engine installs them, a kustomization's namespace). The objects that differ are named. A release name other than the component's, CRDs a kustomize `helmCharts:` entry leaves out, or what a kustomization's patches do, are the usual causes: rename the component, or set the difference in its layers or `patches`.",
    },
    RuleMeta {
        id: codes::REFUSED_WRITE,
        name: "refused-to-write",
        summary: "`strata init` or `strata import` would overwrite a file or write outside its folder",
        help: "strata writes a new platform only into a folder without a strata.yaml, never replaces a file that is already there, and never follows a symbolic link out of the folder. Nothing was written. Choose an empty or new folder, or move the file away.",
    },
    RuleMeta {
        id: codes::NAMESPACE_METADATA,
        name: "namespace-metadata-refused",
        summary: "a namespace label or annotation that the API server or Pod Security admission refuses",
        help: "A component's `namespace: {labels, annotations}` become the Namespace's metadata (Flux) or an Application's `managedNamespaceMetadata` (Argo CD). The API server refuses a key that is no qualified name (`[prefix/]name`, the name at most 63 letters, digits, `-`, `_`, `.`), a label value past 63 characters or with other characters (a space), and Pod Security admission a `pod-security.kubernetes.io/enforce|audit|warn` level other than privileged, baseline, restricted, or a `-version` other than `latest` or `v1.<minor>`. The finding points at the line in config.yaml; fix the key or value there. See docs/limits.md.",
    },
    RuleMeta {
        id: codes::ENGINE_OBJECT,
        name: "engine-object-refused",
        summary: "one of strata's own Flux or Argo CD objects, as patched, that its kind's schema refuses",
        help: "strata checks the GitRepository, OCIRepository, HelmRepository, Kustomization, HelmRelease and Application it writes, after the `patches:` of config.yaml and the environment, against schemas of its own written from the engines' CRDs (docs/schemas.md): a duration Flux reads is a Go duration such as `15m` (not `15 minutes`), enumerations take their listed words, and a field the kind does not have is refused. The finding points at the patch operation or the config.yaml key that wrote the value.",
    },
    RuleMeta {
        id: codes::SERVER_VALUE,
        name: "value-refused-by-api-server",
        summary: "a port, label, annotation key or name in a rendered object that the API server refuses",
        help: "The Kubernetes JSON Schemas do not state every check of the API server: a port number is between 1 and 65535, a port name at most 15 lower-case letters, digits and `-`; label keys and annotation keys are qualified names; label values (also in selectors and nodeSelector) at most 63 letters, digits, `-`, `_`, `.`; annotations at most 256 KiB together; names are DNS labels or subdomains. strata checks them on every rendered object — manifests, the objects charts render, its own — and points at the line that set the value: the manifest, the values layer, or the patch.",
    },
    RuleMeta {
        id: codes::ADMISSION_NOT_RUN,
        name: "admission-preview-not-run",
        summary: "the admission preview (ADM001-ADM003) did not run for an environment",
        help: "`strata check` judges each environment's pods and objects with the admission code the cluster runs, through two programs built from strata's admission/ folder: strata-admission (Kubernetes' PodSecurity and ValidatingAdmissionPolicy plugins) and strata-kyverno (Kyverno's engine). strata looks for each in STRATA_ADMISSION or STRATA_KYVERNO (a path, or `off`), then on the PATH, then beside strata-helm-renderer. The note names what was missing or why the program failed; the rest of the check ran. Build the programs with Go (`cd admission && go build -o DIR/strata-admission .`, `cd admission/kyverno && go build -o DIR/strata-kyverno .`), or fix the substrate's `pod_security:` configuration when Kubernetes' own loader refuses it.",
    },
    RuleMeta {
        id: codes::ADMISSION_NOT_JUDGED,
        name: "admission-not-judged",
        summary: "something the admission preview could not judge",
        help: "The admission preview judged everything else. What it leaves out, each named at its object: an object whose pod template Kubernetes could not read (a field of the wrong type), a ValidatingAdmissionPolicy without a binding or a binding naming no policy the environment applies (neither judges anything in the cluster either), policies and bindings of an API version other than admissionregistration.k8s.io/v1, Kyverno PolicyExceptions and policies.kyverno.io policies (not run), and a Kyverno rule that needs the cluster.",
    },
];

pub fn run(args: &RuleArgs) -> i32 {
    let Some(code) = &args.code else {
        let width = RULES
            .iter()
            .map(|r| r.name.len())
            .chain(INPUT_ERRORS.iter().map(|e| e.name.len()))
            .chain(LINTS.iter().map(|l| l.name.len()))
            .max()
            .unwrap_or(0);
        for r in RULES {
            println!("{:<8} {:<width$}  {}", r.code, r.name, r.summary);
        }
        println!("\nCodes of inputs, charts and schemas (`strata rule CODE` explains one):");
        for e in INPUT_ERRORS {
            println!("{:<8} {:<width$}  {}", e.id, e.name, e.summary);
        }
        println!("\nLints of a change, which `strata diff` reports in its review:");
        for l in LINTS {
            println!("{:<8} {:<width$}  {}", l.code, l.name, l.summary);
        }
        return exit::OK;
    };
    if let Some(l) = lints::find(code) {
        println!("{} ({}): {}\n", l.code, l.name, l.summary);
        print!("{}", l.doc);
        println!("\nThis lint runs in `strata diff`, on what a change does between two revisions.");
        return exit::OK;
    }
    let rule = registry::find(code).or_else(|| RULES.iter().find(|r| r.name == code.as_str()));
    if let Some(r) = rule {
        println!("{} ({}): {}\n", r.code, r.name, r.summary);
        print!("{}", r.doc);
        if !r.topology {
            println!("\nThis rule applies on every topology, `single` included.");
        }
        return exit::OK;
    }
    let input = INPUT_ERRORS
        .iter()
        .find(|e| e.id.eq_ignore_ascii_case(code) || e.name == code.as_str());
    match input {
        Some(e) => {
            println!("{} ({}): {}\n", e.id, e.name, e.summary);
            println!("{}", e.help);
            exit::OK
        }
        None => {
            let known: Vec<&str> = RULES
                .iter()
                .map(|r| r.code)
                .chain(RULES.iter().map(|r| r.name))
                .chain(INPUT_ERRORS.iter().flat_map(|e| [e.id, e.name]))
                .chain(LINTS.iter().flat_map(|l| [l.code, l.name]))
                .collect();
            let upper = code.to_ascii_uppercase();
            eprintln!("error: no rule `{code}`");
            match crate::load::decode::suggest(&upper, &known).or_else(|| crate::load::decode::suggest(code, &known)) {
                Some(s) => eprintln!("  = help: did you mean `{s}`? `strata rule` lists every rule"),
                None => eprintln!("  = help: `strata rule` lists every rule"),
            }
            exit::INPUT
        }
    }
}
