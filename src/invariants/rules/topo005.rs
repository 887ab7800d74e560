//! TOPO005: the API VIP must be a free address in the node network.

use std::net::IpAddr;

use crate::invariants::{Ctx, Finding, Sink};
use crate::yaml::{Node, Value};

pub const NAME: &str = "misplaced-api-vip";

doc!(
    r#"## What it does
Checks the contract's `api_vip`: it must lie inside `network.cidr`, outside
`network.dhcp_range`, and be no node's address.

## Why is this bad?
Talos announces the virtual IP on the control-plane nodes' Layer 2 network,
so it must be an address of that network. A DHCP server that hands the same
address to another machine, or a node that already owns it, makes the
Kubernetes API endpoint answer from the wrong host (ADR 007: "Reserve the
address outside DHCP").

## Example
```json
"api_vip": {"value": "192.168.10.150"},
"network": {"value": {"cidr": "192.168.10.0/24",
                      "dhcp_range": ["192.168.10.100", "192.168.10.199"]}}
```

Use instead:
```json
"api_vip": {"value": "192.168.10.10"}
```
"#
);

use crate::load::cidr::{in_cidr, to_u128};

pub fn check(ctx: &Ctx<'_>, sink: &mut Sink) {
    let contract = &ctx.env.contract;
    if ctx.missing_output(sink, "api_vip", "that the API's virtual IP is reserved outside DHCP")
        | ctx.missing_output(sink, "network", "that the API's virtual IP lies in the node network")
    {
        return;
    }
    let Some(vip_node) = contract.get("api_vip") else {
        return;
    };
    let vip_text = vip_node.as_str().unwrap_or("");
    let Ok(vip) = vip_text.parse::<IpAddr>() else {
        sink.push(
            Finding::new(
                vip_node.origin.clone(),
                format!("api_vip `{vip_text}` is not an IP address"),
            )
            .label("not an address")
            .help("give the VIP as a plain address, e.g. 192.168.10.10"),
        );
        return;
    };
    let network = contract.get("network");
    let field = |k: &str| network.and_then(|n| n.get(k));
    match field("cidr") {
        Some(c) => match c.as_str().and_then(|s| in_cidr(vip, s)) {
            Some(true) => {}
            Some(false) => sink.push(
                Finding::new(
                    vip_node.origin.clone(),
                    format!("api_vip {vip} is outside the node network {}", c.as_str().unwrap_or("")),
                )
                .label("not in network.cidr")
                .related(c.origin.clone(), "the node network")
                .help("pick a free address of the node network for the VIP"),
            ),
            None => sink.push(
                Finding::new(c.origin.clone(), "network.cidr is not a CIDR such as 192.168.10.0/24")
                    .label("not a CIDR"),
            ),
        },
        None => sink.push(
            Finding::new(
                vip_node.origin.clone(),
                "the contract has no `network.cidr`, so the VIP cannot be checked",
            )
            .help("output the node network as `network.cidr`"),
        ),
    }
    if let Some(range) = field("dhcp_range") {
        let ends: Vec<(&Node, Option<IpAddr>)> = match &range.value {
            Value::Seq(items) => items
                .iter()
                .map(|i| (i, i.as_str().and_then(|s| s.parse().ok())))
                .collect(),
            _ => Vec::new(),
        };
        match ends.as_slice() {
            [(_, Some(first)), (_, Some(last))] => {
                let (v, _) = to_u128(vip);
                if to_u128(*first).0 <= v && v <= to_u128(*last).0 {
                    sink.push(
                        Finding::new(
                            vip_node.origin.clone(),
                            format!("api_vip {vip} lies in the DHCP range {first}–{last}"),
                        )
                        .label("inside the DHCP range")
                        .related(range.origin.clone(), "the DHCP range")
                        .note("the DHCP server may lease it to another machine")
                        .help("reserve an address outside the DHCP range for the VIP"),
                    );
                }
            }
            _ => sink.push(
                Finding::new(
                    range.origin.clone(),
                    "network.dhcp_range must be [first, last] addresses",
                )
                .label("not two addresses"),
            ),
        }
    }
    for n in &ctx.nodes {
        if n.address == vip_text {
            sink.push(
                Finding::new(
                    vip_node.origin.clone(),
                    format!("api_vip {vip} is the address of node {}", n.name),
                )
                .label("taken by a node")
                .related(n.address_origin.clone(), "the node's address")
                .help("the VIP must be an address no machine owns"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_membership() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(in_cidr(ip("192.168.10.10"), "192.168.10.0/24"), Some(true));
        assert_eq!(in_cidr(ip("192.168.11.10"), "192.168.10.0/24"), Some(false));
        assert_eq!(in_cidr(ip("10.1.2.3"), "0.0.0.0/0"), Some(true));
        assert_eq!(in_cidr(ip("fd00::5"), "fd00::/64"), Some(true));
        assert_eq!(in_cidr(ip("192.168.10.10"), "nonsense"), None);
    }
}
