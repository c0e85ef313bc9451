//! Getting tools: `piton add`, `piton remove`, `piton list --sources` and `piton
//! publish`, against a real OCI registry (Debian's docker-registry, distribution 2.8,
//! started here on loopback with its storage in a temp folder), against ORAS's Python
//! client, and against a small server of this file that answers each bad way a
//! registry or URL can; and piton.lock holding the plugins folder to its digests.
//!
//! docker-registry (and apache2-utils, whose `htpasswd` makes a login for it) is in
//! tests/packages.txt: a missing one fails the registry tests, unless
//! `PITON_SKIP=docker-registry` asks to skip them.

mod at_load;
mod bad;
mod bad_url;
mod before_code;
mod interop;
mod keyless;
mod levels;
mod lock;
mod login;
mod registry;
mod signed;
mod updates;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use crate::support::{Running, piton, run};

/// `sha256:HEX` of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// `piton ARGS --plugins folder`, run to its end.
pub(crate) fn piton_in(folder: &Path, args: &[&str]) -> Output {
    run(piton().args(args).arg("--plugins").arg(folder))
}

/// What is in `folder`, by name.
pub(crate) fn files_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("the folder reads")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// Debian's docker-registry on a free loopback port with its storage in a temp
/// folder; killed when dropped.
pub(crate) struct Registry {
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    _running: Running,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts one, or `None` when docker-registry is missing and `PITON_SKIP` names
    /// it (else the test fails, saying how to install it).
    pub(crate) fn start() -> Option<Self> {
        Self::start_with(None)
    }

    /// [`Registry::start`], with `login` (user, password) the only account, asked
    /// for with HTTP Basic auth (an htpasswd file made by Apache's `htpasswd`).
    pub(crate) fn start_with(login: Option<(&str, &str)>) -> Option<Self> {
        if !piton_tests::requirements::require("docker-registry") {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.yml");
        let storage = dir.path().join("storage");
        let auth = match login {
            None => String::new(),
            Some((user, password)) => {
                let file = dir.path().join("htpasswd");
                let out = run(Command::new("htpasswd")
                    .args(["-B", "-b", "-c"])
                    .arg(&file)
                    .args([user, password]));
                assert!(out.status.success(), "htpasswd: {out:?}");
                format!(
                    "auth:\n  htpasswd:\n    realm: piton-test\n    path: {}\n",
                    file.display()
                )
            }
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {}
  delete:
    enabled: true
{auth}http:
  addr: 127.0.0.1:0
",
                storage.display()
            ),
        )
        .expect("write the registry's config");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("docker-registry starts");
        let running = Running::new(child);
        // It logs the address it listens on: msg="listening on 127.0.0.1:PORT".
        let line = running.stderr.wait_for("listening on ");
        let addr = line
            .split_once("listening on ")
            .and_then(|(_, rest)| rest.split(['"', ' ']).next())
            .unwrap_or_else(|| panic!("no address in {line}"))
            .to_owned();
        Some(Self {
            addr,
            _running: running,
            _dir: dir,
        })
    }
}

/// One answer of a [`BadServer`].
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Sent with no Content-Length: the body ends when the connection closes.
    pub(crate) no_length: bool,
}

