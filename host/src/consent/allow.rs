//! "Allow this tool for the next N minutes": what a person allowed for a while, per
//! scope (one MCP session, one stdio client, or one client of stateless HTTP), for
//! the tool with the grants it had when they were asked.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Allowances held at once, at most; past it the ones ending soonest go first.
const MAX: usize = 10_000;

/// The tools allowed for a while, and until when.
#[derive(Debug, Default)]
pub struct Allowances {
    until: Mutex<HashMap<Key, Instant>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    scope: String,
    tool: String,
    grants: [u8; 32],
}

impl Allowances {
    /// Allows `tool` with the grants whose digest is `grants`, in `scope`, until `until`.
    pub fn allow(&self, scope: &str, tool: &str, grants: [u8; 32], until: Instant) {
        let mut map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        map.retain(|_, end| *end > now);
        if map.len() >= MAX {
            let mut ends: Vec<Instant> = map.values().copied().collect();
            ends.sort_unstable();
            let cut = ends[ends.len() / 2];
            map.retain(|_, end| *end > cut);
        }
        let key = Key {
            scope: scope.to_owned(),
            tool: tool.to_owned(),
            grants,
        };
        map.insert(key, until);
    }

    /// Whether `tool` with these grants is allowed in `scope` at `now`.
    pub fn allows(&self, scope: &str, tool: &str, grants: [u8; 32], now: Instant) -> bool {
        let map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        if map.is_empty() {
            return false;
        }
        let key = Key {
            scope: scope.to_owned(),
            tool: tool.to_owned(),
            grants,
        };
        map.get(&key).is_some_and(|end| *end > now)
    }

    /// Forgets what was allowed in `scope` (its session ended).
    pub fn forget(&self, scope: &str) {
        let mut map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|key, _| key.scope != scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_allowance_holds_for_its_tool_grants_and_scope_until_its_end() {
        let allowed = Allowances::default();
        let now = Instant::now();
        allowed.allow("s1", "rm", [1; 32], now + Duration::from_secs(60));
        assert!(allowed.allows("s1", "rm", [1; 32], now));
        assert!(!allowed.allows("s2", "rm", [1; 32], now), "another session");
        assert!(!allowed.allows("s1", "mv", [1; 32], now), "another tool");
        assert!(!allowed.allows("s1", "rm", [2; 32], now), "other grants");
        assert!(!allowed.allows("s1", "rm", [1; 32], now + Duration::from_secs(61)));
        allowed.forget("s1");
        assert!(!allowed.allows("s1", "rm", [1; 32], now));
    }
}
