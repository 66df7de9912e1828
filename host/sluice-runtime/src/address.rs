//! Which addresses a host name may reach over `wasi:http` without `http_private = true`:
//! the globally reachable ones. Everything else is a special-purpose range.
//!
//! The ranges follow the IANA IPv4 and IPv6 Special-Purpose Address Registries
//! (<https://www.iana.org/assignments/iana-ipv4-special-registry/>,
//! <https://www.iana.org/assignments/iana-ipv6-special-registry/>, as of 2025), taking every
//! block whose "Globally Reachable" is not plainly `True`, plus the multicast blocks
//! (224.0.0.0/4, RFC 5771; ff00::/8, RFC 4291) and the deprecated IPv6 site-local block
//! (fec0::/10, RFC 3879). Where an IPv6 address carries an IPv4 address (IPv4-mapped
//! `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` (RFC 6052),
//! 6to4 `2002:AABB:CCDD::` (RFC 3056)), the IPv4 address is checked instead. Blocks the
//! registry lists with a few globally reachable exceptions (192.0.0.0/24, 2001::/23) are
//! refused whole: no public service a tool calls by name lives there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 blocks that are not globally reachable: (network, prefix length, what it is).
const V4: [(Ipv4Addr, u8, &str); 16] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8, "0.0.0.0/8 (this network)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "10.0.0.0/8 (private-use)"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "100.64.0.0/10 (shared address space)",
    ),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "127.0.0.0/8 (loopback)"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "169.254.0.0/16 (link-local)",
    ),
    (
        Ipv4Addr::new(172, 16, 0, 0),
        12,
        "172.16.0.0/12 (private-use)",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "192.0.0.0/24 (IETF protocol assignments)",
    ),
    (
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        "192.0.2.0/24 (documentation)",
    ),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "192.88.99.0/24 (6to4 relay anycast)",
    ),
    (
        Ipv4Addr::new(192, 168, 0, 0),
        16,
        "192.168.0.0/16 (private-use)",
    ),
    (
        Ipv4Addr::new(198, 18, 0, 0),
        15,
        "198.18.0.0/15 (benchmarking)",
    ),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "198.51.100.0/24 (documentation)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "203.0.113.0/24 (documentation)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "224.0.0.0/4 (multicast)"),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        "255.255.255.255/32 (limited broadcast)",
    ),
    // After the broadcast address, which it holds.
    (Ipv4Addr::new(240, 0, 0, 0), 4, "240.0.0.0/4 (reserved)"),
];

/// IPv6 blocks that are not globally reachable and carry no IPv4 address to check instead.
const V6: [(Ipv6Addr, u8, &str); 13] = [
    (Ipv6Addr::UNSPECIFIED, 128, "::/128 (unspecified)"),
    (Ipv6Addr::LOCALHOST, 128, "::1/128 (loopback)"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "64:ff9b:1::/48 (local-use IPv4/IPv6 translation)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "100::/64 (discard-only)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "2001::/32 (Teredo)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "2001::/23 (IETF protocol assignments)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "2001:db8::/32 (documentation)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "3fff::/20 (documentation)",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "5f00::/16 (segment routing SIDs)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "fc00::/7 (unique-local)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "fe80::/10 (link-local)",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "fec0::/10 (site-local, deprecated)",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "ff00::/8 (multicast)",
    ),
];

/// True when `bits` and `net` agree on their first `len` bits (of `width`).
fn in_block(bits: u128, net: u128, len: u8, width: u32) -> bool {
    let shift = width - u32::from(len);
    len == 0 || (bits >> shift) == (net >> shift)
}

