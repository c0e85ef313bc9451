//! The four hints of a tool or of one call, with the seed's defaults and rules.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a tool, or one call of it, does: the meaning of MCP tool annotations.
///
/// A hint left out assumes the worst: [`Hints::default`] is not read-only,
/// destructive, not idempotent, open world. `read_only` implies
/// `destructive = false` and `idempotent = true`. For wasm tools piton turns the
/// hints of each call into its sandbox, so they are enforced, not promised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hints {
    /// The call does not change its environment.
    pub read_only: bool,
    /// The call may delete or overwrite something (false: it only adds).
    pub destructive: bool,
    /// Making the call again with the same arguments has no further effect.
    pub idempotent: bool,
    /// The call reaches outside the tool's own domain: the web, a shell, another system.
    pub open_world: bool,
}

impl Default for Hints {
    /// The worst case: not read-only, destructive, not idempotent, open world.
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

/// Hints that contradict each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "hints contradict each other: read_only requires destructive = false and idempotent = true \
     (got destructive = {destructive}, idempotent = {idempotent}); drop read_only or fix the others"
)]
pub struct HintsError {
    /// The `destructive` that was given with `read_only`.
    pub destructive: bool,
    /// The `idempotent` that was given with `read_only`.
    pub idempotent: bool,
}

impl Hints {
    /// Read-only hints, closed or open world as given.
    pub const fn read_only(open_world: bool) -> Self {
        Self {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world,
        }
    }

    /// Checks the seed's rule: `read_only` with `destructive` or without
    /// `idempotent` is a contradiction.
    pub fn validate(self) -> Result<Self, HintsError> {
        if self.read_only && (self.destructive || !self.idempotent) {
            return Err(HintsError {
                destructive: self.destructive,
                idempotent: self.idempotent,
            });
        }
        Ok(self)
    }

    /// These hints narrowed by `bound`, the tool's own (worst-case) hints: a call can
    /// claim to do less than its tool, never more. Returns the narrowed hints and
    /// whether `self` claimed more than `bound` (and was clamped).
    ///
    /// `idempotent` allows a retry, so claiming it is a widening unless the call is
    /// read-only, which makes it idempotent by definition.
    pub fn narrowed_by(self, bound: Hints) -> (Hints, bool) {
        let read_only = self.read_only || bound.read_only;
        let narrowed = Hints {
            read_only,
            destructive: !read_only && self.destructive && bound.destructive,
            idempotent: read_only || (self.idempotent && bound.idempotent),
            open_world: self.open_world && bound.open_world,
        };
        let widened = (bound.read_only && !self.read_only)
            || (self.destructive && !bound.destructive)
            || (self.open_world && !bound.open_world)
            || (self.idempotent && !bound.idempotent && !read_only);
        (narrowed, widened)
    }
}

impl fmt::Display for Hints {
    /// `read_only, idempotent, closed_world` style: the true hints, and
    /// `closed_world` when not open world.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words = Vec::new();
        if self.read_only {
            words.push("read_only");
        }
        if self.destructive {
            words.push("destructive");
        }
        if self.idempotent {
            words.push("idempotent");
        }
        words.push(if self.open_world {
            "open_world"
        } else {
            "closed_world"
        });
        f.write_str(&words.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn h(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> Hints {
        Hints {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }

    #[test]
    fn default_is_the_worst_case() {
        assert_eq!(Hints::default(), h(false, true, false, true));
    }

    #[test]
    fn read_only_rule() {
        assert!(h(true, false, true, true).validate().is_ok());
        assert!(h(true, true, true, true).validate().is_err());
        assert!(h(true, false, false, false).validate().is_err());
        assert!(h(false, false, false, false).validate().is_ok());
    }

    #[test]
    fn narrowing_table() {
        // (call, tool, expected, widened)
        let cases = [
            // Narrower answers pass through.
            (
                Hints::read_only(false),
                Hints::default(),
                Hints::read_only(false),
                false,
            ),
            (
                h(false, false, false, true),
                Hints::default(),
                h(false, false, false, true),
                false,
            ),
            // Wider answers are clamped to the tool's.
            (
                Hints::default(),
                Hints::read_only(false),
                Hints::read_only(false),
                true,
            ),
            (
                h(false, true, false, true),
                h(false, false, false, true),
                h(false, false, false, true),
                true,
            ),
            (
                h(false, true, false, true),
                h(false, true, false, false),
                h(false, true, false, false),
                true,
            ),
            (
                h(false, true, true, true),
                h(false, true, false, true),
                h(false, true, false, true),
                true,
            ),
            // A read-only call is idempotent even if the tool is not.
            (
                Hints::read_only(true),
                h(false, true, false, true),
                Hints::read_only(true),
                false,
            ),
            (Hints::default(), Hints::default(), Hints::default(), false),
        ];
        for (call, tool, expected, widened) in cases {
            assert_eq!(
                call.narrowed_by(tool),
                (expected, widened),
                "call {call:?} tool {tool:?}"
            );
        }
    }

    #[test]
    fn display_names_the_true_hints() {
        assert_eq!(
            Hints::read_only(false).to_string(),
            "read_only, idempotent, closed_world"
        );
        assert_eq!(Hints::default().to_string(), "destructive, open_world");
    }
}
