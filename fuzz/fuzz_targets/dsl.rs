//! The DSL parser (`-e TEXT`) and the validation after it: never a panic, and errors are
//! rendered against the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::topology::{load_inline, LoadError, LoadOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = storm::topology::dsl::parse(text);
    if let Err(LoadError::Invalid {
        source,
        diagnostics,
    }) = load_inline(text, &LoadOptions::default())
    {
        let _ = storm::syntax::diag::render_all(&diagnostics, &source);
    }
});
