//! What one call of a tool does, with the meaning of MCP tool annotations.

/// The four hints of a tool or of one call: what running it does.
///
/// Made like the hints of `#[tool]`: a hint left out assumes the worst (not
/// read-only, destructive, not idempotent, open world), and a read-only call is
/// never destructive and always idempotent. The fields are private so that this
/// rule holds for every `Hints` value, whichever way it was built.
///
/// ```
/// use piton_guest_sdk::Hints;
///
/// let local_read = Hints::read_only().open_world(false);
/// assert!(local_read.is_read_only() && !local_read.is_destructive());
///
/// let append = Hints::worst().destructive(false);
/// assert!(!append.is_read_only() && !append.is_idempotent());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

impl Hints {
    /// The worst case: not read-only, destructive, not idempotent, open world.
    pub const fn worst() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }

    /// A call that does not change its environment: not destructive, idempotent,
    /// and open world until [`open_world(false)`](Self::open_world) says otherwise.
    pub const fn read_only() -> Self {
        Self {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
        }
    }

    /// Sets whether the call may delete or overwrite something (false: it only adds).
    ///
    /// `destructive(true)` on read-only hints makes them not read-only, since a
    /// call that may overwrite something does change its environment.
    #[must_use]
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = destructive;
        if destructive {
            self.read_only = false;
        }
        self
    }

    /// Sets whether making the call again with the same arguments has no further effect.
    ///
    /// `idempotent(false)` on read-only hints makes them not read-only, since
    /// a call whose repetition has an effect does change its environment.
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        if !idempotent {
            self.read_only = false;
        }
        self
    }

    /// Sets whether the call reaches outside the tool's own domain (web, shell,
    /// other systems).
    #[must_use]
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = open_world;
        self
    }

    /// The call does not change its environment.
    pub const fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The call may delete or overwrite something.
    pub const fn is_destructive(&self) -> bool {
        self.destructive
    }

    /// Making the call again with the same arguments has no further effect.
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// The call reaches outside the tool's own domain.
    pub const fn is_open_world(&self) -> bool {
        self.open_world
    }
}

impl Default for Hints {
    /// [`Hints::worst()`]: a hint nobody gave assumes the worst.
    fn default() -> Self {
        Self::worst()
    }
}

#[cfg(test)]
mod tests {
    use super::Hints;

    fn parts(hints: Hints) -> [bool; 4] {
        [
            hints.is_read_only(),
            hints.is_destructive(),
            hints.is_idempotent(),
            hints.is_open_world(),
        ]
    }

    #[test]
    fn default_is_the_worst_case() {
        assert_eq!(Hints::default(), Hints::worst());
        assert_eq!(parts(Hints::default()), [false, true, false, true]);
    }

    #[test]
    fn read_only_is_safe_but_open_world_until_told() {
        assert_eq!(parts(Hints::read_only()), [true, false, true, true]);
        assert_eq!(
            parts(Hints::read_only().open_world(false)),
            [true, false, true, false]
        );
    }

    #[test]
    fn setters_leave_the_other_hints_alone() {
        let hints = Hints::worst().destructive(false).idempotent(true);
        assert_eq!(parts(hints), [false, false, true, true]);
        assert_eq!(
            parts(Hints::worst().open_world(false)),
            [false, true, false, false]
        );
    }

    #[test]
    fn a_contradiction_gives_up_read_only() {
        assert_eq!(
            parts(Hints::read_only().destructive(true)),
            [false, true, true, true]
        );
        assert_eq!(
            parts(Hints::read_only().idempotent(false)),
            [false, false, false, true]
        );
        // Agreeing with read-only keeps it.
        assert!(
            Hints::read_only()
                .destructive(false)
                .idempotent(true)
                .is_read_only()
        );
    }
}
