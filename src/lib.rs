//! strata compiles a platform repository into the Kubernetes tree that Argo CD
//! and Flux consume. Its modules are listed here lowest first, and each names
//! only modules listed before it (`tests/architecture.rs` keeps it so).
//!
//! At the bottom, used by every stage:
//! - [`yaml`]: YAML read with the line and column of every value, and written
//!   so that Go's YAML readers read it back unchanged;
//! - [`world`]: every file read, git, the clock, digests and bounded reads;
//! - [`secrets`]: the sensitive contract outputs, recognised in any form;
//! - [`diag`]: findings and input errors, and their renderers.
//!
//! The stages of a compile, data flowing one way:
//! 1. [`load`]: find `strata.yaml`, read components, environments, substrate
//!    contracts and substrate types into spanned, typed inputs, with the
//!    configuration every later stage reads.
//! 2. [`helm`], the one place a process runs; [`charts`], the digest-pinned
//!    chart store and `strata.lock`; [`profiles`], the chart profiles.
//! 3. [`merge`]: merge each component's value layers Helm-style, keeping the
//!    file, line and column of every value.
//! 4. [`render`]: build the Flux and Argo CD objects, component manifests and
//!    the cluster objects the substrate generates.
//! 5. [`inflate`]: render each component's chart with helm, offline.
//! 6. [`validate`]: check inputs, rendered and inflated objects against JSON
//!    Schemas, and values layers for likely typos.
//! 7. [`invariants`]: check the topology rules of ADR 007; beside it
//!    [`admission`], what the cluster's admission (Pod Security,
//!    ValidatingAdmissionPolicies, Kyverno) will make of the objects.
//! 8. [`emit`]: lay the objects out as files and write the tree atomically.
//!
//! [`pipeline`] runs the stages. Commands over a whole compile:
//! [`explain`] (why a value is what it is), [`diff`] (two compiles, object by
//! object), [`gates`] (the rollout gates of decision records). Commands that
//! write a platform: [`scaffold`] (a new one, and the writer that never
//! replaces a user's file), [`import`] (from a Flux or Argo CD tree, checked
//! by a compile). On top, [`cli`], the only printer.

// Lowest first, one to a paragraph: rustfmt sorts the `mod` lines of a
// paragraph by name, which would lose the order.
pub mod yaml;

pub mod world;

pub mod secrets;

pub mod diag;

pub mod load;

pub mod helm;

pub mod charts;

pub mod profiles;

pub mod merge;

pub mod render;

pub mod inflate;

pub mod validate;

pub mod invariants;

pub mod admission;

pub mod emit;

pub mod pipeline;

pub mod explain;

pub mod diff;

pub mod gates;

pub mod scaffold;

pub mod import;

pub mod cli;