impl Answer {
    pub(crate) fn ok(content_type: &str, body: Vec<u8>) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
            no_length: false,
        }
    }

    /// An empty answer with `status`.
    pub(crate) fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            no_length: false,
        }
    }

    /// A redirect (`status`, such as 302) to `location`.
    pub(crate) fn redirect(status: u16, location: &str) -> Self {
        Self::status(status).header("Location", location)
    }

    /// This answer with no Content-Length: its size is known only once it is read.
    pub(crate) fn without_length(mut self) -> Self {
        self.no_length = true;
        self
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A small HTTP/1.1 server answering each `METHOD PATH` from a fixed table (the
/// path with its query, else without it; a 404 for anything else), one connection
/// at a time: a registry or URL that answers badly. It keeps each request it was
/// sent ([`BadServer::seen`]). Stops when dropped.
pub(crate) struct BadServer {
    pub(crate) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    routes: Arc<Mutex<BTreeMap<String, Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A request a [`BadServer`] was sent: `METHOD PATH` and its headers.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) route: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl Seen {
    /// The value of its header `name`, if it was sent one.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl BadServer {
    /// Binds a free loopback port, then serves the answers `routes` gives for it.
    pub(crate) fn start(routes: impl FnOnce(SocketAddr) -> BTreeMap<String, Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().expect("its address");
        let routes = Arc::new(Mutex::new(routes(addr)));
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stopped, served, log) = (stop.clone(), routes.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let routes = served.lock().expect("the routes").clone();
                    answer(stream, &routes, &log);
                }
            }
        });
        Self {
            addr,
            stop,
            routes,
            seen,
        }
    }

    /// Each request it was sent so far, in order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("the log").clone()
    }

    /// From now on, answers `route` (`METHOD PATH`) with `answer`.
    pub(crate) fn set(&self, route: &str, answer: Answer) {
        let mut routes = self.routes.lock().expect("the routes");
        routes.insert(route.to_owned(), answer);
    }
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Reads one request from `stream`, logs it in `log` (before answering, so that a
/// client done with its answer finds it there), and writes the answer `routes`
/// has for it.
fn answer(mut stream: TcpStream, routes: &BTreeMap<String, Answer>, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("the stream clones"));
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut length = 0_usize;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let _ = reader
        .by_ref()
        .take(length as u64)
        .read_to_end(&mut Vec::new());
    let mut words = first.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let bare = path.split('?').next().unwrap_or(path);
    let lookup = |method: &str| {
        routes
            .get(&format!("{method} {path}"))
            .or_else(|| routes.get(&format!("{method} {bare}")))
    };
    let found = lookup(method).or_else(|| (method == "HEAD").then(|| lookup("GET")).flatten());
    log.lock().expect("the log").push(Seen {
        route: format!("{method} {path}"),
        headers,
    });
    let not_found = Answer {
        body: b"not here".to_vec(),
        ..Answer::status(404)
    };
    let answer = found.unwrap_or(&not_found);
    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", answer.status);
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !answer.no_length {
        head.push_str(&format!("Content-Length: {}\r\n", answer.body.len()));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = stream.write_all(&answer.body);
    }
    let _ = stream.flush();
}

/// The media types of the CNCF Wasm OCI artifact layout.
pub(crate) const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const CONFIG_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub(crate) const LAYER_TYPE: &str = "application/wasm";

/// A manifest of `media_type` with one layer of `layer_type`, digest `layer_digest`
/// and `size`.
pub(crate) fn manifest(
    media_type: &str,
    layer_type: &str,
    layer_digest: &str,
    size: usize,
) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {"mediaType": CONFIG_TYPE, "digest": digest(b"{}"), "size": 2},
        "layers": [{"mediaType": layer_type, "digest": layer_digest, "size": size}],
    }))
    .expect("json")
}

/// A registry's routes serving `manifest` as `repo:tag` (HEAD and GET by tag and by
/// digest), its layer's bytes at `layer_digest` from `layer`, and the `/v2/` check.
pub(crate) fn registry_routes(
    repo: &str,
    tag: &str,
    manifest: &[u8],
    layer_digest: &str,
    layer: Answer,
) -> BTreeMap<String, Answer> {
    let manifest_digest = digest(manifest);
    let served = Answer::ok(MANIFEST_TYPE, manifest.to_vec())
        .header("Docker-Content-Digest", &manifest_digest);
    BTreeMap::from([
        (
            "GET /v2/".to_owned(),
            Answer::ok("application/json", b"{}".to_vec()),
        ),
        (format!("GET /v2/{repo}/manifests/{tag}"), served.clone()),
        (
            format!("GET /v2/{repo}/manifests/{manifest_digest}"),
            served,
        ),
        (format!("GET /v2/{repo}/blobs/{layer_digest}"), layer),
    ])
}
