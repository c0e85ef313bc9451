//! Key-based signatures: made here and by cosign (the fixtures), over files and OCI
//! manifests, and each way one is refused.

use super::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/sigstore");

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{path}")).expect("fixture")
}

fn new_key() -> PrivateKey {
    PrivateKey::from_pem(&PrivateKey::generate_p256_pem().expect("key")).expect("key")
}

fn named(name: &str, key: &PrivateKey) -> NamedKey {
    NamedKey {
        name: name.into(),
        key: key.public_key().clone(),
    }
}

fn signed_by(keys: Vec<NamedKey>) -> TrustPolicy {
    TrustPolicy {
        require: Require::Signed,
        keys,
        ..TrustPolicy::default()
    }
}

fn bundle(bytes: &[u8], key: &PrivateKey) -> Vec<SignatureMaterial> {
    vec![SignatureMaterial::Bundle(
        sign_blob(bytes, key).expect("signs").into_bytes(),
    )]
}

#[test]
fn a_signed_file_verifies_and_names_its_signer() {
    for key in [
        new_key(),
        PrivateKey::from_pem(&PrivateKey::generate_ed25519_pem().expect("key")).expect("key"),
    ] {
        let policy = signed_by(vec![named("alice", &key)]);
        let wasm = b"\0asm component";
        let verified = verify(
            &policy,
            "./a.wasm",
            Artifact::File(wasm),
            &bundle(wasm, &key),
        )
        .expect("verifies");
        assert_eq!(
            verified.signer.expect("signed").to_string(),
            format!("key alice {}", key.public_key().fingerprint())
        );
    }
}

#[test]
fn the_signature_of_another_file_is_refused() {
    let key = new_key();
    let policy = signed_by(vec![named("alice", &key)]);
    let err = verify(
        &policy,
        "./a.wasm",
        Artifact::File(b"new bytes"),
        &bundle(b"old bytes", &key),
    )
    .expect_err("another digest");
    let text = err.to_string();
    assert!(text.starts_with("./a.wasm: key alice (SHA256:"), "{text}");
    assert!(text.contains(", over another digest (sha256:"), "{text}");
    assert!(text.contains("expected alice (SHA256:"), "{text}");
}

#[test]
fn an_unsigned_file_is_refused_under_signed_and_taken_under_pinned() {
    let key = new_key();
    let policy = signed_by(vec![named("alice", &key)]);
    let err = verify(&policy, "./a.wasm", Artifact::File(b"x"), &[]).expect_err("unsigned");
    assert_eq!(
        err.to_string(),
        format!(
            "./a.wasm: not signed, and piton.toml's [trust] requires a signature by alice ({})",
            key.public_key().fingerprint()
        )
    );
    let pinned = TrustPolicy {
        require: Require::Pinned,
        ..policy
    };
    assert_eq!(
        verify(&pinned, "./a.wasm", Artifact::File(b"x"), &[]),
        Ok(Verified { signer: None })
    );
}

#[test]
fn a_signature_by_another_key_is_refused_naming_both_keys() {
    let (alice, mallory) = (new_key(), new_key());
    let wasm = b"component";
    for require in [Require::Signed, Require::Pinned] {
        let policy = TrustPolicy {
            require,
            ..signed_by(vec![named("alice", &alice)])
        };
        let err = verify(
            &policy,
            "./a.wasm",
            Artifact::File(wasm),
            &bundle(wasm, &mallory),
        )
        .expect_err("another key");
        assert_eq!(
            err.to_string(),
            format!(
                "./a.wasm: signed by key {}, expected alice ({}){}",
                mallory.public_key().fingerprint(),
                alice.public_key().fingerprint(),
                if require == Require::Signed {
                    ""
                } else {
                    " (or no signature)"
                }
            )
        );
    }
}

#[test]
fn a_source_rule_narrows_the_keys_that_count() {
    let (alice, bob) = (new_key(), new_key());
    let policy = TrustPolicy {
        sources: vec![SourceRule {
            prefix: "oci://registry.example/team/".into(),
            require: Some(Require::Signed),
            keys: Some(vec!["alice".into()]),
            identities: None,
        }],
        ..signed_by(vec![named("alice", &alice), named("bob", &bob)])
    };
    let wasm = b"component";
    assert!(
        verify(
            &policy,
            "https://x/a.wasm",
            Artifact::File(wasm),
            &bundle(wasm, &bob)
        )
        .is_ok()
    );
    let err = verify(
        &policy,
        "oci://registry.example/team/a:1",
        Artifact::File(wasm),
        &bundle(wasm, &bob),
    )
    .expect_err("bob does not count here");
    assert!(err.to_string().contains("expected alice ("), "{err}");
}

#[test]
fn a_bundle_cosign_made_with_a_key_verifies_and_its_file_changed_does_not() {
    // The Sigstore conformance suite's managed-key bundle: ECDSA P-256, with a
    // transparency log entry (not checked for key-based bundles; its body must still
    // describe this signature).
    let key = PublicKey::from_pem(&String::from_utf8(fixture("managed-key/key.pub")).expect("pem"))
        .expect("cosign.pub");
    let policy = signed_by(vec![NamedKey {
        name: "conformance".into(),
        key,
    }]);
    let signatures = [SignatureMaterial::Bundle(fixture(
        "managed-key/bundle.sigstore.json",
    ))];
    let artifact = fixture("managed-key/artifact.txt");
    let verified =
        verify(&policy, "a.txt", Artifact::File(&artifact), &signatures).expect("verifies");
    assert!(
        verified
            .signer
            .expect("signer")
            .to_string()
            .starts_with("key conformance SHA256:4cb32c48")
    );
    let mut changed = artifact.clone();
    changed.push(b'!');
    assert!(verify(&policy, "a.txt", Artifact::File(&changed), &signatures).is_err());
}

