//! One rule per file. Each file's `DOC` is the rule's documentation (also
//! its rustdoc) and what `strata rule CODE` prints; codes are assigned in
//! [`super::registry`] only.

/// Declares a rule's documentation once, as its rustdoc and as `DOC`.
macro_rules! doc {
    ($text:literal) => {
        #[doc = $text]
        pub const DOC: &str = $text;
    };
}

pub mod adm001;
pub mod adm002;
pub mod adm003;
pub mod cap001;
pub mod ha001;
pub mod ha002;
pub mod ha003;
pub mod net001;
pub mod net002;
pub mod ord001;
pub mod sec001;
pub mod sec002;
pub mod sto001;
pub mod sub001;
pub mod tier001;
pub mod tier002;
pub mod topo001;
pub mod topo002;
pub mod topo003;
pub mod topo004;
pub mod topo005;

use crate::load::Platform;

/// The base values file every environment inherits (the lowest layer).
pub(crate) fn base_layer(platform: &Platform, inst_dir: &str) -> String {
    let first = platform
        .project
        .layers
        .first()
        .cloned()
        .unwrap_or_else(|| "values.yaml".to_owned());
    crate::world::join(inst_dir, &first)
}
