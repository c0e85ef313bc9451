//! What the user grants a tool (parsed from piton.toml into types), and what one call
//! may use: the grants bounded by the call's hints.
//!
//! | call hints | mounts | network |
//! | --- | --- | --- |
//! | read_only | every mount read-only | HTTP: GET, HEAD, OPTIONS only; raw TCP only to `tcp = true` grants (unchecked) |
//! | not read_only, not destructive | "write" mounts add-only | HTTP: any method but TRACE, TRACK, CONNECT; raw TCP only to `tcp = true` grants |
//! | destructive | as granted | as for not destructive |
//! | open_world = false | — | none: no DNS, no sockets, no HTTP |
//! | open_world = true | — | only the granted host:port pairs |
//! | any | never "write" on the plugins folder, config files or compile cache ([`crate::protected`]); no symbolic link in a mount's path; a mount's folder must be the one loaded; at most `max_write` bytes written, 10 000 new entries made, 16 listings open | — |
//!
//! A grant without `tcp = true` is HTTP(S) only, through wasi:http: the host sets the
//! TLS server name and `Host`, and adds secret headers over TLS only (or in clear to a
//! loopback address granted literally).

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::Serialize;

use piton_wit::Hints;

/// A host folder made visible to a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// The folder on the host: absolute, existing.
    pub host: PathBuf,
    /// Where the guest sees it: an absolute guest path such as `/data`.
    pub guest: String,
    /// What the user allows at most.
    pub mode: MountMode,
}

/// The most a mount allows, as granted in piton.toml.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MountMode {
    /// Read files and list folders.
    Read,
    /// Also create, write, rename and delete.
    Write,
}

impl<'de> serde::Deserialize<'de> for MountMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match <String as serde::Deserialize>::deserialize(d)?.as_str() {
            "read" => Ok(Self::Read),
            "write" => Ok(Self::Write),
            other => Err(serde::de::Error::custom(format!(
                "mode {other:?} is not known: use \"read\" or \"write\""
            ))),
        }
    }
}

/// What one call may do in one mount: the grant bounded by the call's hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsAccess {
    /// Read files and list folders only.
    ReadOnly,
    /// Create new files and folders and write the files created in this call; no
    /// delete, rename, truncate, link, or write to anything that existed before.
    AddOnly,
    /// Everything, as granted.
    ReadWrite,
}

/// A host the user lets a tool reach.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct NetGrant {
    /// The host: a DNS name or a literal IP address.
    pub host: Host,
    /// The port.
    pub port: u16,
    /// Headers the host adds to the tool's outgoing HTTP requests to this host:port,
    /// with values taken from piton's environment. The guest never sees them.
    #[serde(serialize_with = "header_names_only")]
    pub headers: Vec<(String, Secret)>,
    /// Whether raw TCP (wasi:sockets) may reach this host:port too (`tcp = true`).
    /// Without it the grant is HTTP(S) only, through wasi:http, where the host checks
    /// the method and sets the TLS server name and `Host` itself.
    pub tcp: bool,
}

impl fmt::Debug for NetGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl NetGrant {
    /// `host:port` (an IPv6 address in brackets), without headers or flags.
    pub fn authority(&self) -> String {
        match self.host {
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]:{}", self.port),
            _ => format!("{}:{}", self.host, self.port),
        }
    }
}

impl fmt::Display for NetGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.authority())?;
        for (name, _) in &self.headers {
            write!(f, " +{name}")?;
        }
        if self.tcp {
            f.write_str(" +tcp")?;
        }
        Ok(())
    }
}

fn header_names_only<S: serde::Serializer>(
    headers: &[(String, Secret)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(headers.iter().map(|(name, _)| name))
}

/// A granted host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Host {
    /// A DNS name, lowercase. Its addresses may not be loopback, private,
    /// link-local or cloud-metadata addresses.
    Name(String),
    /// A literal address: the one way to grant a loopback or private address.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A value that must not leak: shown as `***` in debug output and never given to
/// a guest.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub(crate) String);

impl Secret {
    /// A secret holding `value`.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value, for the host to put in a request.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Everything the user grants one tool. Nothing by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Grants {
    /// Host folders, none by default.
    pub mounts: Vec<Mount>,
    /// Reachable hosts, none by default.
    pub network: Vec<NetGrant>,
    /// Environment variables, none by default.
    pub env: Vec<(String, String)>,
}

/// What one call may do with the hosts it may reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetAccess {
    /// Over wasi:http only the safe methods GET, HEAD and OPTIONS. Raw TCP only to a
    /// grant with `tcp = true`, and what is sent there is not checked.
    #[default]
    ReadOnly,
    /// Over wasi:http any method but TRACE, TRACK and CONNECT. Raw TCP only to a
    /// grant with `tcp = true`.
    Full,
}

