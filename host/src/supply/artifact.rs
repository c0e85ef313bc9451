//! The CNCF Wasm OCI artifact layout: an OCI image manifest whose config has the
//! media type `application/vnd.wasm.config.v0+json` and whose one layer is the
//! component (`application/wasm`). What `wkg` and Wassette push and pull; piton
//! checks a pulled manifest against it and makes the manifest and config it pushes.

use std::collections::BTreeMap;

use oci_client::manifest::{OCI_IMAGE_INDEX_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use sha2::{Digest as _, Sha256};

use crate::supply::fetched::FetchProblem;

/// The config's media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer's media type: the component's bytes.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The manifest's media type.
pub const MANIFEST_MEDIA_TYPE: &str = oci_client::manifest::OCI_IMAGE_MEDIA_TYPE;
/// What a pull asks for: an OCI image manifest (an index is asked for too, to be
/// refused by name rather than answered with a 404).
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
                                   application/vnd.oci.image.index.v1+json;q=0.5";
/// The most bytes a manifest may have (what registries accept, per the distribution
/// spec's guidance).
pub const MAX_MANIFEST: u64 = 4 << 20;

/// The one component layer of the manifest `bytes` (answered with `content_type`),
/// checked to be the CNCF Wasm layout; else what it is instead.
pub fn component_layer(
    bytes: &[u8],
    content_type: Option<&str>,
) -> Result<OciDescriptor, FetchProblem> {
    let wrong = |found: &str| {
        FetchProblem::Manifest(format!(
            "the manifest's media type is {found}, not {MANIFEST_MEDIA_TYPE}: this is not a \
             Wasm component artifact (push one with `piton publish`, `wkg oci push` or \
             `oras push` with a {LAYER_MEDIA_TYPE} layer)"
        ))
    };
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| FetchProblem::Manifest(format!("the manifest is not JSON: {e}")))?;
    let declared = value.get("mediaType").and_then(serde_json::Value::as_str);
    let content_type = content_type.map(|t| t.split(';').next().unwrap_or_default().trim());
    let media_type = declared.or(content_type).unwrap_or("none");
    if media_type == OCI_IMAGE_INDEX_MEDIA_TYPE || value.get("manifests").is_some() {
        return Err(FetchProblem::Manifest(format!(
            "the reference names an image index ({media_type}), a list of manifests, not one \
             Wasm component; name the component's own manifest by its digest"
        )));
    }
    if media_type != MANIFEST_MEDIA_TYPE {
        return Err(wrong(media_type));
    }
    let manifest: OciImageManifest = serde_json::from_value(value)
        .map_err(|e| FetchProblem::Manifest(format!("the manifest does not parse: {e}")))?;
    let config_ok = manifest.config.media_type == CONFIG_MEDIA_TYPE
        || manifest.artifact_type.as_deref() == Some(CONFIG_MEDIA_TYPE);
    if !config_ok {
        return Err(FetchProblem::Manifest(format!(
            "the manifest's config has media type {}, not {CONFIG_MEDIA_TYPE}: this is not \
             a Wasm component artifact",
            one_line(&manifest.config.media_type)
        )));
    }
    let types: Vec<String> = manifest
        .layers
        .iter()
        .map(|layer| one_line(&layer.media_type))
        .collect();
    match <[OciDescriptor; 1]>::try_from(manifest.layers) {
        Ok([layer]) if layer.media_type == LAYER_MEDIA_TYPE => {
            crate::supply::reference::parse_digest(&layer.digest)
                .map_err(|e| FetchProblem::Manifest(format!("the layer's digest: {e}")))?;
            if layer.size < 0 {
                return Err(FetchProblem::Manifest(format!(
                    "the layer's size is {}",
                    layer.size
                )));
            }
            Ok(layer)
        }
        _ => Err(FetchProblem::Manifest(format!(
            "the manifest has {} layer(s) [{}]; a Wasm component artifact has exactly one, \
             of media type {LAYER_MEDIA_TYPE}",
            types.len(),
            types.join(", ")
        ))),
    }
}

/// `sha256:HEX` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The config JSON of the component `wasm`, per the CNCF spec: when it was made,
/// `wasm`/`wasip2`, the layer's digest, and the interfaces it imports and exports
/// (left out when the component cannot be decoded).
pub fn config_json(wasm: &[u8], created: &str, author: Option<&str>) -> Vec<u8> {
    let mut config = serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [digest_of(wasm)],
    });
    if let Some(author) = author {
        config["author"] = author.into();
    }
    if let Some((imports, exports)) = interfaces(wasm) {
        config["component"] = serde_json::json!({
            "imports": imports,
            "exports": exports,
            "target": null,
        });
    }
    serde_json::to_vec(&config).unwrap_or_default()
}

