//! An upstream server spoken to on 2026-07-28 (`protocol = "2026-07-28"` in its
//! section): the Python SDK server's `welcome` tool (tests/peers/py_server.py) asks
//! its question by answering `tools/call` with an `input_required` result, not with
//! `elicitation/create`. `piton serve` puts the question to the person who made the
//! call, with the server's name on it, whatever revision that client speaks, and
//! retries the upstream call with their answer and the server's `requestState`; a
//! client that cannot be asked gets the question declined, unseen.

use serde_json::json;

use super::upstream_asks::{
    QUESTION, asked, counted, each_target, folder_with, http_upstream, sorted, words,
};
use super::{HttpServer, Target, call_result, only_text, sdk_client_with};

const MODERN: &str = "protocol = \"2026-07-28\"\n";

fn welcome() -> (&'static str, serde_json::Value) {
    ("py__welcome", json!({}))
}

#[test]
fn a_2026_07_28_upstream_asks_with_input_required_and_the_answer_goes_back() {
    let dir = folder_with(MODERN);
    let server = each_target(&dir, |target, how| {
        for mode in ["legacy", "2026-07-28"] {
            let report = sdk_client_with(
                target,
                mode,
                &[welcome(), welcome(), welcome()],
                &[
                    "--elicit-content",
                    r#"{"name": "Ada"}"#,
                    "--elicit",
                    "decline",
                    "--elicit",
                    "cancel",
                ],
            );
            let texts: Vec<&str> = (0..3).map(|i| only_text(call_result(&report, i))).collect();
            // The server's own word that the call was made, and answered, on 2026-07-28.
            assert_eq!(
                texts,
                [
                    "welcome Ada (on 2026-07-28)",
                    "declined (on 2026-07-28)",
                    "cancelled (on 2026-07-28)"
                ],
                "{how} {mode}: {report:#}"
            );
            let asked = asked(&report);
            assert_eq!(asked.len(), 3, "{how} {mode}: {report:#}");
            for question in asked {
                assert_eq!(question["message"], QUESTION, "{how} {mode}");
                assert_eq!(
                    question["requested_schema"]["required"],
                    json!(["name"]),
                    "{how} {mode}"
                );
            }
        }
    });
    let each = [["accepted"], ["declined"], ["cancelled"]];
    let all: Vec<&[&str]> = each.iter().cycle().take(12).map(|r| &r[..]).collect();
    assert_eq!(sorted(dir.questions("py__welcome", 12)), words(&all));
    for outcome in ["accepted", "declined", "cancelled"] {
        assert_eq!(
            counted(&server.url, "py__welcome", outcome),
            2.0,
            "{outcome}"
        );
    }
}

#[test]
fn a_2026_07_28_upstream_question_is_declined_unseen_for_a_client_that_cannot_be_asked() {
    let dir = folder_with(MODERN);
    let server = each_target(&dir, |target, how| {
        for mode in ["legacy", "2026-07-28"] {
            // No elicitation declared.
            let report = sdk_client_with(target, mode, &[welcome()], &[]);
            assert_eq!(
                only_text(call_result(&report, 0)),
                "declined (on 2026-07-28)",
                "{how} {mode}: {report:#}"
            );
            assert!(asked(&report).is_empty(), "{how} {mode}");
        }
    });
    let one: &[&str] = &["not_passed_on"];
    assert_eq!(
        sorted(dir.questions("py__welcome", 4)),
        words(&[one, one, one, one])
    );
    assert_eq!(counted(&server.url, "py__welcome", "not_passed_on"), 2.0);
}

#[test]
fn a_2026_07_28_upstream_over_http_asks_with_input_required() {
    let (_upstream, dir) = http_upstream(MODERN);
    let server = HttpServer::start(dir.path());
    for mode in ["legacy", "2026-07-28"] {
        let report = sdk_client_with(
            Target::Url(&server.url),
            mode,
            &[welcome()],
            &["--elicit-content", r#"{"name": "Bob"}"#],
        );
        assert_eq!(
            only_text(call_result(&report, 0)),
            "welcome Bob (on 2026-07-28)",
            "{mode}: {report:#}\n{}",
            server.log()
        );
        assert_eq!(asked(&report).len(), 1, "{mode}: {report:#}");
        assert_eq!(asked(&report)[0]["message"], QUESTION, "{mode}");
    }
}
