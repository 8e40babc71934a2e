//! The YAML/Flux topology reader and the validator: any text is an answer (a topology or
//! located errors), never a panic. The path sits in a folder that does not exist, so includes
//! and shell commands resolve against nothing real.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use storm::topology::{load_text, LoadError, LoadOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/nonexistent-fuzz-dir/topology.yaml");
    match load_text(text.to_string(), path, &LoadOptions::default()) {
        Ok(loaded) => {
            let _ = storm::model::plan::Plan::new(&loaded.topology);
        }
        Err(LoadError::Invalid {
            source,
            diagnostics,
        }) => {
            assert!(diagnostics.iter().any(|d| d.is_error()));
            let _ = storm::syntax::diag::render_all(&diagnostics, &source);
            let _ = storm::syntax::diag::json_all(&diagnostics, &source);
        }
        Err(LoadError::Unreadable(_)) => {}
    }
});