#[test]
fn what_piton_signs_is_a_bundle_sigstore_reads_as_cosign_writes_it() {
    let key = new_key();
    let json = sign_blob(b"bytes", &key).expect("signs");
    let bundle = sigstore_verify::types::Bundle::from_json(&json).expect("a Sigstore bundle");
    assert_eq!(
        bundle.media_type.as_str(),
        "application/vnd.dev.sigstore.bundle.v0.3+json"
    );
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        value["messageSignature"]["messageDigest"]["algorithm"],
        "SHA2_256"
    );
    assert_eq!(
        value["verificationMaterial"]["publicKey"]["hint"],
        key.public_key().fingerprint().hint()
    );
}

#[test]
fn hostile_bundles_are_refused_not_panics() {
    let key = new_key();
    let policy = signed_by(vec![named("alice", &key)]);
    let good = sign_blob(b"x", &key).expect("signs");
    let mut cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"{}".to_vec(),
        b"\xff\xfe".to_vec(),
        b"null".to_vec(),
        br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"!!"}},"messageSignature":{"signature":"AAAA"}}"#.to_vec(),
        br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"certificate":{"rawBytes":"MAA="}},"messageSignature":{"signature":"AAAA"}}"#.to_vec(),
        vec![b'['; 1 << 21],
    ];
    for cut in [1, good.len() / 2, good.len() - 2] {
        cases.push(good.as_bytes()[..cut].to_vec());
    }
    for json in cases {
        let signatures = [SignatureMaterial::Bundle(json)];
        assert!(verify(&policy, "a", Artifact::File(b"x"), &signatures).is_err());
    }
}

#[test]
fn an_oci_signature_verifies_for_its_manifest_and_repository_only() {
    let (alice, mallory) = (new_key(), new_key());
    let policy = signed_by(vec![named("alice", &alice)]);
    let digest = Digest::of(b"manifest");
    let repository = "registry.example/team/tool";
    let signature = cosign_oci::sign_manifest(repository, &digest, &alice).expect("signs");
    // Byte for byte the payload cosign signs.
    assert_eq!(
        String::from_utf8(signature.payload.clone()).expect("utf-8"),
        format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{repository}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
        )
    );
    let oci = |repository, digest| Artifact::OciManifest { repository, digest };
    let signatures = [SignatureMaterial::Simple(signature.clone())];
    let source = "oci://registry.example/team/tool:1";
    let verified =
        verify(&policy, source, oci(repository, &digest), &signatures).expect("verifies");
    assert!(verified.signer.is_some());
    let other = Digest::of(b"other manifest");
    let err = verify(&policy, source, oci(repository, &other), &signatures).expect_err("digest");
    assert!(
        err.to_string()
            .contains(&format!("over another digest, {digest}")),
        "{err}"
    );
    let err = verify(
        &policy,
        source,
        oci("registry.example/x", &digest),
        &signatures,
    )
    .expect_err("repo");
    assert!(err.to_string().contains("for another repository"), "{err}");
    let forged = cosign_oci::sign_manifest(repository, &digest, &mallory).expect("signs");
    let err = verify(
        &policy,
        source,
        oci(repository, &digest),
        &[SignatureMaterial::Simple(forged)],
    )
    .expect_err("another key");
    assert!(
        err.to_string()
            .contains("a signature by none of the keys, expected alice"),
        "{err}"
    );
}

#[test]
fn the_signature_manifest_round_trips_and_its_payload_must_match_its_digest() {
    let key = new_key();
    let digest = Digest::of(b"manifest");
    let signature = cosign_oci::sign_manifest("r.example/a", &digest, &key).expect("signs");
    assert_eq!(
        cosign_oci::signature_tag(&digest),
        format!("sha256-{}.sig", digest.hex())
    );
    let image = cosign_oci::encode_manifest(std::slice::from_ref(&signature));
    let layers = cosign_oci::decode_manifest(&image.manifest).expect("decodes");
    assert_eq!(layers.len(), 1);
    assert_eq!(
        layers[0].with_payload(image.layers[0].clone()),
        Ok(signature)
    );
    assert!(layers[0].with_payload(b"another payload".to_vec()).is_err());
    let manifest: serde_json::Value = serde_json::from_slice(&image.manifest).expect("json");
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    assert_eq!(
        manifest["config"]["digest"],
        Digest::of(&image.config).to_string()
    );
    for bad in [&b""[..], b"{}", b"[]", br#"{"schemaVersion":2,"config":{"mediaType":"x","size":1,"digest":"sha256:00"},"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","size":1,"digest":"nope","annotations":{"dev.cosignproject.cosign/signature":"x"}}]}"#] {
        assert!(cosign_oci::decode_manifest(bad).is_err());
    }
    let huge = String::from_utf8(image.manifest).expect("utf-8").replace(
        &format!("\"size\":{}", image.layers[0].len()),
        "\"size\":99999999999",
    );
    assert!(matches!(
        cosign_oci::decode_manifest(huge.as_bytes()),
        Err(cosign_oci::ManifestError::TooLarge(_))
    ));
}
