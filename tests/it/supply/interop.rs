//! Another OCI client, ORAS (its Python package, pinned in tests/peers): what it
//! pushes in the CNCF Wasm layout, piton adds; what piton publishes, it pulls, byte
//! for byte.

use std::process::Command;

use piton_tests::plugins;

use super::{CONFIG_TYPE, LAYER_TYPE, Registry, files_in, piton_in};
use crate::peers::peers;
use crate::support::{piton, run, stderr, stdout};

/// ORAS pushes `wasm` to `target` as one `application/wasm` layer with a Wasm config.
const PUSH: &str = r#"
import sys, oras.client
host, target, wasm, config, layer_type, config_type = sys.argv[1:7]
client = oras.client.OrasClient(hostname=host, insecure=True)
client.push(target=target, files=[f"{wasm}:{layer_type}"],
            manifest_config=f"{config}:{config_type}", disable_path_validation=True)
"#;

/// ORAS pulls `target` into the folder `outdir`.
const PULL: &str = r#"
import sys, oras.client
host, target, outdir = sys.argv[1:4]
client = oras.client.OrasClient(hostname=host, insecure=True)
client.pull(target=target, outdir=outdir)
"#;

fn oras(script: &str, args: &[&str]) {
    let out = run(Command::new(peers().python())
        .arg("-c")
        .arg(script)
        .args(args));
    assert!(
        out.status.success(),
        "oras failed: {}{}",
        stderr(&out),
        stdout(&out)
    );
}

#[test]
fn piton_adds_what_oras_pushes_and_oras_pulls_what_piton_publishes() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let host = registry.addr.as_str();
    let wasm = std::fs::read(plugins::WORD_COUNT).expect("word_count.wasm reads");
    let scratch = tempfile::tempdir().expect("temp dir");
    let config = scratch.path().join("config.json");
    std::fs::write(&config, br#"{"architecture":"wasm","os":"wasip2"}"#).expect("write");
    let pushed = format!("{host}/interop/by-oras:1");
    oras(
        PUSH,
        &[
            host,
            &pushed,
            plugins::WORD_COUNT,
            config.to_str().expect("utf-8"),
            LAYER_TYPE,
            CONFIG_TYPE,
        ],
    );
    let folder = tempfile::tempdir().expect("temp dir");
    let out = piton_in(folder.path(), &["add", &format!("oci://{pushed}")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(folder.path().join("by-oras.wasm")).expect("reads"),
        wasm
    );
    let out = piton_in(
        folder.path(),
        &["call", "word_count", r#"{"text":"one two"}"#],
    );
    assert_eq!(stdout(&out).trim(), "2", "{}", stderr(&out));

    let published = format!("{host}/interop/by-piton:1");
    let out = run(piton().args([
        "publish",
        plugins::WORD_COUNT,
        &format!("oci://{published}"),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let pulled = scratch.path().join("pulled");
    std::fs::create_dir(&pulled).expect("mkdir");
    oras(PULL, &[host, &published, pulled.to_str().expect("utf-8")]);
    // The layer's title names the file ORAS writes.
    assert_eq!(files_in(&pulled), ["word_count.wasm"]);
    assert_eq!(
        std::fs::read(pulled.join("word_count.wasm")).expect("reads"),
        wasm
    );
}
