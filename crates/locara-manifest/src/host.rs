//! What a network host entry (`allowed_hosts`, `--allow-host`) may be.
//!
//! A grant is matched against the host of a URL as `url` parses it (`host_str`, an IPv6
//! address without its brackets), as a whole and ignoring case, on any port. An entry that can
//! never equal such a host (`example.com:443`, `https://x`, `[::1]`, `example.com.`) would be a
//! grant that silently matches nothing, so it is refused with what is wrong.
//!
//! An entry may also be a CIDR range (`10.0.0.0/8`, `fd00::/8`): it matches a URL whose host
//! is an address in the range, and, like an address, it is what lets a request reach a
//! non-public address once a host name is resolved (see [`covers_address`]).

use std::net::IpAddr;

use ipnet::IpNet;

/// The longest host name DNS allows.
const MAX_NAME: usize = 253;
/// The longest label of a host name.
const MAX_LABEL: usize = 63;

/// What is wrong with `host` as a network host entry, or `None` when it is a host name, an IP
/// address or `*`.
pub(crate) fn problem(host: &str) -> Option<String> {
    if host == "*" || host.parse::<IpAddr>().is_ok() {
        return None;
    }
    if let Some((address, length)) = host.split_once('/')
        && address.parse::<IpAddr>().is_ok()
    {
        return match host.parse::<IpNet>() {
            Ok(net) if net.trunc() == net => None,
            Ok(net) => Some(format!(
                "the range has bits set past its prefix length; write `{}`",
                net.trunc()
            )),
            Err(_) => Some(format!(
                "`/{length}` is not a prefix length for this address (0-32 for IPv4, 0-128 for IPv6)"
            )),
        };
    }
    let reason = if host.trim().is_empty() {
        "it is empty".to_owned()
    } else if host.chars().any(char::is_whitespace) {
        "it contains whitespace".to_owned()
    } else if let Some((scheme, _)) = host.split_once("://") {
        format!("it is a URL (`{scheme}://`), not a host")
    } else if host.contains(['/', '?', '#']) {
        "it has a path".to_owned()
    } else if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.split(']').next().unwrap_or(inner);
        if inner.parse::<IpAddr>().is_ok() {
            format!("it has brackets; write the IPv6 address alone, `{inner}`")
        } else {
            "it has brackets, which only enclose an IPv6 address in a URL".to_owned()
        }
    } else if host.contains('*') {
        "a wildcard is only `*` alone (any host); a host name matches only itself".to_owned()
    } else if let Some((name, port)) = host.rsplit_once(':') {
        if !name.contains(':') && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
            format!("it has a port (`:{port}`); a host is allowed on every port, so give it alone")
        } else {
            "it is not a valid IPv6 address".to_owned()
        }
    } else if host.ends_with('.') {
        format!("it ends with a dot; write `{}`", host.trim_end_matches('.'))
    } else {
        return name_problem(host);
    };
    Some(reason)
}

