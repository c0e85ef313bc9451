//! Network grants: sockets, DNS and outgoing HTTP, allowed host:port pairs only.
