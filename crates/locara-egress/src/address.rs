//! Which addresses a request may reach once its host name is resolved.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use locara_manifest::NetAccess;

/// Which resolved addresses a request may connect to.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum AddressPolicy<'a> {
    /// Any address: the app itself configured the URL (its language model, a provider, an MCP
    /// server), so where it leads is the app's choice.
    Any,
    /// A tool chose the URL within these grants (host names, addresses, CIDR ranges, `*`):
    /// public addresses are reached, and an address [`non_public`] only when one of the grants
    /// names it or a range holding it.
    Grants(&'a [String]),
}

impl AddressPolicy<'_> {
    /// `Ok` when `address` may be reached; else why not, in a sentence naming the grant
    /// that would allow it.
    pub(crate) fn check(&self, host: &str, address: IpAddr) -> Result<(), String> {
        let AddressPolicy::Grants(grants) = self else {
            return Ok(());
        };
        let Some(kind) = non_public(address) else {
            return Ok(());
        };
        if grants
            .iter()
            .any(|grant| NetAccess::covers_address(grant, address))
        {
            return Ok(());
        }
        let address = address.to_canonical();
        let resolves = if host.parse::<IpAddr>().is_ok() {
            format!("`{host}` is")
        } else {
            format!("`{host}` resolves to {address}, which is")
        };
        Err(format!(
            "{resolves} {kind}; a tool reaches such an address only when the app grants that \
             address or a range holding it (e.g. `--allow-host {address}`), not through a host \
             name or `*`"
        ))
    }
}

/// What kind of address `address` is when it is not a public unicast address (`"a loopback
/// address"`, `"a private address (10.0.0.0/8)"`, `"the cloud metadata address"`, …), or
/// `None` when it is public. An IPv4-mapped, NAT64 or 6to4 IPv6 address is judged by the
/// IPv4 address inside it.
pub fn non_public(address: IpAddr) -> Option<&'static str> {
    match address.to_canonical() {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(address: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = address.octets();
    Some(match (a, b, c, d) {
        (169, 254, 169, 254) => "the cloud metadata address",
        (100, 100, 100, 200) => "a cloud metadata address",
        (0, ..) => "an address of \"this network\" (0.0.0.0/8)",
        (10, ..) => "a private address (10.0.0.0/8)",
        (100, 64..=127, ..) => "a shared (carrier-grade NAT) address (100.64.0.0/10)",
        (127, ..) => "a loopback address",
        (169, 254, ..) => "a link-local address",
        (172, 16..=31, ..) => "a private address (172.16.0.0/12)",
        (192, 0, 0, _) => "an IETF protocol address (192.0.0.0/24)",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "a documentation address",
        (192, 168, ..) => "a private address (192.168.0.0/16)",
        (198, 18..=19, ..) => "a benchmarking address (198.18.0.0/15)",
        (224..=239, ..) => "a multicast address",
        (255, 255, 255, 255) => "the broadcast address",
        (240..=255, ..) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

fn non_public_v6(address: Ipv6Addr) -> Option<&'static str> {
    let segments = address.segments();
    let embedded = |high: u16, low: u16| {
        let [h1, h2] = high.to_be_bytes();
        let [l1, l2] = low.to_be_bytes();
        Ipv4Addr::new(h1, h2, l1, l2)
    };
    if address.is_unspecified() {
        return Some("the unspecified address");
    }
    if address.is_loopback() {
        return Some("a loopback address");
    }
    Some(match segments {
        // NAT64 (64:ff9b::/96, 64:ff9b:1::/48): the IPv4 address in the last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => {
            return non_public_v4(embedded(high, low));
        }
        [0x64, 0xff9b, 1, ..] => "a local-use NAT64 address (64:ff9b:1::/48)",
        // 6to4 (2002::/16): the IPv4 address in bits 16-48.
        [0x2002, high, low, ..] => return non_public_v4(embedded(high, low)),
        [0, 0, 0, 0, 0, 0, ..] => "an IPv4-compatible address (::/96)",
        [0x100, 0, 0, 0, ..] => "a discard-only address (100::/64)",
        [0x2001, 0xdb8, ..] => "a documentation address (2001:db8::/32)",
        [0x2001, 0..=0x1ff, ..] => "an IETF protocol address (2001::/23, e.g. Teredo)",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a unique-local address (fc00::/7)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address (fec0::/10)",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(address: &str) -> Option<&'static str> {
        non_public(address.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_named() {
        for (address, expected) in [
            ("127.0.0.1", "a loopback address"),
            ("127.8.9.10", "a loopback address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("10.1.2.3", "a private address (10.0.0.0/8)"),
            ("172.31.255.255", "a private address (172.16.0.0/12)"),
            ("192.168.0.1", "a private address (192.168.0.0/16)"),
            ("169.254.169.254", "the cloud metadata address"),
            ("169.254.1.1", "a link-local address"),
            ("fe80::1", "a link-local address"),
            ("fd00:ec2::254", "a unique-local address (fc00::/7)"),
            ("fc00::1", "a unique-local address (fc00::/7)"),
            (
                "100.64.0.1",
                "a shared (carrier-grade NAT) address (100.64.0.0/10)",
            ),
            ("0.0.0.0", "an address of \"this network\" (0.0.0.0/8)"),
            ("::", "the unspecified address"),
            ("224.0.0.1", "a multicast address"),
            ("ff02::1", "a multicast address"),
            ("255.255.255.255", "the broadcast address"),
            ("64:ff9b::a9fe:a9fe", "the cloud metadata address"),
            ("64:ff9b::7f00:1", "a loopback address"),
            ("2002:7f00:1::", "a loopback address"),
            ("2002:c0a8:101::1", "a private address (192.168.0.0/16)"),
            ("::7f00:1", "an IPv4-compatible address (::/96)"),
        ] {
            assert_eq!(kind(address), Some(expected), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "93.184.215.14",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(kind(address), None, "{address}");
        }
    }

    #[test]
    fn only_a_grant_naming_the_address_or_its_range_lets_a_tool_reach_it() {
        let grants = ["example.com".to_owned(), "*".to_owned()];
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let refused = AddressPolicy::Grants(&grants)
            .check("example.com", loopback)
            .unwrap_err();
        assert_eq!(
            refused,
            "`example.com` resolves to 127.0.0.1, which is a loopback address; a tool reaches \
             such an address only when the app grants that address or a range holding it (e.g. \
             `--allow-host 127.0.0.1`), not through a host name or `*`"
        );
        for grant in ["127.0.0.1", "127.0.0.0/8", "::ffff:127.0.0.1"] {
            let grants = [grant.to_owned()];
            assert_eq!(
                AddressPolicy::Grants(&grants).check("example.com", loopback),
                Ok(()),
                "{grant}"
            );
        }
        assert_eq!(
            AddressPolicy::Grants(&grants).check("example.com", "1.1.1.1".parse().unwrap()),
            Ok(())
        );
        assert_eq!(AddressPolicy::Any.check("example.com", loopback), Ok(()));
        let literal = AddressPolicy::Grants(&grants)
            .check("10.0.0.1", "10.0.0.1".parse().unwrap())
            .unwrap_err();
        assert!(
            literal.starts_with("`10.0.0.1` is a private address (10.0.0.0/8);"),
            "{literal}"
        );
    }
}