/// What is wrong with `host` as a host name (letters, digits, `-` and `_` in dot-separated
/// labels), or `None`.
fn name_problem(host: &str) -> Option<String> {
    if !host.is_ascii() {
        return Some(
            "it is not ASCII; write an internationalized name in its ASCII form (punycode, \
             e.g. `xn--bcher-kva.example`)"
                .to_owned(),
        );
    }
    if host.len() > MAX_NAME {
        return Some(format!(
            "it is {} characters long, above the {MAX_NAME} of a host name",
            host.len()
        ));
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Some("it has an empty label (two dots in a row, or a leading dot)".to_owned());
        }
        if label.len() > MAX_LABEL {
            return Some(format!(
                "its label `{label}` is longer than {MAX_LABEL} characters"
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Some(format!(
                "`{c}` is not allowed in a host name (letters, digits, `-` and `_`)"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some(format!("its label `{label}` starts or ends with `-`"));
        }
    }
    // A URL parser reads a host whose last label is a number as an IPv4 address (`127.1` is
    // 127.0.0.1, `0x7f.1` too), so such a name is never the host of a URL.
    let last = host.rsplit('.').next().unwrap_or(host);
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Some(
            "it ends in a number but is not an IPv4 address (four numbers 0-255 without \
             leading zeros, e.g. `127.0.0.1`)"
                .to_owned(),
        );
    }
    None
}

/// Whether the grant `entry` admits a URL whose host is `host` (as `url` writes it, an IPv6
/// address without brackets): `*` admits every host, a name the same name ignoring case, an
/// address every spelling of itself, and a range every address in it (and every range
/// inside it, when `host` is itself a range).
pub(crate) fn admits(entry: &str, host: &str) -> bool {
    if entry == "*" || entry.eq_ignore_ascii_case(host) {
        return true;
    }
    if let Ok(address) = host.parse::<IpAddr>() {
        return covers_address(entry, address);
    }
    match (entry.parse::<IpNet>(), host.parse::<IpNet>()) {
        (Ok(outer), Ok(inner)) => outer.contains(&inner),
        _ => false,
    }
}

/// Whether the grant `entry` is an address or a range.
pub(crate) fn names_addresses(entry: &str) -> bool {
    entry.parse::<IpAddr>().is_ok() || entry.parse::<IpNet>().is_ok()
}

/// Whether the grant `entry` names `address` itself: the same address in any spelling, or a
/// range holding it. A host name or `*` names no address; this is what lets a request reach an
/// address that is not public.
pub(crate) fn covers_address(entry: &str, address: IpAddr) -> bool {
    // An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is the IPv4 address it maps.
    let address = address.to_canonical();
    if let Ok(named) = entry.parse::<IpAddr>() {
        return named.to_canonical() == address;
    }
    match entry.parse::<IpNet>() {
        Ok(IpNet::V4(net)) => match address {
            IpAddr::V4(v4) => net.contains(&v4),
            IpAddr::V6(_) => false,
        },
        Ok(IpNet::V6(net)) => match address {
            IpAddr::V6(v6) => net.contains(&v6),
            // An IPv4 address in a range of IPv4-mapped addresses (`::ffff:0:0/96`).
            IpAddr::V4(v4) => net.contains(&v4.to_ipv6_mapped()),
        },
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{admits, covers_address, problem};

    #[test]
    fn ranges_are_grants_of_their_addresses() {
        assert_eq!(problem("10.0.0.0/8"), None);
        assert_eq!(problem("fd00::/8"), None);
        assert_eq!(problem("127.0.0.1/32"), None);
        assert!(
            problem("10.0.0.1/8")
                .unwrap()
                .contains("write `10.0.0.0/8`")
        );
        assert!(problem("10.0.0.0/33").unwrap().contains("prefix length"));
        assert!(problem("10.0.0.0/x").unwrap().contains("prefix length"));
        assert!(admits("10.0.0.0/8", "10.1.2.3"));
        assert!(admits("10.0.0.0/8", "10.1.0.0/16"));
        assert!(!admits("10.0.0.0/8", "11.0.0.1"));
        assert!(!admits("10.0.0.0/8", "ten.example"));
        assert!(admits("*", "ten.example"));
        assert!(admits("Example.com", "example.COM"));
        assert!(admits("::ffff:127.0.0.2", "127.0.0.2"));
        assert!(covers_address("127.0.0.0/8", "127.0.0.9".parse().unwrap()));
        assert!(covers_address("::1", "0:0:0:0:0:0:0:1".parse().unwrap()));
        assert!(covers_address(
            "127.0.0.1",
            "::ffff:127.0.0.1".parse().unwrap()
        ));
        assert!(covers_address(
            "::ffff:0:0/96",
            "192.168.1.1".parse().unwrap()
        ));
        assert!(!covers_address("*", "127.0.0.1".parse().unwrap()));
        assert!(!covers_address("localhost", "127.0.0.1".parse().unwrap()));
        assert!(!covers_address("10.0.0.0/8", "::1".parse().unwrap()));
    }

    #[test]
    fn host_names_ip_addresses_and_the_wildcard_pass() {
        for host in [
            "*",
            "example.com",
            "API.Example.COM",
            "localhost",
            "my_service",
            "a-b.c-d.example",
            "xn--bcher-kva.example",
            "127.0.0.1",
            "10.0.0.255",
            "::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "v1.example",
            "1a.example",
        ] {
            assert_eq!(problem(host), None, "{host}");
        }
    }

    #[test]
    fn anything_a_url_host_can_never_equal_is_refused_saying_why() {
        for (host, reason) in [
            ("", "it is empty"),
            (" ", "it is empty"),
            ("example .com", "it contains whitespace"),
            ("https://x", "it is a URL (`https://`), not a host"),
            ("example.com/api", "it has a path"),
            ("example.com?q", "it has a path"),
            (
                "example.com:443",
                "it has a port (`:443`); a host is allowed on every port, so give it alone",
            ),
            ("127.0.0.1:8080", "it has a port (`:8080`)"),
            (
                "[::1]",
                "it has brackets; write the IPv6 address alone, `::1`",
            ),
            (
                "[::1]:80",
                "it has brackets; write the IPv6 address alone, `::1`",
            ),
            ("[x]", "it has brackets, which only enclose an IPv6 address"),
            ("::g", "it is not a valid IPv6 address"),
            ("fe80::1%eth0", "it is not a valid IPv6 address"),
            ("example.com.", "it ends with a dot; write `example.com`"),
            ("*.example.com", "a wildcard is only `*` alone"),
            ("**", "a wildcard is only `*` alone"),
            ("a..b", "it has an empty label"),
            (".example.com", "it has an empty label"),
            ("user@example.com", "`@` is not allowed in a host name"),
            ("bücher.example", "it is not ASCII"),
            ("-a.example", "its label `-a` starts or ends with `-`"),
            ("127.1", "it ends in a number but is not an IPv4 address"),
            (
                "256.0.0.1",
                "it ends in a number but is not an IPv4 address",
            ),
            (
                "127.0.0.01",
                "it ends in a number but is not an IPv4 address",
            ),
            ("0x7f.1", "it ends in a number but is not an IPv4 address"),
            (
                "example.0x1F",
                "it ends in a number but is not an IPv4 address",
            ),
        ] {
            let found = problem(host).unwrap_or_else(|| panic!("{host:?} was accepted"));
            assert!(found.starts_with(reason), "{host:?}: {found}");
        }
        let long_label = format!("{}.example", "a".repeat(64));
        assert!(problem(&long_label).unwrap().contains("longer than 63"));
        let long_name = ["abcdefghi"; 26].join(".");
        assert!(problem(&long_name).unwrap().contains("above the 253"));
    }
}
