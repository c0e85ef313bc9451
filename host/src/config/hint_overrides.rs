//! piton.toml's hint overrides (`read_only = true`, ...): they can only make a tool's
//! hints narrower, never wider.

use piton_wit::{Hint, Hints, NarrowError};

/// Hints given in piton.toml; each can only make the tool's hints narrower.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HintOverrides {
    /// `read_only = true` narrows.
    pub read_only: Option<bool>,
    /// `destructive = false` narrows.
    pub destructive: Option<bool>,
    /// `idempotent = false` narrows (idempotent lets the host retry).
    pub idempotent: Option<bool>,
    /// `open_world = false` narrows.
    pub open_world: Option<bool>,
}

impl HintOverrides {
    /// `hints` narrowed by these overrides; an override that would widen them is an
    /// error naming the key.
    pub fn narrow(self, hints: Hints) -> Result<Hints, NarrowError> {
        let given = [
            (Hint::ReadOnly, self.read_only),
            (Hint::Destructive, self.destructive),
            (Hint::Idempotent, self.idempotent),
            (Hint::OpenWorld, self.open_world),
        ];
        let claims = given
            .into_iter()
            .filter_map(|(hint, value)| Some((hint, value?)));
        hints.narrow(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_overrides_only_narrow() {
        let worst = Hints::default();
        let ro = Hints::read_only().open_world(false);
        let o = |read_only, destructive, idempotent, open_world| HintOverrides {
            read_only,
            destructive,
            idempotent,
            open_world,
        };
        // Narrowing works.
        assert_eq!(o(Some(true), None, None, Some(false)).narrow(worst), Ok(ro));
        let narrowed = o(None, Some(false), None, Some(false))
            .narrow(worst)
            .unwrap();
        assert!(
            !narrowed.is_destructive() && !narrowed.is_open_world() && !narrowed.is_read_only()
        );
        // Repeating the tool's own value is fine.
        assert_eq!(
            o(Some(true), Some(false), Some(true), Some(false)).narrow(ro),
            Ok(ro)
        );
        // Widening is refused, naming the key.
        for (overrides, hint, value, key) in [
            (
                o(Some(false), None, None, None),
                Hint::ReadOnly,
                false,
                "read_only = false",
            ),
            (
                o(None, Some(true), None, None),
                Hint::Destructive,
                true,
                "destructive = true",
            ),
            (
                o(None, None, None, Some(true)),
                Hint::OpenWorld,
                true,
                "open_world = true",
            ),
        ] {
            let error = overrides.narrow(ro).unwrap_err();
            assert_eq!(
                error,
                NarrowError::Widens {
                    hint,
                    value,
                    bound: ro
                }
            );
            // The person reads the key as written in piton.toml.
            assert!(error.to_string().contains(key), "{error}");
        }
        assert_eq!(
            o(None, None, Some(true), None).narrow(worst),
            Err(NarrowError::Widens {
                hint: Hint::Idempotent,
                value: true,
                bound: worst
            })
        );
        assert_eq!(
            o(None, None, Some(false), None).narrow(ro),
            Err(NarrowError::Contradicts {
                hint: Hint::Idempotent,
                value: false
            })
        );
    }
}
