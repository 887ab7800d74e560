//! Stage 7, diff: two compiles compared object by object.