/// The special-purpose block `ip` is in, as `PREFIX (what it is)`, or `None` for a
/// globally reachable address (see the module's docs for the registries followed). An
/// IPv6 address carrying an IPv4 address answers for the IPv4 address.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => V4
            .iter()
            .find(|(net, len, _)| {
                in_block(
                    u128::from(v4.to_bits()),
                    u128::from(net.to_bits()),
                    *len,
                    32,
                )
            })
            .map(|(_, _, name)| *name),
        IpAddr::V6(v6) => {
            let bits = v6.to_bits();
            if let Some((_, _, name)) = V6
                .iter()
                .find(|(net, len, _)| in_block(bits, net.to_bits(), *len, 128))
            {
                return Some(name);
            }
            embedded_v4(v6).and_then(|v4| special_range(IpAddr::V4(v4)))
        }
    }
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:0:0/96`),
/// IPv4-compatible (`::/96`), NAT64 well-known prefix (`64:ff9b::/96`) in its low 32 bits,
/// 6to4 (`2002::/16`) in bits 16 to 47.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = v6.to_bits();
    let low = Ipv4Addr::from_bits(bits as u32);
    let nat64 = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0).to_bits();
    if bits >> 32 == 0xffff || bits >> 32 == 0 || bits >> 32 == nat64 >> 32 {
        Some(low)
    } else if bits >> 112 == 0x2002 {
        Some(Ipv4Addr::from_bits((bits >> 80) as u32))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One address per block, and what it is named.
    #[test]
    fn one_address_of_every_block_is_special() {
        let table: &[(&str, &str)] = &[
            ("0.1.2.3", "0.0.0.0/8 (this network)"),
            ("0.0.0.0", "0.0.0.0/8 (this network)"),
            ("10.200.0.1", "10.0.0.0/8 (private-use)"),
            ("100.100.0.1", "100.64.0.0/10 (shared address space)"),
            ("127.0.0.1", "127.0.0.0/8 (loopback)"),
            ("127.255.255.254", "127.0.0.0/8 (loopback)"),
            ("169.254.169.254", "169.254.0.0/16 (link-local)"),
            ("172.31.255.1", "172.16.0.0/12 (private-use)"),
            ("192.0.0.170", "192.0.0.0/24 (IETF protocol assignments)"),
            ("192.0.2.55", "192.0.2.0/24 (documentation)"),
            ("192.88.99.1", "192.88.99.0/24 (6to4 relay anycast)"),
            ("192.168.1.1", "192.168.0.0/16 (private-use)"),
            ("198.19.255.255", "198.18.0.0/15 (benchmarking)"),
            ("198.51.100.7", "198.51.100.0/24 (documentation)"),
            ("203.0.113.9", "203.0.113.0/24 (documentation)"),
            ("224.0.0.251", "224.0.0.0/4 (multicast)"),
            ("239.255.255.250", "224.0.0.0/4 (multicast)"),
            ("240.0.0.1", "240.0.0.0/4 (reserved)"),
            ("255.255.255.255", "255.255.255.255/32 (limited broadcast)"),
            ("::", "::/128 (unspecified)"),
            ("::1", "::1/128 (loopback)"),
            ("::ffff:127.0.0.1", "127.0.0.0/8 (loopback)"),
            ("::ffff:10.1.2.3", "10.0.0.0/8 (private-use)"),
            ("::127.0.0.1", "127.0.0.0/8 (loopback)"),
            ("::192.168.0.1", "192.168.0.0/16 (private-use)"),
            ("64:ff9b::127.0.0.1", "127.0.0.0/8 (loopback)"),
            ("64:ff9b::a9fe:a9fe", "169.254.0.0/16 (link-local)"),
            (
                "64:ff9b:1::8.8.8.8",
                "64:ff9b:1::/48 (local-use IPv4/IPv6 translation)",
            ),
            ("100::1", "100::/64 (discard-only)"),
            ("2001::1", "2001::/32 (Teredo)"),
            ("2001:2::1", "2001::/23 (IETF protocol assignments)"),
            ("2001:db8::1", "2001:db8::/32 (documentation)"),
            ("2002:7f00:1::1", "127.0.0.0/8 (loopback)"),
            ("2002:c0a8:101::", "192.168.0.0/16 (private-use)"),
            ("3fff:fff::1", "3fff::/20 (documentation)"),
            ("5f00::1", "5f00::/16 (segment routing SIDs)"),
            ("fd12:3456::1", "fc00::/7 (unique-local)"),
            ("fe80::1", "fe80::/10 (link-local)"),
            ("fec0::1", "fec0::/10 (site-local, deprecated)"),
            ("ff02::1", "ff00::/8 (multicast)"),
        ];
        for (ip, name) in table {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(special_range(ip), Some(*name), "{ip}");
        }
    }

    #[test]
    fn globally_reachable_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "192.0.3.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "2001:200::1",
            "4000::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(special_range(parsed), None, "{ip}");
        }
    }
}
