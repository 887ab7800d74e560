//! Loading and merging values files: any bytes, split into two layers, must
//! parse or fail with an error at a place, merge, and write YAML that reads
//! back to the same values. Never a panic, a hang or unbounded memory.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (a, b) = text.split_once("\n===\n").unwrap_or((text, ""));
    let fa: Arc<str> = Arc::from("values.yaml");
    let fb: Arc<str> = Arc::from("values-dev.yaml");
    let (Ok(mut base), Ok(over)) = (strata::yaml::parse(&fa, a), strata::yaml::parse(&fb, b)) else { return };
    if base.as_map().is_none() || over.as_map().is_none() {
        return;
    }
    strata::merge::merge_into(&mut base, &over);
    let json = base.to_json();
    let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": json});
    let yaml = strata::yaml::to_canonical_yaml(&object);
    let back = strata::yaml::parse_plain_multi(&Arc::from("out.yaml"), &yaml).expect("strata's own output parses");
    assert_eq!(back.len(), 1, "{yaml}");
    assert_eq!(back[0]["data"], object["data"], "round trip changed the values:\n{yaml}");
});
