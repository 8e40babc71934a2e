//! What a user wrote, before it means anything: source spans and located diagnostics (`diag`),
//! the spanned YAML value tree (`tree`), the raw topology every front end produces (`raw`), and
//! "did you mean" (`suggest`). The lowest layer: it imports no other module of the crate.

pub mod diag;
pub(crate) mod raw;
pub(crate) mod suggest;
pub(crate) mod tree;
