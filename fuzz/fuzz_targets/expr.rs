//! The `filter` expression parser, checker and evaluator: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storm::tuple::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = storm::expr::parse(text) else {
        return;
    };
    let fields = ["word".to_string(), "count".to_string(), "n".to_string()];
    let _ = expr.check(&fields);
    if let Ok(compiled) = expr.compile(&fields) {
        let _ = compiled.eval(&[Value::str("a"), Value::Int(3), Value::Float(-0.5)]);
    }
});
