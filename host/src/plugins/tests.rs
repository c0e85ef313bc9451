//! A hand-copied file whose signature verified at load loads only with the bytes
//! verified: one swapped between the trust check and the compile is refused, none
//! of it run.

use sha2::Digest as _;

use super::*;
use crate::supply::trust::{NamedKey, PrivateKey, Require, TrustPolicy, sign_blob};

/// A plugins folder with word-count signed by alice beside it (its bundle), and a
/// config trusting alice under `pinned`.
fn signed_folder() -> (tempfile::TempDir, PathBuf, Config) {
    let key = PrivateKey::from_pem(&PrivateKey::generate_p256_pem().expect("key")).expect("key");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("word_count.wasm");
    let bytes = bundled_bytes("word-count").expect("bundled");
    std::fs::write(&file, bytes).expect("write");
    let bundle = sign_blob(bytes, &key).expect("signs");
    std::fs::write(format!("{}.sigstore.json", file.display()), bundle).expect("write");
    let trust = TrustPolicy {
        require: Require::Pinned,
        keys: vec![NamedKey {
            name: "alice".into(),
            key: key.public_key().clone(),
        }],
        ..TrustPolicy::default()
    };
    let config = Config {
        trust,
        ..Config::default()
    };
    (dir, file, config)
}

fn runtime() -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig {
        cache_dir: None,
        ..RuntimeConfig::default()
    })
    .expect("a runtime")
}

#[tokio::test]
async fn a_file_swapped_after_its_signature_verified_is_refused_unrun() {
    let (_dir, file, config) = signed_folder();
    let files = vec![file.clone()];
    let judged = at_load::judge(&files, &Lock::default(), &config.trust);
    let verified = hex::encode(sha2::Sha256::digest(
        bundled_bytes("word-count").expect("bundled"),
    ));
    match judged.get("word_count.wasm") {
        Some(Judged::Verified(pin)) => assert!(pin.sha256.matches(&verified), "{pin:?}"),
        other => panic!("not verified: {other:?}"),
    }
    let runtime = runtime();
    let none = BTreeMap::new();
    let loaded = load_judged(&runtime, files.clone(), judged.clone(), &config, &none).await;
    assert!(
        loaded[0].is_ok(),
        "the file verified loads: {:?}",
        loaded[0]
    );

    // Swapped after the check (for a component that would load as well).
    std::fs::write(&file, bundled_bytes("read-file").expect("bundled")).expect("write");
    let loaded = load_judged(&runtime, files, judged, &config, &none).await;
    let Err(error) = &loaded[0] else {
        panic!("the file swapped after its signature verified loaded");
    };
    assert!(
        matches!(error.kind, LoadErrorKind::Changed { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("word_count.wasm.sigstore.json"), "{text}");
    assert!(text.contains(&verified), "{text}");
}
