//! The container image and the Kubernetes manifests in host/deploy, held to what the
//! `piton` binary accepts and serves: every flag they pass exists, the port, probe
//! paths, mounts and cache folder agree from the Dockerfile to the Service, the pod
//! may not write or escalate, and the Deployment's own command, run here on its
//! ConfigMap with its mounts as temporary folders, answers MCP where a client of the
//! Service and the kubelet's probes ask. Docker and a cluster are not needed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use piton_host::config::Config;
use serde_json::Value;

use crate::mcp_client::{body_text, http_request, initialize_params, request, sse_until};
use crate::support::{listening, piton, run, stdout};

/// host/deploy.
fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A manifest in host/deploy/k8s (one YAML document), as JSON.
fn manifest(name: &str) -> Value {
    let path = deploy().join("k8s").join(name);
    let documents = yaml_rust2::YamlLoader::load_from_str(&read(&path))
        .unwrap_or_else(|e| panic!("{name}: not YAML: {e}"));
    let [document] = documents.as_slice() else {
        panic!("{name}: one document, not {}", documents.len());
    };
    json_of(document)
}

/// A YAML value as JSON (keys are text in every manifest).
fn json_of(yaml: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::String(text) => Value::from(text.as_str()),
        Yaml::Integer(n) => Value::from(*n),
        Yaml::Real(text) => Value::from(text.parse::<f64>().expect("a number")),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(items) => items.iter().map(json_of).collect(),
        Yaml::Hash(map) => map
            .iter()
            .map(|(k, v)| (k.as_str().expect("a text key").to_owned(), json_of(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        Yaml::Null => Value::Null,
        Yaml::Alias(_) | Yaml::BadValue => panic!("unsupported YAML: {yaml:?}"),
    }
}

/// The one instruction of the Dockerfile's last stage (the image) named `keyword`,
/// its continuation lines joined: `None` if there is none.
fn image_instruction(keyword: &str) -> Option<String> {
    let text = read(&deploy().join("Dockerfile")).replace("\\\n", " ");
    let stage = text
        .rsplit_once("\nFROM ")
        .map(|(_, stage)| stage)
        .expect("a Dockerfile with stages");
    let found: Vec<&str> = stage
        .lines()
        .filter_map(|line| line.trim().strip_prefix(keyword))
        .filter_map(|rest| rest.strip_prefix(' '))
        .collect();
    assert!(found.len() <= 1, "{keyword} appears {} times", found.len());
    found.first().map(|rest| rest.trim().to_owned())
}

/// An exec-form (JSON array) instruction of the image.
fn image_exec(keyword: &str) -> Vec<String> {
    let text = image_instruction(keyword).unwrap_or_else(|| panic!("the image has no {keyword}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{keyword} is not a JSON array: {e}"))
}

/// The image's `ENV NAME=value ...` pairs.
fn image_env() -> BTreeMap<String, String> {
    image_instruction("ENV")
        .expect("the image sets ENV")
        .split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=').expect("ENV NAME=value");
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The value after `--flag` in `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).map(String::as_str)
}

/// The port of an `IP:PORT`.
fn port_of(addr: &str) -> u16 {
    let addr: std::net::SocketAddr = addr.parse().expect("--http IP:PORT");
    addr.port()
}

/// Every `--flag` in `args` is one that `piton SUBCOMMAND --help` lists.
fn assert_flags_exist(args: &[String], whose: &str) {
    let subcommand = args.first().expect("a subcommand");
    let help = stdout(&run(piton().args([subcommand.as_str(), "--help"])));
    for arg in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(&format!("{arg} ")),
            "{whose} passes {arg}, which `piton {subcommand} --help` does not list:\n{help}"
        );
    }
}

/// The image's command, from ENTRYPOINT and CMD.
fn image_command() -> Vec<String> {
    let mut command = image_exec("ENTRYPOINT");
    command.extend(image_exec("CMD"));
    command
}

/// The Deployment's piton container.
fn container(deployment: &Value) -> &Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    &containers[0]
}

/// Where the Deployment mounts the volume `name`, and whether read-only.
fn mount<'a>(container: &'a Value, name: &str) -> (&'a str, bool) {
    let mount = container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no mount of volume {name}"));
    (
        mount["mountPath"].as_str().expect("mountPath"),
        mount["readOnly"] == true,
    )
}

/// The Deployment's volume `name`.
fn volume<'a>(deployment: &'a Value, name: &str) -> &'a Value {
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"))
}

/// The namespace the tests deploy into, as the kubelet would give it.
const NAMESPACE: &str = "default";

/// The container's args as the kubelet passes them: each `$(NAME)` replaced by the
/// value of the container's variable `NAME`.
fn container_args(container: &Value) -> Vec<String> {
    let args: Vec<String> =
        serde_json::from_value(container["args"].clone()).expect("args: a list of strings");
    let env = container_env(container);
    args.into_iter()
        .map(|mut arg| {
            for (name, value) in &env {
                arg = arg.replace(&format!("$({name})"), value);
            }
            assert!(
                !arg.contains("$("),
                "{arg}: names a variable the container lacks"
            );
            arg
        })
        .collect()
}

/// The container's variables: a `value`, or the pod's namespace (`fieldRef`).
fn container_env(container: &Value) -> BTreeMap<String, String> {
    container["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| {
            let name = e["name"].as_str().expect("env name");
            let value = match e["value"].as_str() {
                Some(value) => value,
                None => {
                    let field = &e["valueFrom"]["fieldRef"]["fieldPath"];
                    assert_eq!(
                        field, "metadata.namespace",
                        "{name}: a value or the namespace"
                    );
                    NAMESPACE
                }
            };
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The args without their `--allow-host NAME` pairs, and those names.
fn split_allowed_hosts(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut rest = Vec::new();
    let mut allowed = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--allow-host" {
            allowed.push(args.next().expect("--allow-host NAME").clone());
        } else {
            rest.push(arg.clone());
        }
    }
    (rest, allowed)
}

#[test]
fn the_image_runs_piton_serve_on_its_port_as_a_numeric_non_root_user() {
    let command = image_command();
    assert_eq!(command[..2], ["piton", "serve"], "{command:?}");
    assert_flags_exist(&command[1..], "the Dockerfile's CMD");
    let http = flag(&command, "--http").expect("CMD serves --http");
    assert!(
        http.starts_with("0.0.0.0:"),
        "reachable from outside: {http}"
    );
    let exposed: u16 = image_instruction("EXPOSE")
        .expect("EXPOSE")
        .parse()
        .expect("one port");
    assert_eq!(port_of(http), exposed);
    let user = image_instruction("USER").expect("USER");
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|u| u.parse().ok())
        .unwrap_or_else(|| panic!("USER {user}: numeric, so runAsNonRoot can check it"));
    assert_ne!(uid, 0, "not root");
    let binary = image_instruction("COPY --from=build").expect("the binary from the build stage");
    assert!(
        binary.ends_with(" /usr/local/bin/piton"),
        "on PATH: {binary}"
    );
    // The image's piton.toml loads, and the variables it sets are the ones piton reads.
    let config = Config::load(&deploy().join("piton.toml"));
    assert!(config.is_ok(), "host/deploy/piton.toml: {config:?}");
    let env = image_env();
    assert_eq!(
        env["PITON_PLUGINS"],
        flag(&command, "--plugins").expect("--plugins")
    );
    assert_eq!(
        env["PITON_CONFIG"],
        flag(&command, "--config").expect("--config")
    );
    let volumes: Vec<String> = image_exec("VOLUME");
    assert_eq!(
        volumes,
        [env["PITON_CACHE_DIR"].clone()],
        "the cache is the volume"
    );
}

#[test]
fn the_deployment_serves_what_the_image_runs_on_the_service_port_and_probes_it() {
    let deployment = manifest("deployment.yaml");
    let container = container(&deployment);
    let args = container_args(container);
    assert_flags_exist(&args, "deployment.yaml");
    // The image's own command, spelled out, and the names of the Service.
    let (command, allowed) = split_allowed_hosts(&args);
    assert_eq!(command, image_command()[1..]);
    let service_names = ["", ".default", ".default.svc", ".default.svc.cluster.local"]
        .map(|suffix| format!("piton{suffix}"));
    assert_eq!(allowed, service_names, "clients name the Service");
    let port = port_of(flag(&args, "--http").expect("--http"));
    let ports = container["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["containerPort"], port);
    let port_name = ports[0]["name"].as_str().expect("a named port");
    assert!(
        deployment["spec"]["replicas"].as_u64() >= Some(2),
        "replicas"
    );

    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert!(get["port"] == port_name || get["port"] == port, "{probe}");
        assert!(
            get["host"].is_null(),
            "{probe}: the kubelet sends Host: POD-IP:PORT"
        );
    }

    // The Service's port is piton's own: piton answers only a Host with its port.
    let service = manifest("service.yaml");
    let service_ports = service["spec"]["ports"].as_array().expect("ports");
    assert_eq!(service_ports.len(), 1);
    assert_eq!(
        service_ports[0]["port"], port,
        "Service port = container port"
    );
    assert!(service_ports[0]["targetPort"] == port_name || service_ports[0]["targetPort"] == port);
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["template"]["metadata"]["labels"]
    );
    // A 2025-11-25 session stays on its replica as long as piton keeps it idle.
    let session = flag(&args, "--session-timeout").unwrap_or("5m");
    assert_eq!(session, "5m", "the affinity below assumes serve's default");
    assert_eq!(service["spec"]["sessionAffinity"], "ClientIP");
    assert_eq!(
        service["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        300
    );
}

#[test]
fn the_pod_runs_non_root_on_a_read_only_root_with_its_mounts_where_piton_looks() {
    let deployment = manifest("deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = container(&deployment);
    let args = container_args(container);
    let sc = &container["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let user = image_instruction("USER").expect("USER");
    assert_eq!(
        pod["securityContext"]["runAsUser"].to_string(),
        user.split(':').next().expect("a uid"),
        "the image's user"
    );
    assert_eq!(pod["automountServiceAccountToken"], false);
    for what in ["cpu", "memory"] {
        assert!(
            container["resources"]["limits"][what].is_string(),
            "a {what} limit"
        );
        assert!(
            container["resources"]["requests"][what].is_string(),
            "a {what} request"
        );
    }

    // Plugins and piton.toml: read-only mounts where the flags point.
    let (plugins, read_only) = mount(container, "plugins");
    assert!(read_only, "the plugins folder is mounted read-only");
    assert_eq!(Some(plugins), flag(&args, "--plugins"));
    let (config_dir, read_only) = mount(container, "config");
    assert!(read_only);
    let config_file = flag(&args, "--config").expect("--config");
    let key = Path::new(config_file)
        .strip_prefix(config_dir)
        .expect("--config is in the config mount")
        .to_str()
        .expect("a key");
    let config_map = manifest("configmap.yaml");
    assert_eq!(
        volume(&deployment, "config")["configMap"]["name"],
        config_map["metadata"]["name"]
    );
    let toml = config_map["data"][key]
        .as_str()
        .expect("the ConfigMap holds piton.toml");
    let file = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(file.path(), toml).expect("write");
    let config = Config::load(file.path());
    assert!(config.is_ok(), "configmap.yaml's piton.toml: {config:?}");
    let claim = &volume(&deployment, "plugins")["persistentVolumeClaim"];
    assert_eq!(claim["readOnly"], true);
    assert_eq!(
        claim["claimName"],
        manifest("plugins-pvc.yaml")["metadata"]["name"]
    );

    // The compile cache, the one place piton writes: a folder piton makes, private, in
    // an emptyDir (which every user can write, so not the emptyDir itself).
    let (volume_at, read_only) = mount(container, "cache");
    assert!(!read_only);
    assert!(volume(&deployment, "cache")["emptyDir"].is_object());
    let cache = container_env(container)["PITON_CACHE_DIR"].clone();
    assert_eq!(Path::new(&cache).parent(), Some(Path::new(volume_at)));
    assert_eq!(image_env()["PITON_CACHE_DIR"], cache);

    // SIGTERM comes after preStop; piton then has its shutdown grace to finish.
    let pre_stop: Vec<String> =
        serde_json::from_value(container["lifecycle"]["preStop"]["exec"]["command"].clone())
            .expect("preStop runs a command");
    assert_eq!(pre_stop[0], "sleep");
    let pre_stop: u64 = pre_stop[1].parse().expect("seconds");
    let grace = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("a grace period");
    // The grace for calls in flight, then the time their answers get to be written.
    let piton = piton_host::serve::DEFAULT_GRACE + piton_host::serve::SHUTDOWN_FLUSH;
    assert!(
        grace > pre_stop + piton.as_secs(),
        "terminationGracePeriodSeconds {grace} leaves piton less than its {piton:?} after \
         preStop's {pre_stop} s"
    );
}

#[test]
fn kustomization_lists_every_manifest() {
    let listed: Vec<String> =
        serde_json::from_value(manifest("kustomization.yaml")["resources"].clone())
            .expect("resources");
    let mut files: Vec<String> = std::fs::read_dir(deploy().join("k8s"))
        .expect("host/deploy/k8s")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "kustomization.yaml")
        .collect();
    files.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, files);
}

/// The Deployment's command and environment, run here: its volumes are temporary
/// folders (the plugins one holding `word_count`, the config one the ConfigMap's
/// piton.toml) and its port 0, so the test can run anywhere.
fn run_the_deployment() -> (crate::support::Running, u16, tempfile::TempDir) {
    let deployment = manifest("deployment.yaml");
    let container = container(&deployment);
    let root = tempfile::tempdir().expect("temp dir");
    let at = |path: &str| root.path().join(path.trim_start_matches('/'));
    let (plugins, _) = mount(container, "plugins");
    std::fs::create_dir_all(at(plugins)).expect("plugins folder");
    std::fs::copy(
        piton_tests::plugins::WORD_COUNT,
        at(plugins).join("word_count.wasm"),
    )
    .expect("copy a plugin");
    let (config_dir, _) = mount(container, "config");
    std::fs::create_dir_all(at(config_dir)).expect("config folder");
    let config_map = manifest("configmap.yaml");
    for (key, text) in config_map["data"].as_object().expect("data") {
        std::fs::write(at(config_dir).join(key), text.as_str().expect("text")).expect("write");
    }
    // kubelet makes an emptyDir writable by every user (0777).
    let (cache_volume, _) = mount(container, "cache");
    std::fs::create_dir_all(at(cache_volume)).expect("cache volume");
    std::fs::set_permissions(
        at(cache_volume),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let mut command: Command = piton();
    for arg in container_args(container) {
        if arg.starts_with('/') {
            command.arg(at(&arg));
        } else if let Some(ip) = arg.strip_suffix(":8080") {
            command.arg(format!("{ip}:0"));
        } else {
            command.arg(arg);
        }
    }
    for (name, value) in container_env(container) {
        if name.starts_with("PITON_") {
            assert!(value.starts_with('/'), "{name}: a path in the pod");
            command.env(name, at(&value));
        }
    }
    let (running, addr) = listening(command);
    let cache = &container_env(container)["PITON_CACHE_DIR"];
    let count = || {
        std::fs::read_dir(at(cache))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                    .count()
            })
            .unwrap_or(0)
    };
    // `serve` answers on baseline code at once and compiles the optimised code
    // into the cache in the background: it lands there without a call.
    let waited = std::time::Instant::now();
    while count() == 0 && waited.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let cached = count();
    assert_eq!(
        cached,
        1,
        "the plugin compiled into the emptyDir: {}",
        running.stderr.text()
    );
    (running, addr.port(), root)
}

#[tokio::test]
async fn the_deployment_command_answers_a_client_of_the_service_by_its_ip_or_names() {
    let (_piton, port, _root) = run_the_deployment();
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let message = request(0, "initialize", initialize_params()).to_string();
    // What a client of the Service sends: the cluster IP or a name of the Service, and
    // the Service port.
    for host in [
        "10.96.0.12",
        "piton",
        "piton.default",
        "piton.default.svc",
        "piton.default.svc.cluster.local",
    ] {
        let host = format!("{host}:{port}");
        let mut answer = http_request(
            local,
            "POST",
            "/mcp",
            &[
                ("host", host.as_str()),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            &message,
        )
        .await;
        assert_eq!(answer.status(), 200, "Host: {host}");
        let init = sse_until(&mut answer, |m| m["id"] == 0).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "piton", "{init}");
    }
    // Any other name is refused (DNS rebinding): another namespace's, a web page's.
    for host in ["piton.other.svc.cluster.local", "attacker.example"] {
        let host = format!("{host}:{port}");
        let refused =
            http_request(local, "POST", "/mcp", &[("host", host.as_str())], &message).await;
        assert_eq!(refused.status(), 403, "Host: {host}");
    }
}

#[tokio::test]
async fn the_deployment_command_answers_the_kubelets_probes() {
    let (_piton, port, _root) = run_the_deployment();
    let deployment = manifest("deployment.yaml");
    let container = container(&deployment);
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // The kubelet connects to the pod's IP and names it in Host.
    let host = format!("10.244.1.7:{port}");
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        let path = container[probe]["httpGet"]["path"]
            .as_str()
            .expect("a path");
        let answer = http_request(local, "GET", path, &[("host", host.as_str())], "").await;
        let status = answer.status();
        let text = body_text(answer).await;
        assert_eq!(status, 200, "{probe} GET {path}: {text}");
    }
}
