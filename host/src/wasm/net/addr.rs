//! Which addresses a DNS name may lead to: a grant of a name is a grant of the public
//! internet host behind it, never of this machine, its network or the cloud's
//! metadata service. Those are reachable only when granted by literal address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP address is, as far as reaching it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddrClass {
    /// A globally routable unicast address.
    Public,
    /// 127.0.0.0/8, ::1: this machine.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10: the local network.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 169.254.169.254 and fd00:ec2::254: cloud instance metadata (credentials).
    Metadata,
    /// 0.0.0.0, `::`: "any address", which connects to this machine.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 100.64/10: carrier-grade NAT, the provider's network.
    SharedCgnat,
    /// Not routable on the internet, or routed somewhere we cannot tell (0/8, 240/4,
    /// IETF, benchmarking and documentation ranges, Teredo, local NAT64, discard).
    Reserved,
}

/// Whether a name's address is one a name grant may reach.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    classify(ip) == AddrClass::Public
}

/// The class of `ip`. IPv6 forms that carry an IPv4 address (mapped, translated,
/// compatible, NAT64, 6to4) are classified by that IPv4 address, since that is where
/// they lead.
pub(crate) fn classify(ip: IpAddr) -> AddrClass {
    match ip.to_canonical() {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    use AddrClass::*;
    let [a, b, c, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Metadata
    } else if ip.is_unspecified() {
        Unspecified
    } else if ip.is_loopback() {
        Loopback
    } else if ip.is_private() {
        Private
    } else if ip.is_link_local() {
        LinkLocal
    } else if a == 100 && (b & 0xc0) == 64 {
        SharedCgnat
    } else if ip.is_broadcast() {
        Broadcast
    } else if ip.is_multicast() {
        Multicast
    } else if a == 0
        || a >= 240
        || (a, b, c) == (192, 0, 0)
        || (a == 198 && (b & 0xfe) == 18)
        || matches!((a, b, c), (192, 0, 2) | (198, 51, 100) | (203, 0, 113))
    {
        Reserved
    } else {
        Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    use AddrClass::*;
    let s = ip.segments();
    let embedded_v4 = || Ipv4Addr::from_bits(ip.to_bits() as u32);
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Metadata
    } else if ip.is_unspecified() {
        Unspecified
    } else if ip.is_loopback() {
        Loopback
    } else if s[..6] == [0; 6]
        || s[..6] == [0, 0, 0, 0, 0xffff, 0]
        || (s[..2] == [0x64, 0xff9b] && s[2..6] == [0; 4])
    {
        // IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d (SIIT), and the
        // well-known NAT64 prefix 64:ff9b::/96. (IPv4-mapped ::ffff:a.b.c.d is made
        // IPv4 by `to_canonical` above.)
        classify_v4(embedded_v4())
    } else if s[0] == 0x2002 {
        // 6to4: 2002:AABB:CCDD::/48 leads to AA.BB.CC.DD.
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        classify_v4(Ipv4Addr::new(a, b, c, d))
    } else if (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfec0 {
        Private
    } else if (s[0] & 0xffc0) == 0xfe80 {
        LinkLocal
    } else if (s[0] & 0xff00) == 0xff00 {
        Multicast
    } else if s[..3] == [0x64, 0xff9b, 1]
        || (s[0] == 0x2001 && s[1] < 0x200)
        || s[..2] == [0x2001, 0xdb8]
        || (s[0] == 0x3fff && s[1] < 0x1000)
        || s[0] == 0x5f00
        || s[..4] == [0x100, 0, 0, 0]
    {
        // Local-use NAT64 (may lead anywhere), IETF protocol assignments 2001::/23
        // (Teredo among them), documentation (2001:db8::/32, 3fff::/20), SRv6
        // segment identifiers, discard-only.
        Reserved
    } else {
        Public
    }
}

#[cfg(test)]
mod tests {
    use super::AddrClass::*;
    use super::*;

    #[test]
    fn addresses_are_classified() {
        let table = [
            ("93.184.215.14", Public),
            ("8.8.8.8", Public),
            ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", Public),
            ("127.0.0.1", Loopback),
            ("127.255.0.9", Loopback),
            ("::1", Loopback),
            ("::ffff:127.0.0.1", Loopback),
            ("::127.0.0.1", Loopback),
            ("64:ff9b::7f00:1", Loopback),
            ("2002:7f00:1::1", Loopback),
            // IPv4-translated (SIIT): ::ffff:0:a.b.c.d.
            ("::ffff:0:7f00:1", Loopback),
            ("::ffff:0:127.0.0.1", Loopback),
            ("::ffff:0:a00:1", Private),
            ("::ffff:0:a9fe:a9fe", Metadata),
            ("::ffff:0:5db8:d70e", Public),
            ("64:ff9b::a9fe:a9fe", Metadata),
            ("2002:a9fe:a9fe::", Metadata),
            ("3fff::1", Reserved),
            ("2001:2::1", Reserved),
            ("2001:10::1", Reserved),
            ("10.1.2.3", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.1", Public),
            ("192.168.1.1", Private),
            ("::ffff:10.0.0.1", Private),
            ("64:ff9b::a00:1", Private),
            ("2002:c0a8:101::", Private),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fec0::1", Private),
            ("169.254.1.1", LinkLocal),
            ("fe80::1", LinkLocal),
            ("169.254.169.254", Metadata),
            ("::ffff:169.254.169.254", Metadata),
            ("fd00:ec2::254", Metadata),
            ("0.0.0.0", Unspecified),
            ("::", Unspecified),
            ("::ffff:0.0.0.0", Unspecified),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("ff02::1", Multicast),
            ("255.255.255.255", Broadcast),
            ("100.64.0.1", SharedCgnat),
            ("100.127.255.255", SharedCgnat),
            ("100.128.0.1", Public),
            ("0.1.2.3", Reserved),
            ("240.0.0.1", Reserved),
            ("192.0.0.8", Reserved),
            ("198.18.0.1", Reserved),
            ("192.0.2.1", Reserved),
            ("2001:db8::1", Reserved),
            ("2001:0:4136:e378::1", Reserved),
            ("64:ff9b:1::1", Reserved),
            ("100::1", Reserved),
        ];
        for (ip, class) in table {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(classify(parsed), class, "{ip}");
            assert_eq!(is_public(parsed), class == Public, "{ip}");
        }
    }
}
