//! The four hints of a tool or of one call (`tool-hints`), valid by construction,
//! and the one rule that narrows them: a call, piton.toml or any other claim can make
//! a tool's hints narrower, never wider.

use std::fmt;

/// What a tool, or one call of it, does: the meaning of MCP tool annotations.
///
/// A hint left out assumes the worst: [`Hints::worst`] (the default) is not
/// read-only, destructive, not idempotent, open world. A read-only call is never
/// destructive and always idempotent; the fields are private so that this holds
/// for every `Hints` value, whichever way it was built. For wasm tools the host
/// turns the hints of each call into its sandbox, so they are enforced, not promised.
///
/// ```
/// use piton_wit::Hints;
///
/// let local_read = Hints::read_only().open_world(false);
/// assert!(local_read.is_read_only() && !local_read.is_destructive());
///
/// let append = Hints::worst().destructive(false);
/// assert!(!append.is_read_only() && !append.is_idempotent());
///
/// // Four bools from elsewhere (a guest, a file) are checked.
/// assert!(Hints::new(true, true, true, false).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "Unchecked")
)]
pub struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

/// Hints that contradict each other: `read_only` with `destructive` or without
/// `idempotent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintsError {
    /// The `destructive` that was given with `read_only`.
    pub destructive: bool,
    /// The `idempotent` that was given with `read_only`.
    pub idempotent: bool,
}

impl fmt::Display for HintsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hints contradict each other: read_only requires destructive = false and \
             idempotent = true (got destructive = {}, idempotent = {}); drop read_only or \
             fix the others",
            self.destructive, self.idempotent
        )
    }
}

impl std::error::Error for HintsError {}

/// One of the four hints, named as in piton.toml and `#[tool]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hint {
    /// `read_only`: the call does not change its environment.
    ReadOnly,
    /// `destructive`: the call may delete or overwrite something.
    Destructive,
    /// `idempotent`: making the call again has no further effect.
    Idempotent,
    /// `open_world`: the call reaches outside the tool's own domain.
    OpenWorld,
}

impl Hint {
    /// The four, in the order they are checked and named.
    pub const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The name: `read_only`, `destructive`, `idempotent` or `open_world`.
    pub const fn name(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read_only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open_world",
        }
    }

    /// The rule: whether claiming `value` for this hint says a call does more than
    /// `bound` allows. `idempotent` allows a retry, so claiming it is a widening
    /// unless the claim is `read_only`, which makes it idempotent by definition.
    fn widens(self, value: bool, read_only: bool, bound: Hints) -> bool {
        match self {
            Hint::ReadOnly => bound.read_only && !value,
            Hint::Destructive => value && !bound.destructive,
            Hint::Idempotent => value && !bound.idempotent && !read_only,
            Hint::OpenWorld => value && !bound.open_world,
        }
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A claim that [`Hints::narrow`] refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NarrowError {
    /// `hint = value` says the tool does more than its own hints, `bound`, allow.
    Widens {
        /// The hint claimed.
        hint: Hint,
        /// The value claimed.
        value: bool,
        /// The hints it would widen.
        bound: Hints,
    },
    /// `hint = value` contradicts `read_only` (`destructive = true`, `idempotent = false`).
    Contradicts {
        /// The hint claimed.
        hint: Hint,
        /// The value claimed.
        value: bool,
    },
}

impl fmt::Display for NarrowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Widens { hint, value, bound } => write!(
                f,
                "{hint} = {value} would widen the tool's hints ({bound}); piton.toml can only \
                 narrow them"
            ),
            Self::Contradicts { hint, value } => write!(
                f,
                "{hint} = {value} contradicts read_only: a read-only tool is {}",
                if *hint == Hint::Destructive {
                    "not destructive"
                } else {
                    "idempotent"
                }
            ),
        }
    }
}

