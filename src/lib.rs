//! strata compiles a platform repository into the Kubernetes tree that Argo CD
//! and Flux consume. A compile runs these stages, data flowing one way:
//!
//! 1. [`load`]: find `strata.yaml`, read components, environments, substrate
//!    contracts and substrate types into spanned, typed inputs.
//! 2. [`merge`]: merge each component's value layers Helm-style, keeping the
//!    file, line and column of every value.
//! 3. [`render`]: build the Flux and Argo CD objects, component manifests and
//!    the cluster objects the substrate generates.
//! 4. [`inflate`]: render each component's chart with helm, offline, from the
//!    digest-pinned store of [`charts`].
//! 5. [`validate`]: check inputs, rendered and inflated objects against JSON Schemas.
//! 6. [`invariants`]: check the topology rules of ADR 007.
//! 7. [`emit`]: lay the objects out as files and write the tree atomically.
//! 8. [`diff`]: compare two compiles object by object.
//! 9. [`gates`]: compute the rollout gates of decision records from a compile.
//!
//! All file access goes through [`world::World`]; findings are
//! [`diag::Diagnostic`]s, printed only by the CLI. Sensitive contract
//! outputs are recognised in one place, [`secrets`], which every printer asks.

pub mod charts;
pub mod cli;
pub mod diag;
pub mod diff;
pub mod emit;
pub mod gates;
pub mod inflate;
pub mod invariants;
pub mod load;
pub mod merge;
pub mod pipeline;
pub mod render;
pub mod secrets;
pub mod validate;
pub mod world;
pub mod yaml;
