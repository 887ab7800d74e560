//! Reading a substrate contract: any bytes must parse and decode, or fail
//! with an error at a place; a decoded contract keeps every sensitive value
//! out of its outputs. Never a panic, a hang or unbounded memory.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file: Arc<str> = Arc::from("contracts/fuzz.json");
    let node = match strata::yaml::parse(&file, text) {
        Ok(n) => n,
        Err(e) => {
            assert!(e.origin.line >= 1 && e.origin.col >= 1, "{e:?}");
            return;
        }
    };
    let mut diags = Vec::new();
    let Some(contract) = strata::load::contract::decode(&file, node, &mut diags) else {
        assert!(!diags.is_empty(), "a refused contract says why");
        return;
    };
    serde_json::to_string(&contract.to_json()).expect("outputs serialise");
    let _ = contract.substrate();
    for name in &contract.sensitive {
        assert!(contract.get(name).is_none(), "sensitive output `{name}` is readable");
    }
});