impl std::error::Error for NarrowError {}

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

    /// The four hints as given, or an error if `read_only` comes with
    /// `destructive` or without `idempotent`: for hints from a guest or a file.
    pub const fn new(
        read_only: bool,
        destructive: bool,
        idempotent: bool,
        open_world: bool,
    ) -> Result<Self, HintsError> {
        if read_only && (destructive || !idempotent) {
            return Err(HintsError {
                destructive,
                idempotent,
            });
        }
        Ok(Self {
            read_only,
            destructive,
            idempotent,
            open_world,
        })
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

    /// The value of one hint.
    pub const fn get(&self, hint: Hint) -> bool {
        match hint {
            Hint::ReadOnly => self.read_only,
            Hint::Destructive => self.destructive,
            Hint::Idempotent => self.idempotent,
            Hint::OpenWorld => self.open_world,
        }
    }

    /// The four hints as claims, for [`Hints::narrow`].
    pub fn claims(self) -> [(Hint, bool); 4] {
        Hint::ALL.map(|hint| (hint, self.get(hint)))
    }

    /// These hints narrowed by `bound`, the tool's own (worst-case) hints: a call can
    /// claim to do less than its tool, never more. Returns the narrowed hints (the
    /// narrower of the two on each hint) and whether `self` claimed more than `bound`
    /// (and was clamped). Not clamped, the result is `self`.
    pub fn narrowed_by(self, bound: Hints) -> (Hints, bool) {
        let widened = Hint::ALL
            .into_iter()
            .any(|hint| hint.widens(self.get(hint), self.read_only, bound));
        let read_only = self.read_only || bound.read_only;
        let narrowed = Hints {
            read_only,
            destructive: !read_only && self.destructive && bound.destructive,
            idempotent: read_only || (self.idempotent && bound.idempotent),
            open_world: self.open_world && bound.open_world,
        };
        (narrowed, widened)
    }

    /// These hints (the tool's own) narrowed by `claims`, given one by one as in
    /// piton.toml; a hint not claimed stays. A claim wider than these hints is an
    /// error naming it, and so is one that contradicts `read_only`. Claiming the four
    /// hints of a valid `Hints` gives it back exactly when [`Hints::narrowed_by`]
    /// would not clamp it.
    pub fn narrow(
        self,
        claims: impl IntoIterator<Item = (Hint, bool)>,
    ) -> Result<Hints, NarrowError> {
        let mut given = [None; 4];
        for (hint, value) in claims {
            given[hint as usize] = Some(value);
        }
        let claimed = |hint: Hint| given[hint as usize];
        let read_only = claimed(Hint::ReadOnly).unwrap_or(self.read_only);
        for hint in Hint::ALL {
            if let Some(value) = claimed(hint)
                && hint.widens(value, read_only, self)
            {
                return Err(NarrowError::Widens {
                    hint,
                    value,
                    bound: self,
                });
            }
        }
        let open_world = claimed(Hint::OpenWorld).unwrap_or(self.open_world);
        if read_only {
            for (hint, value) in [(Hint::Destructive, true), (Hint::Idempotent, false)] {
                if claimed(hint) == Some(value) {
                    return Err(NarrowError::Contradicts { hint, value });
                }
            }
            return Ok(Hints::read_only().open_world(open_world));
        }
        Ok(Hints {
            read_only,
            destructive: claimed(Hint::Destructive).unwrap_or(self.destructive),
            idempotent: claimed(Hint::Idempotent).unwrap_or(self.idempotent),
            open_world,
        })
    }
}

impl Default for Hints {
    /// [`Hints::worst()`]: a hint nobody gave assumes the worst.
    fn default() -> Self {
        Self::worst()
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

/// The four bools as written, before [`Hints::new`] checks them.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct Unchecked {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

#[cfg(feature = "serde")]
impl TryFrom<Unchecked> for Hints {
    type Error = HintsError;

    fn try_from(h: Unchecked) -> Result<Self, HintsError> {
        Hints::new(h.read_only, h.destructive, h.idempotent, h.open_world)
    }
}

#[cfg(test)]
#[path = "hints_tests.rs"]
mod tests;