/// What one call may use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// Each granted mount with the access this call has to it.
    pub mounts: Vec<(Mount, FsAccess)>,
    /// The hosts this call may reach; empty when the call is closed-world.
    pub network: Vec<NetGrant>,
    /// What the call may do with them: read-only calls send safe methods only.
    pub net_access: NetAccess,
    /// The environment variables the guest sees.
    pub env: Vec<(String, String)>,
}

impl Grants {
    /// The capabilities of a call with `hints`: the grants bounded by the hints, so a
    /// grant never exceeds what the hints allow.
    pub fn for_call(&self, hints: Hints) -> Capabilities {
        let access = |mode: MountMode| match (mode, hints.is_read_only(), hints.is_destructive()) {
            (MountMode::Read, _, _) | (MountMode::Write, true, _) => FsAccess::ReadOnly,
            (MountMode::Write, false, false) => FsAccess::AddOnly,
            (MountMode::Write, false, true) => FsAccess::ReadWrite,
        };
        Capabilities {
            mounts: self
                .mounts
                .iter()
                .map(|m| (m.clone(), access(m.mode)))
                .collect(),
            network: if hints.is_open_world() {
                self.network.clone()
            } else {
                Vec::new()
            },
            net_access: if hints.is_read_only() {
                NetAccess::ReadOnly
            } else {
                NetAccess::Full
            },
            env: self.env.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants() -> Grants {
        Grants {
            mounts: vec![
                Mount {
                    host: "/r".into(),
                    guest: "/r".into(),
                    mode: MountMode::Read,
                },
                Mount {
                    host: "/w".into(),
                    guest: "/w".into(),
                    mode: MountMode::Write,
                },
            ],
            network: vec![NetGrant {
                host: Host::Name("example.com".into()),
                port: 443,
                headers: vec![("Authorization".into(), Secret("Bearer x".into()))],
                tcp: false,
            }],
            env: vec![("LANG".into(), "C".into())],
        }
    }

    #[test]
    fn nothing_is_granted_by_default() {
        let caps = Grants::default().for_call(Hints::default());
        let nothing = Capabilities {
            // What it may do with no host at all.
            net_access: NetAccess::Full,
            ..Capabilities::default()
        };
        assert_eq!(caps, nothing);
    }

    #[test]
    fn hints_bound_the_grants() {
        let h = |read_only, destructive, open_world| {
            Hints::new(read_only, destructive, read_only, open_world).unwrap()
        };
        use FsAccess::*;
        let (ro, full) = (NetAccess::ReadOnly, NetAccess::Full);
        // (hints, access to the read mount, to the write mount, network granted, what
        // the call may do over it)
        let table = [
            (h(true, false, false), ReadOnly, ReadOnly, false, ro),
            (h(true, false, true), ReadOnly, ReadOnly, true, ro),
            (h(false, false, false), ReadOnly, AddOnly, false, full),
            (h(false, false, true), ReadOnly, AddOnly, true, full),
            (h(false, true, false), ReadOnly, ReadWrite, false, full),
            (h(false, true, true), ReadOnly, ReadWrite, true, full),
        ];
        for (hints, read, write, network, net_access) in table {
            let caps = grants().for_call(hints);
            assert_eq!(caps.mounts[0].1, read, "{hints:?}");
            assert_eq!(caps.mounts[1].1, write, "{hints:?}");
            assert_eq!(!caps.network.is_empty(), network, "{hints:?}");
            assert_eq!(caps.net_access, net_access, "{hints:?}");
            assert_eq!(caps.env, [("LANG".to_owned(), "C".to_owned())]);
        }
    }

    #[test]
    fn secrets_do_not_show() {
        let grant = &grants().network[0];
        assert_eq!(format!("{grant:?}"), "example.com:443 +Authorization");
        assert_eq!(format!("{:?}", grant.headers[0].1), "***");
        let json = serde_json::to_string(grant).unwrap();
        assert!(!json.contains("Bearer"), "{json}");
    }
}
