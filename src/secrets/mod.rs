//! Sensitive contract outputs, and every form in which strata could print
//! one. The contract loader ([`crate::load::contract`]) drops sensitive
//! values and keeps only a sealed [`Secrets`]; everything that prints —
//! diagnostics, source snippets, the diff, `explain` — and SEC001 ask it, so
//! what counts as a secret and how it is recognised is decided here, once.
//!
//! What is a secret: the whole value of each sensitive output and, when the
//! value is a mapping or a list, each of its leaves (strings and numbers)
//! and each of its keys — except attribute names its tofu `type` declares,
//! which `tofu output -json` prints in clear. Booleans and null hold no
//! secret. A text that the same contract also publishes in a non-sensitive
//! output is not a secret either.
//!
//! How a secret is recognised:
//! - **by value**: a parsed scalar or key equal to a secret, whatever its
//!   length. A secret of one to five characters (a PIN, a port) cannot be
//!   searched for inside text without hiding ordinary words and numbers, so
//!   for those this is the only match on parsed values;
//! - **by search**, from [`MIN_SEARCH`] characters: anywhere inside a text,
//!   in each form a printer may give it (see [`encodings`]): raw,
//!   JSON-escaped (serde's, Go's — which writes `<`, `>` and `&` as
//!   `\u003c`… — and twice over), Rust-debug-escaped, YAML double- and
//!   single-quoted, percent- and HTML-escaped, and base64 and base64url at
//!   each of the three byte alignments, so that it is found inside a longer
//!   encoded text too;
//! - each line of a multi-line secret on its own, from [`MIN_LINE`]
//!   characters: shorter lines of a structured text (`apiVersion: v1`) are
//!   ordinary text, and PEM armour lines are shared by every certificate;
//! - written over lines, from [`MIN_SEARCH`] characters: a secret with
//!   whitespace, where a text has it with other whitespace — folded at its
//!   spaces, its lines indented in a literal block, its line breaks escaped
//!   (see `fold`); the whole run is hidden, however many lines it spans;
//! - in printed text only ([`Secrets::redact_text`]): a shorter secret where
//!   it stands quoted (`"…"`, `'…'`, `` `…` ``) or, from [`MIN_WORD`]
//!   characters, as a word (`found 4711`); and a secret cut short by an
//!   ellipsis (a message that quotes only the start of a value).
//!
//! Values are redacted where they are still parsed ([`Secrets::redact_json`],
//! [`redact_for_display`]), before anything is written as text, so that
//! folding, escaping and indentation cannot split a secret past the search;
//! the search over printed text is the second line of defence.
//!
//! Key material in an object — a private key, a token — is recognised by
//! its content, whatever the object's kind ([`material`]).
//!
//! The credentials of URLs (`https://user:password@host`) are hidden apart
//! from the contract's secrets, in every printed text ([`url`]).
//!
//! One file per concern: `set` builds the set and answers for parsed
//! scalars, `encode` gives every form a secret may be printed in, `fold`
//! reads whitespace as a printer may rewrite it, `value` takes secrets out
//! of parsed values, and `text` out of printed text.

mod encode;
mod fold;
pub mod material;
mod set;
mod text;
pub mod url;
mod value;

pub use encode::{base64_decode, base64_encode, encodings, json_escape};
pub use fold::{pieces, squeeze};
pub use set::{Secrets, Sensitive};
pub use text::hidden_lines;
pub use value::{Hidden, looks_structured, redact_for_display};

/// What stands in for a secret, or for a line that holds one.
pub const MARK: &str = "<sensitive value redacted>";

/// What stands in for the value of a key of a `Secret`'s `data` or
/// `stringData` (not a contract output: named, never shown).
pub const SECRET_DATA: &str = "<redacted>";

/// Secrets of at least this many characters are searched for inside texts;
/// shorter ones only match a parsed value equal to them, or a quoted one.
pub const MIN_SEARCH: usize = 6;

/// Lines of a multi-line secret of at least this many characters are
/// searched for on their own.
pub const MIN_LINE: usize = 16;

/// In printed text, a shorter secret of at least this many characters is
/// also hidden where it stands as a word (`found 4711`).
pub const MIN_WORD: usize = 4;

#[cfg(test)]
mod tests;
