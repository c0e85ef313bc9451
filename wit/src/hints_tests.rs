//! Tests of the hints and of the narrowing rule.

use super::*;

fn h(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> Hints {
    match Hints::new(read_only, destructive, idempotent, open_world) {
        Ok(hints) => hints,
        Err(error) => panic!("{error}"),
    }
}

fn parts(hints: Hints) -> [bool; 4] {
    [
        hints.is_read_only(),
        hints.is_destructive(),
        hints.is_idempotent(),
        hints.is_open_world(),
    ]
}

/// The ten valid hints.
fn all() -> Vec<Hints> {
    (0..16u8)
        .filter_map(|bits| {
            Hints::new(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0).ok()
        })
        .collect()
}

#[test]
fn default_is_the_worst_case() {
    assert_eq!(Hints::default(), Hints::worst());
    assert_eq!(parts(Hints::default()), [false, true, false, true]);
}

#[test]
fn read_only_rule() {
    assert!(Hints::new(true, false, true, true).is_ok());
    assert!(Hints::new(false, false, false, false).is_ok());
    let error = Hints::new(true, true, true, false).unwrap_err();
    assert_eq!(
        error.to_string(),
        "hints contradict each other: read_only requires destructive = false and idempotent = \
         true (got destructive = true, idempotent = true); drop read_only or fix the others"
    );
    assert!(Hints::new(true, false, false, false).is_err());
    assert_eq!(all().len(), 10);
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

#[test]
fn narrowing_table() {
    let ro = |open_world| Hints::read_only().open_world(open_world);
    // (call, tool, expected, widened)
    let cases = [
        // Narrower answers pass through.
        (ro(false), Hints::default(), ro(false), false),
        (
            h(false, false, false, true),
            Hints::default(),
            h(false, false, false, true),
            false,
        ),
        // Wider answers are clamped to the tool's.
        (Hints::default(), ro(false), ro(false), true),
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
        (ro(true), h(false, true, false, true), ro(true), false),
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
fn narrowing_never_widens_and_one_rule_answers_both_ways() {
    for call in all() {
        for tool in all() {
            let (narrowed, widened) = call.narrowed_by(tool);
            assert!(!narrowed.narrowed_by(tool).1, "{call:?} {tool:?}");
            assert!(!narrowed.narrowed_by(call).1, "{call:?} {tool:?}");
            assert_eq!(widened, narrowed != call, "{call:?} {tool:?}");
            // Claimed one by one, the same hints widen or not alike.
            match tool.narrow(call.claims()) {
                Ok(hints) => assert!(!widened && hints == call, "{call:?} {tool:?}"),
                Err(error) => assert!(
                    widened && matches!(error, NarrowError::Widens { .. }),
                    "{call:?} {tool:?}: {error}"
                ),
            }
        }
    }
}

#[test]
fn claims_only_narrow() {
    let worst = Hints::worst();
    let ro = Hints::read_only().open_world(false);
    let claim = |hint, value| [(hint, value)];
    // Narrowing works; a hint not claimed stays.
    assert_eq!(
        worst.narrow([(Hint::ReadOnly, true), (Hint::OpenWorld, false)]),
        Ok(ro)
    );
    assert_eq!(
        worst.narrow([(Hint::Destructive, false), (Hint::OpenWorld, false)]),
        Ok(h(false, false, false, false))
    );
    assert_eq!(worst.narrow([]), Ok(worst));
    // Repeating the tool's own value is fine.
    assert_eq!(ro.narrow(ro.claims()), Ok(ro));
    // Widening is refused, naming the claim.
    for (bound, hint, value) in [
        (ro, Hint::ReadOnly, false),
        (ro, Hint::Destructive, true),
        (ro, Hint::OpenWorld, true),
        (worst, Hint::Idempotent, true),
    ] {
        let error = bound.narrow(claim(hint, value)).unwrap_err();
        assert_eq!(error, NarrowError::Widens { hint, value, bound });
        assert!(
            error.to_string().starts_with(&format!(
                "{} = {value} would widen the tool's hints (",
                hint.name()
            )),
            "{error}"
        );
    }
    assert_eq!(
        worst.narrow(claim(Hint::OpenWorld, true)),
        Ok(worst),
        "the worst case has nothing wider"
    );
    // read_only makes a call idempotent: claiming both is no widening.
    assert_eq!(
        worst.narrow([(Hint::ReadOnly, true), (Hint::Idempotent, true)]),
        Ok(Hints::read_only())
    );
    // A claim that contradicts read_only is refused.
    assert_eq!(
        ro.narrow(claim(Hint::Idempotent, false))
            .unwrap_err()
            .to_string(),
        "idempotent = false contradicts read_only: a read-only tool is idempotent"
    );
    assert_eq!(
        worst
            .narrow([(Hint::ReadOnly, true), (Hint::Destructive, true)])
            .unwrap_err()
            .to_string(),
        "destructive = true contradicts read_only: a read-only tool is not destructive"
    );
}

#[test]
fn display_names_the_true_hints() {
    assert_eq!(
        Hints::read_only().open_world(false).to_string(),
        "read_only, idempotent, closed_world"
    );
    assert_eq!(Hints::default().to_string(), "destructive, open_world");
    assert_eq!(
        NarrowError::Widens {
            hint: Hint::OpenWorld,
            value: true,
            bound: Hints::read_only().open_world(false),
        }
        .to_string(),
        "open_world = true would widen the tool's hints (read_only, idempotent, closed_world); \
         piton.toml can only narrow them"
    );
}