/// The manifest of a component layer and its config, as bytes (what is pushed and
/// what its digest is of).
/// `title` names the layer's file (`org.opencontainers.image.title`), as ORAS and
/// wkg name the file they pull.
pub fn manifest_json(wasm: &[u8], config: &[u8], created: &str, title: Option<&str>) -> Vec<u8> {
    let descriptor = |media_type: &str, bytes: &[u8]| OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest_of(bytes),
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    };
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config: descriptor(CONFIG_MEDIA_TYPE, config),
        layers: vec![OciDescriptor {
            annotations: title.map(|title| {
                BTreeMap::from([(
                    "org.opencontainers.image.title".to_owned(),
                    title.to_owned(),
                )])
            }),
            ..descriptor(LAYER_MEDIA_TYPE, wasm)
        }],
        subject: None,
        artifact_type: None,
        annotations: Some(BTreeMap::from([(
            "org.opencontainers.image.created".to_owned(),
            created.to_owned(),
        )])),
    };
    serde_json::to_vec(&manifest).unwrap_or_default()
}

/// The interfaces a component imports and exports, by their WIT names.
fn interfaces(wasm: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let wit_component::DecodedWasm::Component(resolve, world) = wit_component::decode(wasm).ok()?
    else {
        return None;
    };
    let world = resolve.worlds.get(world)?;
    let names = |items: &wit_parser::IndexMap<wit_parser::WorldKey, wit_parser::WorldItem>| {
        items
            .iter()
            .filter(|(_, item)| matches!(item, wit_parser::WorldItem::Interface { .. }))
            .map(|(key, _)| resolve.name_world_key(key))
            .collect()
    };
    Some((names(&world.imports), names(&world.exports)))
}

/// `text` cut to 80 characters.
fn one_line(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(media_type: Option<&str>, config: &str, layers: &[&str]) -> Vec<u8> {
        let layers: Vec<_> = layers
            .iter()
            .map(|t| serde_json::json!({"mediaType": t, "digest": digest_of(b"x"), "size": 1}))
            .collect();
        let mut value = serde_json::json!({
            "schemaVersion": 2,
            "config": {"mediaType": config, "digest": digest_of(b"{}"), "size": 2},
            "layers": layers,
        });
        if let Some(t) = media_type {
            value["mediaType"] = t.into();
        }
        serde_json::to_vec(&value).expect("json")
    }

    #[test]
    fn the_cncf_layout_gives_its_one_layer() {
        let bytes = manifest(
            Some(MANIFEST_MEDIA_TYPE),
            CONFIG_MEDIA_TYPE,
            &[LAYER_MEDIA_TYPE],
        );
        let layer = component_layer(&bytes, None).expect("the layout");
        assert_eq!(layer.size, 1);
        // The media type may come from the answer's Content-Type alone.
        let bytes = manifest(None, CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE]);
        assert!(
            component_layer(&bytes, Some("application/vnd.oci.image.manifest.v1+json")).is_ok()
        );
    }

    #[test]
    fn other_manifests_are_refused_by_what_they_are() {
        let refused = |bytes: &[u8], content_type| {
            component_layer(bytes, content_type)
                .expect_err("refused")
                .to_string()
        };
        let docker = "application/vnd.docker.distribution.manifest.v2+json";
        let text = refused(
            &manifest(Some(docker), CONFIG_MEDIA_TYPE, &[LAYER_MEDIA_TYPE]),
            None,
        );
        assert!(text.contains(&format!("media type is {docker}")), "{text}");
        let text = refused(
            &manifest(
                Some(MANIFEST_MEDIA_TYPE),
                "application/vnd.oci.image.config.v1+json",
                &[LAYER_MEDIA_TYPE],
            ),
            None,
        );
        assert!(text.contains("config has media type"), "{text}");
        let text = refused(
            &manifest(
                Some(MANIFEST_MEDIA_TYPE),
                CONFIG_MEDIA_TYPE,
                &[LAYER_MEDIA_TYPE, LAYER_MEDIA_TYPE],
            ),
            None,
        );
        assert!(text.contains("has 2 layer(s)"), "{text}");
        let tar = "application/vnd.oci.image.layer.v1.tar";
        let text = refused(
            &manifest(Some(MANIFEST_MEDIA_TYPE), CONFIG_MEDIA_TYPE, &[tar]),
            None,
        );
        assert!(text.contains(tar), "{text}");
        let index = serde_json::json!({"schemaVersion": 2, "mediaType": OCI_IMAGE_INDEX_MEDIA_TYPE, "manifests": []});
        let text = refused(&serde_json::to_vec(&index).expect("json"), None);
        assert!(text.contains("image index"), "{text}");
        assert!(refused(b"<html>", None).contains("not JSON"));
    }

    #[test]
    fn a_pushed_manifest_is_the_layout_it_checks() {
        let wasm = b"\0asm\x0d\0\x01\0";
        let config = config_json(wasm, "2026-12-02T00:00:00Z", None);
        let value: serde_json::Value = serde_json::from_slice(&config).expect("json");
        assert_eq!(value["os"], "wasip2");
        assert_eq!(value["layerDigests"][0], digest_of(wasm));
        let manifest = manifest_json(wasm, &config, "2026-12-02T00:00:00Z", Some("a.wasm"));
        let layer = component_layer(&manifest, None).expect("its own layout");
        assert_eq!(layer.digest, digest_of(wasm));
    }
}
