//! Address arithmetic for the contract's networks: membership of an address
//! in a CIDR, and overlap of two ranges (a CIDR or `first-last`).

use std::net::IpAddr;

/// An address as a number and the width of its family.
pub fn to_u128(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(v) => (u32::from(v) as u128, 32),
        IpAddr::V6(v) => (u128::from(v), 128),
    }
}

/// Whether `ip` lies in `cidr`; `None` when `cidr` is not one.
pub fn in_cidr(ip: IpAddr, cidr: &str) -> Option<bool> {
    let (net, len) = cidr.split_once('/')?;
    let net: IpAddr = net.parse().ok()?;
    let len: u32 = len.parse().ok()?;
    let (a, bits) = to_u128(ip);
    let (b, bits_b) = to_u128(net);
    if bits != bits_b || len > bits {
        return Some(false);
    }
    let shift = bits - len;
    Some(shift >= 128 || (a >> shift) == (b >> shift))
}

/// The first and last address of a CIDR or a `first-last` range, with the
/// family width.
pub fn range(s: &str) -> Option<(u128, u128, u32)> {
    if let Some((first, last)) = s.split_once('-') {
        let (a, bits) = to_u128(first.trim().parse().ok()?);
        let (b, bits_b) = to_u128(last.trim().parse().ok()?);
        return (bits == bits_b && a <= b).then_some((a, b, bits));
    }
    let (net, len) = s.split_once('/')?;
    let (n, bits) = to_u128(net.parse().ok()?);
    let len: u32 = len.parse().ok()?;
    if len > bits {
        return None;
    }
    let host = bits - len;
    let mask = if host >= 128 { u128::MAX } else { (1u128 << host) - 1 };
    Some((n & !mask, n | mask, bits))
}

/// Whether two ranges share an address.
pub fn overlap(a: &str, b: &str) -> bool {
    match (range(a), range(b)) {
        (Some((a1, a2, fa)), Some((b1, b2, fb))) => fa == fb && a1 <= b2 && b1 <= a2,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_overlap() {
        assert!(overlap("192.168.10.240/28", "192.168.10.250/32"));
        assert!(overlap("192.168.10.240/28", "192.168.10.200-192.168.10.241"));
        assert!(!overlap("192.168.10.240/28", "192.168.10.0/25"));
        assert!(!overlap("192.168.10.240/28", "fd00::/64"));
        assert!(!overlap("junk", "192.168.10.0/24"));
    }
}
